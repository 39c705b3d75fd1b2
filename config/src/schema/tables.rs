//! The field tables of Appendix A (RL) and A2 (SFT) of the prime-rl config reference at
//! commit 559b4477, plus the verifiers tables of §4.8 / Appendix C. One `static` per config
//! class; classes shared between paths (e.g. `TokenizerConfig`) appear once.

use super::Dv::{Bool as B, Float as F, Int as I, Null, Obj, Other, Req, Str as S};
use super::Ty::{
    Any, Bool, DictAny, DictAnyOrStr, DictFloat, DictOf, DictStr, Float, Int, IntOr, ListFloat,
    ListInt, ListLit, ListOf, ListStr, Lit, Path, PolicyOr, Renderer, Str, Union as U,
};
use super::{Field, Model, Special, Ty, Union};

const fn f(key: &'static str, ty: Ty, def: super::Dv) -> Field {
    Field::new(key, ty, def)
}
const fn m(name: &'static str, fields: &'static [Field]) -> Model {
    Model {
        name,
        fields,
        extra: false,
        special: Special::None,
    }
}
const fn open(name: &'static str, fields: &'static [Field]) -> Model {
    Model {
        name,
        fields,
        extra: true,
        special: Special::None,
    }
}
const fn sub(model: &'static Model) -> Ty {
    Ty::Model(model)
}

const DTYPES: &[&str] = &["bfloat16", "float32"];
const DEFAULT_MODEL: &str = "Qwen/Qwen3-0.6B";

// ---------------------------------------------------------------- shared small classes

static VLM: Model = m(
    "VLMConfig",
    &[
        f("vision_encoder_attr", Str, Req),
        f("language_model_attr", Str, Req),
        f("freeze_vision_encoder", Bool, B(true)),
    ],
);
static TOKENIZER: Model = m(
    "TokenizerConfig",
    &[
        f("name", Str, Null).null(),
        f("trust_remote_code", Bool, Null).null(),
        f("chat_template", Str, Null).null(),
    ],
);
static RESUME: Model = m(
    "ResumeConfig",
    &[
        f("step", Int, Null).null().ge(1.0),
        f("dir", Path, Null).null(),
    ],
);
static RUN: Model = m(
    "RunConfig",
    &[f("name", Str, Null).null(), f("dir", Str, Null).null()],
);
static GC: Model = m("GCConfig", &[f("interval", Int, I(50)).ge(1.0)]);
static HEARTBEAT: Model = m("HeartbeatConfig", &[f("url", Str, Req)]);
static FILE_MON: Model = m("FileMonitorConfig", &[f("path", Path, S("metrics.jsonl"))]);
static PRIME_MON: Model = m("PrimeMonitorConfig", &[f("name", Str, Null).null()]);
static WANDB: Model = m(
    "WandbMonitorConfig",
    &[
        f("project", Str, S("prime-rl")),
        f("entity", Str, Null).null(),
        f("name", Str, Null).null(),
        f("group", Str, Null).null(),
        f("tags", ListStr, Null).null(),
        f("offline", Bool, B(false)),
    ],
);
static LOG: Model = m(
    "LogConfig",
    &[
        f("level", Str, S("info")),
        f("vf_level", Str, S("info")),
        f("json_logging", Bool, B(false)),
        f("log_data", Bool, B(false)),
        f("interval", Float, F(10.0)).gt(0.0),
    ],
);
static TRAINER_LOG: Model = m(
    "TrainerLogConfig",
    &[
        f("level", Str, S("info")),
        f("vf_level", Str, S("info")),
        f("json_logging", Bool, B(false)),
        f("log_data", Bool, B(false)),
        f("interval", Float, F(10.0)).gt(0.0),
        f("ranks_filter", ListInt, Other),
    ],
);
static SLURM: Model = m(
    "SlurmConfig",
    &[
        f("job_name", Str, S("prime-rl")),
        f("project_dir", Path, S(".")),
        f("template_path", Path, Null).null(),
        f("partition", Str, S("cluster")),
        f("nodelist", Str, Null).null(),
        f("exclude", Str, Null).null(),
        f("account", Str, Null).null(),
        f("time", Str, Null).null(),
        f("pre_run_command", Str, Null).null(),
        f("cleanup_grace_period", Int, I(3600)).ge(0.0),
        f("shared_fs", Bool, B(true)),
    ],
);
static CLIENT: Model = m(
    "ClientConfig",
    &[
        f("wait_for_ready_timeout", Int, I(1800)),
        f("base_url", Str, S("http://localhost:8000/v1")),
        f("api_key_var", Str, S("VLLM_API_KEY")),
        f("headers", DictStr, Other),
        f("headers_from_env", DictStr, Other),
        f("extra_headers_from_state", DictStr, Other),
        f("skip_model_check", Bool, B(false)),
        f("admin_base_url", ListStr, Null).null(),
    ],
);
static FROZEN: Model = m(
    "FrozenModelConfig",
    &[
        f("wait_for_ready_timeout", Int, I(1800)),
        f("base_url", Str, S("http://localhost:8000/v1")),
        f("api_key_var", Str, S("VLLM_API_KEY")),
        f("headers", DictStr, Other),
        f("headers_from_env", DictStr, Other),
        f("extra_headers_from_state", DictStr, Other),
        f("skip_model_check", Bool, B(false)),
        f("admin_base_url", ListStr, Null).null(),
        f("name", Str, Req),
    ],
);
static CONCURRENCY: Model = m(
    "ConcurrencyConfig",
    &[
        f("initial_inflight", Int, Null).null().ge(1.0),
        f("min_inflight", Int, I(1)).ge(1.0),
        f("max_inflight", Int, I(1024)).null().ge(1.0),
    ],
);

// ---------------------------------------------------------------- trainer model

static COMPILE: Model = m("CompileConfig", &[f("fullgraph", Bool, B(false))]);
static AC: Model = m(
    "ActivationCheckpointConfig",
    &[
        f("mode", Lit(&["full", "selective"]), S("full")),
        f("freq", Int, I(1)).ge(1.0),
        f("targets", ListStr, Other),
    ],
);
static AC_OFFLOADING: Model = m(
    "ActivationOffloadingConfig",
    &[
        f("pin_memory", Bool, B(true)),
        f("max_inflight_activations", Int, I(5)).ge(1.0),
    ],
);
static FULL_OFFLOAD: Model = m(
    "OptimizerInBackwardOffloadConfig",
    &[
        f(
            "cpu_optimizer_backend",
            Lit(&["native", "torch"]),
            S("native"),
        ),
        f("numa_bind", Bool, B(true)),
    ],
);
static FP8: Model = m(
    "FP8Config",
    &[
        f("type", Lit(&["fp8"]), S("fp8")),
        f("enable_grouped_gemm", Bool, B(true)),
        f("ignore_patterns", ListStr, Other),
    ],
);
static MXFP8: Model = m(
    "MXFP8Config",
    &[
        f("type", Lit(&["mxfp8"]), S("mxfp8")),
        f(
            "recipe",
            Lit(&["mxfp8_rceil", "mxfp8_rceil_wgrad_with_hp"]),
            S("mxfp8_rceil"),
        ),
        f("enable_grouped_gemm", Bool, B(true)),
        f("enable_a2a", Bool, B(true)),
        f("ignore_patterns", ListStr, Other),
    ],
);
static QUANT: Union = Union {
    tag: "type",
    variants: &[("fp8", &FP8), ("mxfp8", &MXFP8)],
};
static INDEX_CACHE: Model = m(
    "IndexCacheConfig",
    &[
        f("topk_freq", Int, I(1)).ge(1.0),
        f("topk_pattern", Str, Null).null(),
    ],
);
static TRAINER_LORA: Model = m(
    "LoRAConfig",
    &[
        f("rank", Int, I(16)).ge(1.0),
        f("alpha", Float, F(32.0)).ge(0.0),
        f("dropout", Float, F(0.0)).ge(0.0).le(1.0),
        f("target_modules", ListStr, Other),
        f("modules_to_save", ListStr, Other),
    ],
);
static DEBUG_MODEL: Model = m(
    "DebugModelConfig",
    &[
        f("num_layers", Int, Null).null(),
        f("random_init", Bool, B(false)),
        f("force_balanced_routing", Bool, B(false)),
    ],
);
static TRAINER_MODEL: Model = m(
    "ModelConfig",
    &[
        f("name", Str, S(DEFAULT_MODEL)),
        f("trust_remote_code", Bool, B(false)),
        f("vlm", sub(&VLM), Null).null(),
        f("conversion_dir", Path, Null).null(),
        f("seq_len", Int, I(2048)),
        f(
            "attn",
            Lit(&[
                "flash_attention_2",
                "flash_attention_3",
                "flash_attention_4",
                "auto",
            ]),
            S("auto"),
        ),
        f("compile", sub(&COMPILE), Obj).null(),
        f("ac", sub(&AC), Obj).null(),
        f("ac_offloading", sub(&AC_OFFLOADING), Obj).null(),
        f("fsdp_cpu_offload", Bool, B(false)),
        f("optim_cpu_offload", Bool, B(true)),
        f("full_offload", Ty::BoolOrModel(&FULL_OFFLOAD), Null).null(),
        f("reshard_after_forward", Bool, B(true)),
        f("dp_replicate", Int, I(1)),
        f("ep", IntOr("auto"), S("auto")),
        f("ep_comm_backend", Lit(&["torch", "deepep"]), S("torch")),
        f("deepep_num_sms", Int, I(20)).ge(1.0),
        f("deepep_token_chunk_size", Int, Null).null().ge(1.0),
        f("cp", Int, I(1)),
        f("cp_style", Lit(&["ring", "ulysses"]), S("ring")),
        f("impl", Lit(&["hf", "custom", "auto"]), S("auto")),
        f("optimization_dtype", Lit(DTYPES), S("float32")),
        f("reduce_dtype", Lit(DTYPES), S("float32")),
        f("moe_router_dtype", Lit(DTYPES), S("float32")),
        f("moe_use_grouped_mm", Bool, B(true)),
        f("moe_fused_kernel", Bool, B(false)),
        f("quantization", U(&QUANT, None), Null).null(),
        f("index_cache", sub(&INDEX_CACHE), Null).null(),
        f("freeze_moe_router", Bool, B(false)),
        f("lora", sub(&TRAINER_LORA), Null).null(),
        f("debug", sub(&DEBUG_MODEL), Obj),
        f("fused_lm_head_token_chunk_size", IntOr("disabled"), I(8192)),
    ],
);

// ---------------------------------------------------------------- trainer

static FAKE_LOADER: Model = m(
    "FakeDataLoaderConfig",
    &[
        f("batch_size", Int, I(2)).ge(1.0),
        f("generate_samples", Bool, B(false)),
    ],
);
static DATA_LOADER: Model = m(
    "DataLoaderConfig",
    &[f("fake", sub(&FAKE_LOADER), Null).null()],
);
static LOSS_DEFAULT: Model = m(
    "DefaultLossConfig",
    &[
        f("type", Lit(&["default"]), S("default")),
        f("dppo_mask_low", Float, F(0.2)).ge(0.0),
        f("dppo_mask_high", Float, F(0.2)).ge(0.0),
        f("adv_tau", Float, F(1.0)).ge(0.0),
        f("kl_tau", Float, F(0.001)).ge(0.0),
    ],
);
static LOSS_IPO: Model = m(
    "IPOLossConfig",
    &[
        f("type", Lit(&["ipo"]), S("ipo")),
        f("ipo_threshold", Float, F(0.1)).ge(0.0),
        f("adv_tau", Float, F(1.0)).ge(0.0),
        f("kl_tau", Float, F(0.001)).ge(0.0),
    ],
);
static LOSS_CUSTOM: Model = m(
    "CustomLossConfig",
    &[
        f("type", Lit(&["custom"]), S("custom")),
        f("import_path", Str, Req),
        f("kwargs", DictAny, Other),
    ],
);
static LOSS: Union = Union {
    tag: "type",
    variants: &[
        ("default", &LOSS_DEFAULT),
        ("ipo", &LOSS_IPO),
        ("custom", &LOSS_CUSTOM),
    ],
};
static SGD: Model = m(
    "SGDConfig",
    &[
        f("lr", Float, F(1e-6)).ge(0.0),
        f("weight_decay", Float, F(0.01)).ge(0.0),
        f("max_norm", Float, F(1.0)).null().ge(0.0),
        f("type", Lit(&["sgd"]), S("sgd")),
        f("nesterov", Bool, B(true)),
        f("momentum", Float, F(0.9)),
    ],
);
static ADAMW: Model = m(
    "AdamWConfig",
    &[
        f("lr", Float, F(1e-6)).ge(0.0),
        f("weight_decay", Float, F(0.01)).ge(0.0),
        f("max_norm", Float, F(1.0)).null().ge(0.0),
        f("type", Lit(&["adamw"]), S("adamw")),
        f("betas1", Float, F(0.9)).ge(0.0),
        f("betas2", Float, F(0.999)).ge(0.0),
    ],
);
static MUON: Model = m(
    "MuonConfig",
    &[
        f("lr", Float, F(1e-6)).ge(0.0),
        f("weight_decay", Float, F(0.01)).ge(0.0),
        f("max_norm", Float, F(1.0)).null().ge(0.0),
        f("type", Lit(&["muon"]), S("muon")),
        f("mu", Float, F(0.95)).ge(0.0),
        f("betas1", Float, F(0.9)).ge(0.0),
        f("betas2", Float, F(0.95)).ge(0.0),
    ],
);
static SIGN_SGD: Model = m(
    "SignSGDConfig",
    &[
        f("lr", Float, F(1e-6)).ge(0.0),
        f("weight_decay", Float, F(0.01)).ge(0.0),
        f("max_norm", Float, F(1.0)).null().ge(0.0),
        f("type", Lit(&["sign_sgd"]), S("sign_sgd")),
    ],
);
static OPTIM: Union = Union {
    tag: "type",
    variants: &[
        ("sgd", &SGD),
        ("adamw", &ADAMW),
        ("muon", &MUON),
        ("sign_sgd", &SIGN_SGD),
    ],
};
static SCHED_CONSTANT: Model = m(
    "ConstantSchedulerConfig",
    &[f("type", Lit(&["constant"]), S("constant"))],
);
static SCHED_LINEAR: Model = m(
    "LinearSchedulerConfig",
    &[
        f("type", Lit(&["linear"]), S("linear")),
        f("warmup_steps", Int, I(10)).ge(0.0),
        f("decay_steps", Int, I(10)).ge(0.0),
        f("min_lr", Float, F(0.0)).ge(0.0),
    ],
);
static SCHED_COSINE: Model = m(
    "CosineSchedulerConfig",
    &[
        f("type", Lit(&["cosine"]), S("cosine")),
        f("warmup_steps", Int, I(10)).ge(0.0),
        f("min_lr", Float, F(0.0)).ge(0.0),
    ],
);
static SCHED: Union = Union {
    tag: "type",
    variants: &[
        ("constant", &SCHED_CONSTANT),
        ("linear", &SCHED_LINEAR),
        ("cosine", &SCHED_COSINE),
    ],
};
static TRAINER_CKPT: Model = m(
    "CheckpointConfig",
    &[
        f("output_dir", Path, Null).null(),
        f("interval", Int, Null).null().ge(1.0),
        f("keep_last", Int, Null).null().ge(1.0),
        f("keep_interval", Int, Null).null().ge(1.0),
        f("skip_progress", Bool, B(false)),
        f("skip_scheduler", Bool, B(false)),
        f("skip_dataloader", Bool, B(false)),
        f("skip_optimizer", Bool, B(false)),
    ],
);
static WB_FS: Model = m(
    "FileSystemWeightBroadcastConfig",
    &[f("type", Lit(&["filesystem"]), S("filesystem"))],
);
static TRAINER_NCCL: Model = m(
    "NCCLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(29501)),
        f("timeout", Int, I(1200)),
        f("inference_world_size", Int, I(1)),
        f("type", Lit(&["nccl"]), S("nccl")),
        f("quantize_in_weight_transfer", Bool, B(false)),
    ],
);
static TRAINER_NIXL: Model = m(
    "NIXLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(8001)),
        f("timeout", Int, I(1200)),
        f("inference_world_size", Int, I(1)),
        f("type", Lit(&["nixl"]), S("nixl")),
        f("session_id", Str, S("default")),
    ],
);
static TRAINER_WB: Union = Union {
    tag: "type",
    variants: &[
        ("filesystem", &WB_FS),
        ("nccl", &TRAINER_NCCL),
        ("nixl", &TRAINER_NIXL),
    ],
};
static RT_FS: Model = m(
    "FileSystemTransportConfig",
    &[f("type", Lit(&["filesystem"]), S("filesystem"))],
);
static RT_ZMQ: Model = m(
    "ZMQTransportConfig",
    &[
        f("type", Lit(&["zmq"]), S("zmq")),
        f("host", Str, S("localhost")),
        f("port", Int, I(5555)),
        f("hwm", Int, I(10)),
    ],
);
static RT: Union = Union {
    tag: "type",
    variants: &[("filesystem", &RT_FS), ("zmq", &RT_ZMQ)],
};
static MONITORS: Model = m(
    "MonitorsConfig",
    &[
        f("wandb", sub(&WANDB), Null).null(),
        f("file", sub(&FILE_MON), Obj).null(),
    ],
);
static METRICS_SERVER: Model = m(
    "MetricsServerConfig",
    &[
        f("port", Int, I(8000)).ge(1.0).le(65535.0),
        f("host", Str, S("0.0.0.0")),
    ],
);
static TRAINER: Model = m(
    "TrainerConfig",
    &[
        f("model", sub(&TRAINER_MODEL), Obj),
        f("tokenizer", sub(&TOKENIZER), Obj),
        f("data", sub(&DATA_LOADER), Obj),
        f("loss", U(&LOSS, Some("default")), Obj),
        f("optim", U(&OPTIM, Some("adamw")), Obj),
        f("scheduler", U(&SCHED, Some("constant")), Obj),
        f("ckpt", sub(&TRAINER_CKPT), Null).null(),
        f("resume", sub(&RESUME), Null).null(),
        f("weight_broadcast", U(&TRAINER_WB, Some("filesystem")), Obj),
        f("rollout_transport", U(&RT, Some("zmq")), Obj),
        f("log", sub(&TRAINER_LOG), Obj),
        f("monitors", sub(&MONITORS), Obj),
        f("output_dir", Path, S("outputs")),
        f(
            "matmul_precision",
            Lit(&["highest", "high", "medium"]),
            S("high"),
        ),
        f("max_steps", Int, Null).null(),
        f("enable_router_replay", Bool, B(false)),
        f("memory_profiler_path", Path, Null).null(),
        f("gc", sub(&GC), Obj).null(),
        f("trace_path", Path, Null).null(),
        f("dist_timeout_seconds", Int, I(3600)),
        f("heartbeat", sub(&HEARTBEAT), Null).null(),
        f("metrics_server", sub(&METRICS_SERVER), Null).null(),
        f("enable_token_export", Bool, B(false)),
        f("env_vars", DictStr, Other),
    ],
);

// ---------------------------------------------------------------- orchestrator

static SAMPLING: Model = m(
    "SamplingConfig",
    &[f("source", PolicyOr(&FROZEN), S("policy"))],
);
static LENGTH_PENALTY: Model = m(
    "LinearLengthPenaltyConfig",
    &[
        f("type", Lit(&["linear"]), S("linear")),
        f("num_output_tokens_weight", Float, F(0.25)).ge(0.0),
        f("num_input_tokens_weight", Float, F(0.1)).ge(0.0),
        f("num_turns_weight", Float, F(0.1)).ge(0.0),
    ],
);
static GRPO: Model = m(
    "GRPOAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["grpo"]), S("grpo")),
        f("length_penalty", sub(&LENGTH_PENALTY), Null).null(),
    ],
);
static ECHO_ROLE: Model = m("EchoRoleConfig", &[f("alpha", Float, F(0.1)).gt(0.0)]);
static ECHO_ROLES: Model = m(
    "EchoRolesConfig",
    &[
        f("system", sub(&ECHO_ROLE), Null).null(),
        f("user", sub(&ECHO_ROLE), Null).null(),
        f("assistant", sub(&ECHO_ROLE), Null).null(),
        f("tool", sub(&ECHO_ROLE), Null).null(),
    ],
);
static ECHO_FILTER: Model = m(
    "EchoFilterConfig",
    &[f("import_path", Str, Req), f("kwargs", DictAny, Other)],
);
static ECHO: Model = m(
    "EchoAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["echo"]), S("echo")),
        f("length_penalty", sub(&LENGTH_PENALTY), Null).null(),
        f("roles", sub(&ECHO_ROLES), Obj),
        f("filter", sub(&ECHO_FILTER), Null).null(),
    ],
);
static MAX_RL: Model = m(
    "MaxRLAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["max_rl"]), S("max_rl")),
    ],
);
static RAE: Model = m(
    "RAEAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["rae"]), S("rae")),
        f("decay", Float, F(0.95)).ge(0.0).lt(1.0),
    ],
);
static HGRPO: Model = m(
    "HierarchicalGRPOAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["hierarchical_grpo"]), S("hierarchical_grpo")),
        f("episode_agents", ListStr, Req),
    ],
);
static OPD: Model = m(
    "OPDAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["opd"]), S("opd")),
        f("teacher", sub(&FROZEN), Req),
    ],
);
static OPSD: Model = m(
    "OPSDAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["opsd"]), S("opsd")),
        f("demo_key", Str, S("demonstration")),
        f("template", Str, Other),
        f("renderer", Renderer, Obj),
    ],
);
static SFT_ALGO: Model = m(
    "SFTAlgoConfig",
    &[
        f("sampling", sub(&SAMPLING), Obj),
        f("type", Lit(&["sft"]), S("sft")),
    ],
);
static ALGO: Union = Union {
    tag: "type",
    variants: &[
        ("grpo", &GRPO),
        ("echo", &ECHO),
        ("max_rl", &MAX_RL),
        ("rae", &RAE),
        ("hierarchical_grpo", &HGRPO),
        ("opd", &OPD),
        ("opsd", &OPSD),
        ("sft", &SFT_ALGO),
    ],
};
static ORCH_LORA: Model = m(
    "LoRAConfig",
    &[
        f("name", Str, Null).null(),
        f("rank", Int, Null).null().ge(1.0),
        f("alpha", Float, Null).null().ge(0.0),
    ],
);
static ORCH_MODEL: Model = m(
    "ModelConfig",
    &[
        f("name", Str, S(DEFAULT_MODEL)),
        f("trust_remote_code", Bool, B(false)),
        f("vlm", sub(&VLM), Null).null(),
        f("lora", sub(&ORCH_LORA), Null).null(),
        f("client", sub(&CLIENT), Obj),
    ],
);
static TRAIN_SAMPLING: Model = m(
    "TrainSamplingConfig",
    &[
        f("temperature", Float, F(1.0)).ge(0.0).le(2.0),
        f("max_completion_tokens", Int, Null).null(),
        f("extra_body", DictAny, Other),
    ],
);
static EVAL_SAMPLING: Model = m(
    "EvalSamplingConfig",
    &[
        f("temperature", Float, Null).null().ge(0.0).le(2.0),
        f("top_p", Float, Null).null(),
        f("top_k", Int, Null).null(),
        f("min_p", Float, Null).null().ge(0.0),
        f("max_completion_tokens", Int, Null).null(),
        f(
            "reasoning_effort",
            Lit(&["minimal", "low", "medium", "high"]),
            Null,
        )
        .null(),
        f("extra_body", DictAny, Other),
    ],
);
static STANDARD_SAMPLER: Model = m(
    "StandardSamplerConfig",
    &[f("type", Lit(&["standard"]), S("standard"))],
);
static POOL: Model = m(
    "DifficultyPoolConfig",
    &[f("threshold", Float, Req), f("weight", Float, Req).ge(0.0)],
);
static DIFFICULTY_SAMPLER: Model = m(
    "DifficultyPoolSamplerConfig",
    &[
        f("type", Lit(&["difficulty_pool"]), S("difficulty_pool")),
        f("pools", DictOf(&POOL), Other),
        f("seed", Int, I(42)),
    ],
);
static SAMPLER: Union = Union {
    tag: "type",
    variants: &[
        ("standard", &STANDARD_SAMPLER),
        ("difficulty_pool", &DIFFICULTY_SAMPLER),
    ],
};
static GATE: Model = m(
    "AdvRangeGateConfig",
    &[
        f("type", Lit(&["advantage_range"]), S("advantage_range")),
        f("reject_min", Float, F(0.0)),
        f("reject_max", Float, F(0.0)),
    ],
);
static CURRICULUM: Model = m(
    "CurriculumConfig",
    &[
        f("sampler", U(&SAMPLER, None), Obj),
        f("gates", DictOf(&GATE), Other),
    ],
);
static TRAIN_SOURCE: Model = m(
    "TrainSourceConfig",
    &[
        f("env", sub(&ENV), Obj),
        f("serve", sub(&SERVE), Obj),
        f("name", Str, Null).null(),
        f("ratio", Float, F(1.0)).gt(0.0),
        f("sampling", sub(&TRAIN_SAMPLING), Obj),
        f("group_size", Int, I(1)).ge(1.0),
        f("algo", U(&ALGO, None), Null).null(),
        f("curriculum", sub(&CURRICULUM), Null).null(),
    ],
);
static TRAIN: Model = m(
    "TrainConfig",
    &[
        f("source", ListOf(&TRAIN_SOURCE), Other),
        f("sampling", sub(&TRAIN_SAMPLING), Obj),
        f("filter_zero_advantages", Bool, B(true)),
    ],
);
static EVAL_SOURCE: Model = m(
    "EvalSourceConfig",
    &[
        f("env", sub(&ENV), Obj),
        f("serve", sub(&SERVE), Obj),
        f("name", Str, Null).null(),
        f("ratio", Float, F(1.0)).gt(0.0),
        f("sampling", sub(&EVAL_SAMPLING), Obj),
        f("num_examples", Int, I(-1)),
        f("group_size", Int, I(1)).ge(1.0),
        f("interval", Int, I(100)).ge(1.0),
    ],
);
static EVAL: Model = m(
    "EvalConfig",
    &[
        f("source", ListOf(&EVAL_SOURCE), Other),
        f("sampling", sub(&EVAL_SAMPLING), Obj),
        f("num_examples", Int, I(-1)),
        f("group_size", Int, I(1)).ge(1.0),
        f("interval", Int, I(100)).ge(1.0),
        f("skip_first_step", Bool, B(false)),
        f("retrigger_on_resume", Bool, B(false)),
    ],
);
static ORCH_MONITORS: Model = m(
    "OrchestratorMonitorsConfig",
    &[
        f("wandb", sub(&WANDB), Null).null(),
        f("file", sub(&FILE_MON), Obj).null(),
        f("prime", sub(&PRIME_MON), Null).null(),
    ],
);
static ORCH_CKPT: Model = m(
    "CheckpointConfig",
    &[
        f("interval", Int, Null).null().ge(1.0),
        f("wait_for_weights_timeout", Int, Null).null().ge(1.0),
        f("keep_last", Int, Null).null().ge(1.0),
        f("keep_interval", Int, Null).null().ge(1.0),
        f("skip_progress", Bool, B(false)),
    ],
);
static ORCH_NCCL: Model = m(
    "NCCLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(29501)),
        f("timeout", Int, I(1200)),
        f("inference_world_size", Int, I(1)).ge(1.0),
        f("type", Lit(&["nccl"]), S("nccl")),
        f("quantize_in_weight_transfer", Bool, B(false)),
    ],
);
static ORCH_NIXL: Model = m(
    "NIXLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(8001)),
        f("timeout", Int, I(1200)),
        f("inference_world_size", Int, I(1)).ge(1.0),
        f("type", Lit(&["nixl"]), S("nixl")),
        f("session_id", Str, S("default")),
    ],
);
static ORCH_WB: Union = Union {
    tag: "type",
    variants: &[
        ("filesystem", &WB_FS),
        ("nccl", &ORCH_NCCL),
        ("nixl", &ORCH_NIXL),
    ],
};
static ORCHESTRATOR: Model = m(
    "OrchestratorConfig",
    &[
        f("algo", U(&ALGO, Some("grpo")), Obj),
        f("model", sub(&ORCH_MODEL), Obj),
        f("train", sub(&TRAIN), Obj),
        f("tokenizer", sub(&TOKENIZER), Obj),
        f("renderer", Renderer, Obj),
        f("eval", sub(&EVAL), Null).null(),
        f("log", sub(&LOG), Obj),
        f("env_vars", DictStr, Other),
        f("monitors", sub(&ORCH_MONITORS), Obj),
        f("collect_inference_metrics", Bool, B(true)),
        f(
            "inference_metrics_roles",
            ListLit(&["prefill", "decode"]),
            Null,
        )
        .null(),
        f("ckpt", sub(&ORCH_CKPT), Null).null(),
        f("resume", sub(&RESUME), Null).null(),
        f("weight_broadcast", U(&ORCH_WB, Some("filesystem")), Obj),
        f("rollout_transport", U(&RT, Some("zmq")), Obj),
        f("output_dir", Path, S("outputs")),
        f("tasks_per_minute", Int, Null).null().ge(1.0),
        f("env_server_base_port", Int, I(5000)).ge(1.0).le(65535.0),
        f("batch_size", Int, Null).null().ge(1.0),
        f("token_batch_size", Int, Null).null().ge(1.0),
        f("concurrency", sub(&CONCURRENCY), Obj),
        f("group_size", Int, I(1)).ge(1.0),
        f("seq_len", Int, I(2048)),
        f("num_train_workers", Int, I(1)).ge(1.0),
        f("pad_to_multiple_of", Int, I(1)).ge(1.0),
        f("max_steps", Int, Null).null(),
        f("max_off_policy_steps", Int, I(8)).ge(0.0),
        f("heartbeat", sub(&HEARTBEAT), Null).null(),
    ],
);

// ---------------------------------------------------------------- inference

static SERVER: Model = m(
    "ServerConfig",
    &[
        f("host", Str, Null).null(),
        f("port", Int, I(8000)),
        f("liveness_timeout_seconds", Float, F(30.0)).gt(0.0),
    ],
);
static VLLM_ROUTER: Model = m(
    "VllmRouterConfig",
    &[
        f("type", Lit(&["vllm-router"]), S("vllm-router")),
        f("policy", Str, S("consistent_hash")),
    ],
);
static LLMD_ROUTER: Model = m(
    "LlmdRouterConfig",
    &[
        f("type", Lit(&["llm-d"]), S("llm-d")),
        f("scorers", DictFloat, Other),
        f("prefill_scorer_overrides", DictFloat, Other),
        f("decode_scorer_overrides", DictFloat, Other),
        f("non_cached_tokens", Int, I(16)),
        f("decode_sidecar_port", Int, I(8300)),
    ],
);
static ROUTER: Union = Union {
    tag: "type",
    variants: &[("vllm-router", &VLLM_ROUTER), ("llm-d", &LLMD_ROUTER)],
};
static VLLM: Model = Model {
    name: "VllmConfig",
    extra: true,
    special: Special::Vllm,
    fields: &[
        f("model", Str, S(DEFAULT_MODEL)),
        f(
            "dtype",
            Lit(&["auto", "float16", "bfloat16", "float32"]),
            S("auto"),
        ),
        f("max_model_len", Int, Null).null(),
        f("enforce_eager", Bool, B(false)),
        f("trust_remote_code", Bool, B(false)),
        f("chat_template", Str, Null).null(),
        f("tool_call_parser", Str, S("auto")).null(),
        f("reasoning_parser", Str, S("auto")).null(),
        f("rope_scaling", DictAnyOrStr, Null).null(),
        f("tensor_parallel_size", Int, I(1)),
        f("data_parallel_size", Int, I(1)).ge(1.0),
        f("data_parallel_size_local", Int, Null).null().ge(1.0),
        f("data_parallel_rpc_port", Int, I(13345))
            .ge(1.0)
            .le(65535.0),
        f("api_server_count", Int, I(1)).ge(0.0),
        f("seed", Int, I(0)),
        f("gpu_memory_utilization", Float, F(0.9)),
        f("enable_prefix_caching", Bool, Null).null(),
        f("quantization", Str, Null).null(),
        f("enable_lora", Bool, B(false)),
        f("max_loras", Int, I(8)),
        f("max_cpu_loras", Int, I(100)),
        f("max_lora_rank", Int, Null).null(),
        f("lora_target_modules", ListStr, Null).null(),
        f("enable_expert_parallel", Bool, B(false)),
        f(
            "all2all_backend",
            Lit(&[
                "allgather_reducescatter",
                "deepep_high_throughput",
                "deepep_low_latency",
                "flashinfer_nvlink_one_sided",
                "flashinfer_nvlink_two_sided",
            ]),
            S("allgather_reducescatter"),
        ),
        f("enable_eplb", Bool, B(false)),
        f("enable_dbo", Bool, B(false)),
        f("enable_return_routed_experts", Bool, B(false)),
    ],
};
static INF_WB: Model = m(
    "WeightBroadcastConfig",
    &[f(
        "type",
        Lit(&["nccl", "filesystem", "nixl"]),
        S("filesystem"),
    )],
);
static CPU_TIER: Model = m("CPUOffloadTier", &[f("num_bytes", Int, Req).gt(0.0)]);
static DISK_TIER: Model = m("DiskOffloadTier", &[f("path", Path, Req)]);
static KV_NATIVE: Model = m(
    "NativeKVCacheOffloadConfig",
    &[
        f("cpu", sub(&CPU_TIER), Null).null(),
        f("disk", sub(&DISK_TIER), Null).null(),
        f("type", Lit(&["native"]), S("native")),
    ],
);
static KV_MOONCAKE: Model = m(
    "MooncakeKVCacheOffloadConfig",
    &[
        f("cpu", sub(&CPU_TIER), Null).null(),
        f("disk", sub(&DISK_TIER), Null).null(),
        f("type", Lit(&["mooncake"]), S("mooncake")),
        f("device_name", Str, S("")),
    ],
);
static KV: Union = Union {
    tag: "type",
    variants: &[("native", &KV_NATIVE), ("mooncake", &KV_MOONCAKE)],
};
static INF_SINGLE: Model = m(
    "SingleNodeInferenceDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["single_node"]), S("single_node")),
    ],
);
static INF_MULTI: Model = m(
    "MultiNodeInferenceDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["multi_node"]), S("multi_node")),
        f("num_nodes", Int, I(2)).ge(1.0),
    ],
);
static INF_DISAGG: Model = m(
    "DisaggregatedInferenceDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["disaggregated"]), S("disaggregated")),
        f("prefill_nodes_per_replica", Int, I(1)).ge(1.0),
        f("decode_nodes_per_replica", Int, I(1)).ge(1.0),
        f("num_prefill_replicas", Int, I(1)).ge(1.0),
        f("num_decode_replicas", Int, I(1)).ge(1.0),
        f("prefill_port", Int, I(8100)),
        f("decode_port", Int, I(8200)),
        f("prefill_env_vars", DictStr, Other),
        f("decode_env_vars", DictStr, Other),
        f("prefill_vllm_overrides", DictAny, Other),
        f("decode_vllm_overrides", DictAny, Other),
    ],
);
static INF_DEPLOY: Union = Union {
    tag: "type",
    variants: &[
        ("single_node", &INF_SINGLE),
        ("multi_node", &INF_MULTI),
        ("disaggregated", &INF_DISAGG),
    ],
};
static INFERENCE: Model = m(
    "InferenceConfig",
    &[
        f("server", sub(&SERVER), Obj),
        f("router", U(&ROUTER, None), Obj).null(),
        f("backend_port", Int, I(8100)),
        f("vllm", sub(&VLLM), Obj),
        f("log", sub(&LOG), Obj),
        f("env_vars", DictStr, Other),
        f("use_deep_gemm", Bool, B(false)),
        f("weight_broadcast", sub(&INF_WB), Obj),
        f("kv_cache_offload", U(&KV, None), Null).null(),
        f("use_pd_kv_transfer", Bool, B(false)),
        f("enable_fp32_lm_head", Bool, B(true)),
        f("enable_fp32_router_logits", Bool, B(true)),
        f("deployment", U(&INF_DEPLOY, Some("single_node")), Obj),
        f("slurm", sub(&SLURM), Null).null(),
        f("output_dir", Path, S("outputs")),
        f("dry_run", Bool, B(false)),
    ],
);

// ---------------------------------------------------------------- RL shared (top level)

static SHARED_LOG: Model = m(
    "SharedLogConfig",
    &[
        f("level", Str, Null).null(),
        f("json_logging", Bool, B(false)),
    ],
);
static SHARED_CKPT: Model = m(
    "SharedCheckpointConfig",
    &[
        f("output_dir", Path, Null).null(),
        f("interval", Int, Null).null(),
        f("keep_last", Int, Null).null().ge(1.0),
        f("keep_interval", Int, Null).null().ge(1.0),
    ],
);
static SHARED_WANDB: Model = m(
    "SharedWandbConfig",
    &[
        f("project", Str, S("prime-rl")).null(),
        f("entity", Str, Null).null(),
        f("name", Str, Null).null(),
        f("group", Str, Null).null(),
        f("tags", ListStr, Null).null(),
        f("offline", Bool, B(false)).null(),
    ],
);
static SHARED_MONITORS: Model = m(
    "SharedMonitorsConfig",
    &[
        f("wandb", sub(&SHARED_WANDB), Null).null(),
        f("file", sub(&FILE_MON), Null).null(),
        f("prime", sub(&PRIME_MON), Null).null(),
    ],
);
static SHARED_MODEL: Model = m(
    "SharedModelConfig",
    &[
        f("name", Str, S(DEFAULT_MODEL)),
        f("vlm", sub(&VLM), Null).null(),
    ],
);
static SHARED_NCCL: Model = m(
    "SharedNCCLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(29501)),
        f("timeout", Int, I(1200)),
        f("type", Lit(&["nccl"]), S("nccl")),
        f("quantize_in_weight_transfer", Bool, B(false)),
    ],
);
static SHARED_NIXL: Model = m(
    "SharedNIXLWeightBroadcastConfig",
    &[
        f("host", Str, S("localhost")),
        f("port", Int, I(8001)),
        f("timeout", Int, I(1200)),
        f("type", Lit(&["nixl"]), S("nixl")),
        f("session_id", Str, S("default")),
    ],
);
static SHARED_WB_FS: Model = m(
    "SharedFileSystemWeightBroadcastConfig",
    &[f("type", Lit(&["filesystem"]), S("filesystem"))],
);
static SHARED_WB: Union = Union {
    tag: "type",
    variants: &[
        ("filesystem", &SHARED_WB_FS),
        ("nccl", &SHARED_NCCL),
        ("nixl", &SHARED_NIXL),
    ],
};
static RL_SINGLE: Model = m(
    "SingleNodeDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["single_node"]), S("single_node")),
        f("num_train_gpus", Int, I(1)),
        f("num_infer_gpus", Int, I(1)),
    ],
);
static RL_MULTI: Model = m(
    "MultiNodeDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["multi_node"]), S("multi_node")),
        f("num_train_nodes", Int, Req),
        f("num_infer_nodes", Int, Null).null().ge(0.0),
        f("num_infer_replicas", Int, I(1)).ge(1.0),
        f("nodes_per_fsdp_group", Int, Null).null(),
        f("orchestrator_on_inference", Bool, B(false)),
    ],
);
static RL_DEPLOY: Union = Union {
    tag: "type",
    variants: &[("single_node", &RL_SINGLE), ("multi_node", &RL_MULTI)],
};

/// `RLConfig`: the schema of `prime train` RL configs.
pub static RL_ROOT: Model = m(
    "RLConfig",
    &[
        f("trainer", sub(&TRAINER), Req),
        f("orchestrator", sub(&ORCHESTRATOR), Req),
        f("inference", sub(&INFERENCE), Null).null(),
        f("env_vars", DictStr, Other),
        f("run", sub(&RUN), Obj),
        f("output_dir", Path, S("outputs")),
        f("clean", Bool, B(false)),
        f("log", sub(&SHARED_LOG), Obj),
        f("ckpt", sub(&SHARED_CKPT), Null).null(),
        f("resume", sub(&RESUME), Null).null(),
        f("monitors", sub(&SHARED_MONITORS), Obj),
        f("model", sub(&SHARED_MODEL), Null).null(),
        f("tokenizer", sub(&TOKENIZER), Null).null(),
        f("max_steps", Int, Null).null(),
        f("seq_len", Int, Null).null(),
        f("weight_broadcast", U(&SHARED_WB, None), Null).null(),
        // Declared default null, yet a missing `type` resolves to zmq in practice (§1 table 1a).
        f("rollout_transport", U(&RT, Some("zmq")), Null).null(),
        f("deployment", U(&RL_DEPLOY, Some("single_node")), Obj),
        f("slurm", sub(&SLURM), Null).null(),
        f("dry_run", Bool, B(false)),
    ],
);

// ---------------------------------------------------------------- SFT

static SFT_DATA_FAKE: Model = m(
    "FakeDataConfig",
    &[
        f("batch_size", Int, I(128)).ge(1.0),
        f("seq_len", Int, I(128)).ge(1.0),
        f("micro_batch_size", Int, I(1)).ge(1.0),
        f("num_workers", Int, I(1)).ge(1.0),
        f("type", Lit(&["fake"]), S("fake")),
        f("length", Lit(&["fixed", "variable"]), S("fixed")),
        f("input_ids", Lit(&["increasing", "random"]), S("increasing")),
        f("seed", Int, I(0)),
    ],
);
static LOSS_MASK: Model = m(
    "LossMaskConfig",
    &[
        f("system", Bool, B(false)),
        f("user", Bool, B(false)),
        f("assistant", Bool, B(true)),
        f("tool", Bool, B(false)),
    ],
);
static SFT_DATA_SFT: Model = m(
    "SFTDataConfig",
    &[
        f("batch_size", Int, I(128)).ge(1.0),
        f("seq_len", Int, I(128)).ge(1.0),
        f("micro_batch_size", Int, I(1)).ge(1.0),
        f("num_workers", Int, I(1)).ge(1.0),
        f("type", Lit(&["sft"]), S("sft")),
        f("name", Str, S("PrimeIntellect/Reverse-Text-SFT")),
        f("subsets", ListStr, Null).null(),
        f("splits", ListStr, Null).null(),
        f("probabilities", ListFloat, Null).null(),
        f(
            "stopping_strategy",
            Lit(&["first_exhausted", "all_exhausted"]),
            S("all_exhausted"),
        ),
        f("shuffle", Bool, B(true)),
        f("seed", Int, I(0)),
        f("loss_mask", sub(&LOSS_MASK), Obj),
    ],
);
static SFT_DATA: Union = Union {
    tag: "type",
    variants: &[("fake", &SFT_DATA_FAKE), ("sft", &SFT_DATA_SFT)],
};
static SFT_VAL: Model = m(
    "SFTValConfig",
    &[
        f("interval", Int, I(50)).ge(1.0),
        f("eval_on_start", Bool, B(false)),
        f("data", sub(&SFT_DATA_SFT), Req),
    ],
);
static SFT_EVAL: Model = m(
    "EvalsEvalConfig",
    &[
        f("source", ListOf(&EVAL_SOURCE), Other),
        f("sampling", sub(&EVAL_SAMPLING), Obj),
        f("num_examples", Int, I(-1)),
        f("group_size", Int, I(1)).ge(1.0),
        f("interval", Int, I(100)).ge(1.0),
        f("skip_first_step", Bool, B(false)),
        f("retrigger_on_resume", Bool, B(false)),
        f("client", sub(&CLIENT), Obj),
        f("env_server_base_port", Int, I(5000)).ge(1.0).le(65535.0),
        f("concurrency", sub(&CONCURRENCY), Obj),
    ],
);
static SFT_SINGLE: Model = m(
    "SingleNodeDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["single_node"]), S("single_node")),
        f("num_train_gpus", Int, I(1)),
        f("num_infer_gpus", Int, I(1)).alias("num_eval_gpus"),
    ],
);
static SFT_MULTI: Model = m(
    "MultiNodeDeploymentConfig",
    &[
        f("gpus_per_node", Int, I(8)),
        f("type", Lit(&["multi_node"]), S("multi_node")),
        f("num_train_nodes", Int, I(2)).ge(1.0),
        f("num_infer_nodes", Int, I(0))
            .ge(0.0)
            .alias("num_eval_nodes"),
        f("nodes_per_fsdp_group", Int, Null).null(),
    ],
);
static SFT_DEPLOY: Union = Union {
    tag: "type",
    variants: &[("single_node", &SFT_SINGLE), ("multi_node", &SFT_MULTI)],
};

/// `SFTConfig`: the schema of `prime train --sft` configs.
pub static SFT_ROOT: Model = m(
    "SFTConfig",
    &[
        f("model", sub(&TRAINER_MODEL), Obj),
        f("env_vars", DictStr, Other),
        f("tokenizer", sub(&TOKENIZER), Obj),
        f("renderer", Renderer, Obj),
        f("data", U(&SFT_DATA, Some("sft")), Obj),
        f("val", sub(&SFT_VAL), Null).null(),
        f("eval", sub(&SFT_EVAL), Null).null(),
        f("inference", sub(&INFERENCE), Null).null(),
        f("weight_broadcast", U(&TRAINER_WB, None), Null).null(),
        f("optim", U(&OPTIM, Some("adamw")), Obj),
        f("scheduler", U(&SCHED, Some("constant")), Obj),
        f("ckpt", sub(&TRAINER_CKPT), Null).null(),
        f("resume", sub(&RESUME), Null).null(),
        f("log", sub(&TRAINER_LOG), Obj),
        f("monitors", sub(&MONITORS), Obj),
        f("run", sub(&RUN), Obj),
        f("output_dir", Path, S("outputs")),
        f("clean", Bool, B(false)),
        f(
            "matmul_precision",
            Lit(&["highest", "high", "medium"]),
            S("high"),
        ),
        f("max_steps", Int, Null).null(),
        f("memory_profiler_path", Path, Null).null(),
        f("gc", sub(&GC), Obj).null(),
        f("trace_path", Path, Null).null(),
        f("dist_timeout_seconds", Int, I(3600)),
        f("heartbeat", sub(&HEARTBEAT), Null).null(),
        f("deployment", U(&SFT_DEPLOY, Some("single_node")), Obj),
        f("slurm", sub(&SLURM), Null).null(),
        f("dry_run", Bool, B(false)),
    ],
);

// ---------------------------------------------------------------- verifiers (§4.8, App. C)
// Plugin-narrowed in the real schema; statically only the base keys are known, so the
// tables that plugins extend accept unknown keys.

static TASK: Model = open(
    "TaskConfig",
    &[
        f("judges", Any, Other),
        f("stops", DictAny, Other),
        f("metrics", DictAny, Other),
        f("rewards", DictAny, Other),
    ],
);
static TASKSET: Model = open(
    "TasksetConfig",
    &[
        f("id", Str, S("")),
        f("task", sub(&TASK), Obj),
        f("system_prompt", Path, Null).null(),
    ],
);
static ENV_TIMEOUT: Model = m(
    "EnvTimeoutConfig",
    &[
        f("episode", Float, Null).null(),
        f("finalize", Float, Null).null(),
    ],
);
static RETRIES: Model = m(
    "RetriesConfig",
    &[
        f("max_retries", Int, I(0)).ge(0.0),
        f("include", ListStr, Other),
        f("exclude", ListStr, Other),
    ],
);
static INTERCEPT_ELASTIC: Model = m(
    "ElasticInterceptionConfig",
    &[
        f("type", Lit(&["elastic"]), S("elastic")),
        f("multiplex", Int, I(32)),
    ],
);
static INTERCEPT_SERVER: Model = m(
    "ServerInterceptionConfig",
    &[
        f("type", Lit(&["server"]), S("server")),
        f("tunnel", DictAny, Other),
    ],
);
static INTERCEPT_STATIC: Model = m(
    "StaticInterceptionConfig",
    &[
        f("type", Lit(&["static"]), S("static")),
        f("servers", Any, Req),
    ],
);
static INTERCEPTION: Union = Union {
    tag: "type",
    variants: &[
        ("elastic", &INTERCEPT_ELASTIC),
        ("server", &INTERCEPT_SERVER),
        ("static", &INTERCEPT_STATIC),
    ],
};
pub(crate) static HARNESS: Model = open(
    "HarnessConfig",
    &[
        f("id", Str, S("bash")).null(),
        f("env", DictStr, Other),
        f("forward_env", ListStr, Other),
        f("tool_timeout", Float, F(600.0)).gt(0.0),
        f("disabled_tools", ListStr, Null).null(),
        f("skills", ListStr, Other),
    ],
);
static RUNTIME_PRIME: Model = m(
    "PrimeRuntimeConfig",
    &[
        f("type", Lit(&["prime"]), S("prime")),
        f("image", Str, S("python:3.11-slim")),
        f("workdir", Str, S("/app")),
        f("vm", Bool, B(true)),
        f("guaranteed", Bool, B(false)),
        f("region", Str, Null).null(),
        f("labels", ListStr, Other),
        f("cpu", Float, F(1.0)),
        f("memory", Float, F(2.0)),
        f("gpu", Str, Null).null(),
        f("disk", Float, F(5.0)),
        f("idle_timeout", Float, F(3600.0)).null(),
        f("creates_per_min", Int, Null).null(),
        f("allow", ListStr, Other),
        f("block", ListStr, Other),
    ],
);
static RUNTIME_SUBPROCESS: Model = m(
    "SubprocessRuntimeConfig",
    &[f("type", Lit(&["subprocess"]), S("subprocess"))],
);
static RUNTIME_DOCKER: Model = m(
    "DockerRuntimeConfig",
    &[
        f("type", Lit(&["docker"]), S("docker")),
        f("image", Str, Other),
        f("workdir", Str, Other),
        f("cpu", Float, Null).null(),
        f("memory", Float, Null).null(),
        f("gpu", Str, Null).null(),
        f("disk", Float, Null).null(),
        f("allow", ListStr, Other),
        f("block", ListStr, Other),
    ],
);
static RUNTIME_MODAL: Model = m(
    "ModalRuntimeConfig",
    &[
        f("type", Lit(&["modal"]), S("modal")),
        f("image", Str, Other),
        f("workdir", Str, Other),
        f("network_access", Bool, B(true)),
        f("region", Str, Null).null(),
        f("cpu", Float, F(1.0)),
        f("memory", Float, F(2.0)),
        f("gpu", Str, Null).null(),
        f("disk", Float, F(5.0)),
        f("creates_per_sec", Float, F(40.0)),
    ],
);
static RUNTIME: Union = Union {
    tag: "type",
    variants: &[
        ("prime", &RUNTIME_PRIME),
        ("subprocess", &RUNTIME_SUBPROCESS),
        ("docker", &RUNTIME_DOCKER),
        ("modal", &RUNTIME_MODAL),
    ],
};
/// One agent seat of a verifiers env (`agent`, `player`, …); plugins add fields.
pub(crate) static ROLE: Model = open(
    "AgentSeatConfig",
    &[
        f("harness", sub(&HARNESS), Null).null(),
        f("runtime", U(&RUNTIME, Some("prime")), Obj),
        f("model", Str, Null).null(),
        f("client", DictAny, Other),
        f("sampling", DictAny, Other),
        f("max_turns", Int, Null).null(),
        f("max_input_tokens", Int, Null).null(),
        f("max_output_tokens", Int, Null).null(),
        f("max_total_tokens", Int, Null).null(),
        f("timeout", DictAny, Other),
        f("retries", sub(&RETRIES), Obj),
    ],
);
static ENV: Model = Model {
    name: "EnvConfig",
    extra: true,
    special: Special::Env,
    fields: &[
        f("id", Str, S("")),
        f("taskset", sub(&TASKSET), Obj),
        f("timeout", sub(&ENV_TIMEOUT), Obj),
        f("retries", sub(&RETRIES), Obj),
        f("max_concurrent_agents", Int, I(1)).null().ge(1.0),
        f("interception", U(&INTERCEPTION, Some("elastic")), Obj),
    ],
};
static POOL_ELASTIC: Model = m(
    "ElasticPoolConfig",
    &[
        f("type", Lit(&["elastic"]), S("elastic")),
        f("max_workers", Int, Null).null(),
        f("multiplex", Int, I(128)).ge(1.0),
    ],
);
static POOL_STATIC: Model = m(
    "StaticPoolConfig",
    &[
        f("type", Lit(&["static"]), S("static")),
        f("num_workers", Int, I(4)).ge(1.0),
    ],
);
static SERVE_POOL: Union = Union {
    tag: "type",
    variants: &[("elastic", &POOL_ELASTIC), ("static", &POOL_STATIC)],
};
static SERVE: Model = m(
    "ServeConfig",
    &[
        f("pool", U(&SERVE_POOL, None), Obj),
        f("address", Str, Null).null(),
        f("max_concurrent", Int, Null).null().ge(1.0),
    ],
);

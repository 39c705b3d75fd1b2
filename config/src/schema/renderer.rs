//! The renderer union of Appendix B (keyed by `name`, renderers 0.1.12) and
//! `MODEL_RENDERER_MAP`, the exact model ids that `name = "auto"` accepts. Data to refresh
//! when the pinned renderers release changes.

use super::Dv::{Bool as B, Float as F, Int as I, Null, Req, Str as S};
use super::Field;
use super::Ty::{Bool, Int, Lit, Str, StrOrFloat};

/// One renderer variant.
#[derive(Debug)]
pub struct RendererVariant {
    /// Its `name`.
    pub name: &'static str,
    /// Whether unknown keys are accepted (`default`, `custom`).
    pub extra: bool,
    /// Its keys besides `name` and `thinking_retention`.
    pub fields: &'static [Field],
}

const fn f(key: &'static str, ty: super::Ty, def: super::Dv) -> Field {
    Field::new(key, ty, def)
}

/// `thinking_retention`, accepted by every variant.
pub static THINKING_RETENTION: Field =
    f("thinking_retention", Lit(&["tool_cycle", "all"]), Null).null();

/// The renderer variants.
pub static RENDERERS: &[RendererVariant] = &[
    RendererVariant {
        name: "auto",
        extra: false,
        fields: &[],
    },
    RendererVariant {
        name: "default",
        extra: true,
        fields: &[
            f("tool_parser", Str, Null).null(),
            f("reasoning_parser", Str, Null).null(),
        ],
    },
    RendererVariant {
        name: "qwen3",
        extra: false,
        fields: &[f("enable_thinking", Bool, B(true))],
    },
    RendererVariant {
        name: "prime-qwen3",
        extra: false,
        fields: &[],
    },
    RendererVariant {
        name: "qwen3.5",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, Null).null(),
            f("add_vision_id", Bool, B(false)),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "qwen3.6",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, Null).null(),
            f("add_vision_id", Bool, B(false)),
            f("preserve_thinking", Bool, B(false)),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "qwen3.8",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, Null).null(),
            f("add_vision_id", Bool, B(false)),
            f("preserve_thinking", Bool, B(true)),
            f(
                "reasoning_effort",
                Lit(&["xhigh", "medium", "low"]),
                S("xhigh"),
            ),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "qwen3-vl",
        extra: false,
        fields: &[
            f("add_vision_id", Bool, B(false)),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "gemma4",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(false)),
            f("preserve_thinking", Bool, B(false)),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "glm-5",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("clear_thinking", Bool, B(true)),
        ],
    },
    RendererVariant {
        name: "glm-5.1",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("clear_thinking", Bool, B(true)),
        ],
    },
    RendererVariant {
        name: "glm-5.3",
        extra: false,
        fields: &[
            f("clear_thinking", Bool, B(false)),
            f("reasoning_effort", Lit(&["low", "high", "max"]), S("max")),
        ],
    },
    RendererVariant {
        name: "glm-4.5",
        extra: false,
        fields: &[f("enable_thinking", Bool, B(true))],
    },
    RendererVariant {
        name: "gpt-oss",
        extra: false,
        fields: &[
            f(
                "reasoning_effort",
                Lit(&["low", "medium", "high"]),
                S("medium"),
            ),
            f("conversation_start_date", Str, Null).null(),
            f("use_system_prompt", Bool, B(true)),
            f("knowledge_cutoff", Str, Null).null(),
            f("model_identity", Str, Null).null(),
            f("auto_drop_analysis", Bool, B(true)),
        ],
    },
    RendererVariant {
        name: "hy3",
        extra: false,
        fields: &[
            f(
                "reasoning_effort",
                Lit(&["no_think", "low", "high"]),
                S("no_think"),
            ),
            f("preserved_thinking", Bool, Null).null(),
            f("is_training", Bool, B(false)),
            f("raw_last_assistant", Bool, B(false)),
            f(
                "fallback_strategy",
                Lit(&["reasoning_toolcall_retry"]),
                Null,
            ),
        ],
    },
    RendererVariant {
        name: "inkling",
        extra: false,
        fields: &[
            f("reasoning_effort", StrOrFloat, F(0.9)),
            f("image_cache_max", Int, I(256)),
            f("audio_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "kimi-k2",
        extra: false,
        fields: &[f("enable_thinking", Bool, B(true))],
    },
    RendererVariant {
        name: "kimi-k2.5",
        extra: false,
        fields: &[
            f("thinking", Bool, B(true)),
            f("image_cache_max", Int, I(256)),
        ],
    },
    RendererVariant {
        name: "laguna-xs.2",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(false)),
            f("render_assistant_messages_raw", Bool, B(false)),
        ],
    },
    RendererVariant {
        name: "laguna-m.1",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(false)),
            f("render_assistant_messages_raw", Bool, B(false)),
        ],
    },
    RendererVariant {
        name: "laguna-xs-2.1",
        extra: false,
        fields: &[f("enable_thinking", Bool, B(false))],
    },
    RendererVariant {
        name: "laguna-s-2.1",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("preserve_thinking", Bool, B(false)),
        ],
    },
    RendererVariant {
        name: "llama-3",
        extra: false,
        fields: &[
            f("date_string", Str, S("26 Jul 2024")),
            f("tools_in_user_message", Bool, B(true)),
        ],
    },
    RendererVariant {
        name: "minimax-m2",
        extra: false,
        fields: &[f(
            "model_identity",
            Str,
            S("You are a helpful assistant. Your name is MiniMax-M2.5 and is built by MiniMax."),
        )],
    },
    RendererVariant {
        name: "nemotron-3",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("truncate_history_thinking", Bool, B(true)),
            f("low_effort", Bool, B(false)),
        ],
    },
    RendererVariant {
        name: "nemotron-3-ultra",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("truncate_history_thinking", Bool, B(true)),
            f("medium_effort", Bool, B(false)),
        ],
    },
    RendererVariant {
        name: "nemotron-3.5",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(true)),
            f("truncate_history_thinking", Bool, B(true)),
        ],
    },
    RendererVariant {
        name: "deepseek-v3",
        extra: false,
        fields: &[],
    },
    RendererVariant {
        name: "deepseek-r1",
        extra: false,
        fields: &[],
    },
    RendererVariant {
        name: "deepseek-v4",
        extra: false,
        fields: &[
            f("enable_thinking", Bool, B(false)),
            f("drop_thinking", Bool, B(true)),
            f("reasoning_effort", Lit(&["low", "high", "max"]), S("low")),
        ],
    },
    RendererVariant {
        name: "custom",
        extra: true,
        fields: &[f("import_path", Str, Req)],
    },
];

/// Model ids that `renderer.name = "auto"` resolves, and the renderer each maps to.
pub static MODEL_RENDERER_MAP: &[(&str, &str)] = &[
    ("Qwen/Qwen3-0.6B", "qwen3"),
    ("Qwen/Qwen3-1.7B", "qwen3"),
    ("Qwen/Qwen3-4B", "qwen3"),
    ("Qwen/Qwen3-4B-Instruct-2507", "qwen3"),
    ("Qwen/Qwen3-4B-Thinking-2507", "qwen3"),
    ("Qwen/Qwen3-8B", "qwen3"),
    ("Qwen/Qwen3-14B", "qwen3"),
    ("Qwen/Qwen3-32B", "qwen3"),
    ("Qwen/Qwen3-30B-A3B", "qwen3"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "qwen3"),
    ("Qwen/Qwen3-30B-A3B-Thinking-2507", "qwen3"),
    ("Qwen/Qwen3-235B-A22B", "qwen3"),
    ("PrimeIntellect/Qwen3-0.6B", "prime-qwen3"),
    ("PrimeIntellect/Qwen3-1.7B", "prime-qwen3"),
    ("Qwen/Qwen3.5-0.8B", "qwen3.5"),
    ("Qwen/Qwen3.5-2B", "qwen3.5"),
    ("Qwen/Qwen3.5-4B", "qwen3.5"),
    ("Qwen/Qwen3.5-9B", "qwen3.5"),
    ("Qwen/Qwen3.5-35B-A3B", "qwen3.5"),
    ("Qwen/Qwen3.5-122B-A10B", "qwen3.5"),
    ("Qwen/Qwen3.5-397B-A17B", "qwen3.5"),
    ("Qwen/Qwen3.6-35B-A3B", "qwen3.6"),
    ("Qwen/Qwen3.8-27B", "qwen3.8"),
    ("Qwen/Qwen3.8-Flash-Next", "qwen3.8"),
    ("Qwen/Qwen3-VL-4B-Instruct", "qwen3-vl"),
    ("Qwen/Qwen3-VL-8B-Instruct", "qwen3-vl"),
    ("Qwen/Qwen3-VL-30B-A3B-Instruct", "qwen3-vl"),
    ("google/gemma-4-E2B-it", "gemma4"),
    ("google/gemma-4-E4B-it", "gemma4"),
    ("google/gemma-4-26B-A4B-it", "gemma4"),
    ("google/gemma-4-31B-it", "gemma4"),
    ("zai-org/GLM-5", "glm-5"),
    ("zai-org/GLM-5-FP8", "glm-5"),
    ("zai-org/GLM-4.7-Flash", "glm-5"),
    ("zai-org/GLM-5.1", "glm-5.1"),
    ("zai-org/GLM-5.3", "glm-5.3"),
    ("zai-org/GLM-5.3-BF16", "glm-5.3"),
    ("THUDM/GLM-4.5-Air", "glm-4.5"),
    ("zai-org/GLM-4.5-Air", "glm-4.5"),
    ("MiniMaxAI/MiniMax-M2", "minimax-m2"),
    ("MiniMaxAI/MiniMax-M2.5", "minimax-m2"),
    ("deepseek-ai/DeepSeek-V3", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-V3-Base", "deepseek-v3"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("deepseek-ai/DeepSeek-R1-0528", "deepseek-r1"),
    ("deepseek-ai/DeepSeek-V4-Flash-0731", "deepseek-v4"),
    ("moonshotai/Kimi-K2-Instruct", "kimi-k2"),
    ("moonshotai/Kimi-K2.5", "kimi-k2.5"),
    ("moonshotai/Kimi-K2.6", "kimi-k2.5"),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nemotron-3"),
    (
        "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16",
        "nemotron-3",
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16",
        "nemotron-3-ultra",
    ),
    (
        "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8",
        "nemotron-3-ultra",
    ),
    (
        "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-BF16",
        "nemotron-3.5",
    ),
    (
        "nvidia/NVIDIA-Nemotron-3.5-Super-EA-09112026",
        "nemotron-3.5",
    ),
    ("meta-llama/Llama-3.2-1B-Instruct", "llama-3"),
    ("meta-llama/Llama-3.2-3B-Instruct", "llama-3"),
    ("poolside/Laguna-XS.2", "laguna-xs.2"),
    ("poolside/Laguna-M.1", "laguna-m.1"),
    ("poolside/Laguna-XS-2.1", "laguna-xs-2.1"),
    ("poolside/Laguna-S-2.1", "laguna-s-2.1"),
    ("openai/gpt-oss-20b", "gpt-oss"),
    ("openai/gpt-oss-120b", "gpt-oss"),
    ("thinkingmachines/Inkling", "inkling"),
    ("thinkingmachines/Inkling-Small", "inkling"),
    ("tencent/Hy3", "hy3"),
    ("tencent/Hy3-FP8", "hy3"),
];

/// The variant called `name`.
pub fn renderer_variant(name: &str) -> Option<&'static RendererVariant> {
    RENDERERS.iter().find(|r| r.name == name)
}

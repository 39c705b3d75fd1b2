//! The structural check: walks a TOML document against the schema tables, reporting unknown
//! keys where extras are forbidden, wrong types (after lax coercion), missing required keys,
//! union tags, literals and numeric bounds — with pydantic's wording and locations (union
//! tags dropped from paths, list items by index).

use toml::{Table, Value};

use crate::report::Finding;
use crate::schema::{
    self, Field, Model, RendererVariant, Special, Ty, Union, num, renderer_variant,
};
use crate::secrets::show_value;
use crate::value::{as_bool, as_float, as_int, is_none, join};

/// Where a propagated value came from, so errors on it can say so.
pub(crate) type Provenance = Vec<(String, String)>;

/// Accumulates findings and the path-typed values seen (for the practice checks).
pub(crate) struct Walker<'a> {
    pub findings: Vec<Finding>,
    /// `(path, value)` of every `path(str)` field set in the file.
    pub path_values: Vec<(String, String)>,
    provenance: &'a Provenance,
}

static NAME_FIELD: Field = Field::new("name", Ty::Str, schema::Dv::Req);

impl<'a> Walker<'a> {
    pub fn new(provenance: &'a Provenance) -> Self {
        Walker {
            findings: Vec::new(),
            path_values: Vec::new(),
            provenance,
        }
    }

    fn err(&mut self, path: &str, message: impl Into<String>, hint: Option<String>) {
        let mut f = Finding::error(path, message);
        let from = self
            .provenance
            .iter()
            .find(|(dst, _)| path == dst || path.starts_with(&format!("{dst}.")))
            .map(|(_, src)| src.clone());
        let hint = match (hint, from) {
            (Some(h), Some(src)) => Some(format!("{h} (the value comes from the shared `{src}`)")),
            (None, Some(src)) => Some(format!("The value comes from the shared `{src}`.")),
            (h, None) => h,
        };
        f.hint = hint;
        self.findings.push(f);
    }

    /// Walk `table` as an instance of `model` located at `path`.
    pub fn model(&mut self, table: &Table, model: &'static Model, path: &str) {
        self.fields(
            table,
            &[model.fields],
            model.extra,
            model.special,
            path,
            model.name,
        );
    }

    fn fields(
        &mut self,
        table: &Table,
        groups: &[&'static [Field]],
        extra: bool,
        special: Special,
        path: &str,
        class: &str,
    ) {
        let lookup = |key: &str| -> Option<&'static Field> {
            groups
                .iter()
                .flat_map(|g| g.iter())
                .find(|f| f.matches(key))
        };
        for (key, value) in table {
            let normalised;
            let key_for_lookup = if special == Special::Vllm && key.contains('-') {
                normalised = key.replace('-', "_");
                normalised.as_str()
            } else {
                key.as_str()
            };
            let p = join(path, key);
            match lookup(key_for_lookup) {
                Some(field) => self.field(value, field, &p),
                None if special == Special::Env => self.env_extra(key, value, &p),
                None if extra => {}
                None => {
                    let keys: Vec<&str> = groups
                        .iter()
                        .flat_map(|g| g.iter())
                        .map(|f| f.key)
                        .collect();
                    let hint = unknown_key_hint(path, key, &keys, class);
                    self.err(&p, "Extra inputs are not permitted", Some(hint));
                }
            }
        }
        for field in groups.iter().flat_map(|g| g.iter()) {
            if field.def == schema::Dv::Req
                && !table.contains_key(field.key)
                && !field.alias.is_some_and(|a| table.contains_key(a))
            {
                let p = join(path, field.key);
                self.err(
                    &p,
                    "Field required",
                    Some(format!(
                        "`{}` has no default in {class}; set it.",
                        field.key
                    )),
                );
            }
        }
    }

    fn env_extra(&mut self, key: &str, value: &Value, p: &str) {
        if key == "harness" {
            self.err(
                p,
                "a harness belongs to a seat, not to the env",
                Some("Move it under the seat, e.g. `[...env.agent.harness]`.".into()),
            );
            return;
        }
        match value {
            // Any other table is an agent seat (`agent`, or a multi-agent env's own names).
            Value::Table(t) => self.model(t, schema::tables_role(), p),
            _ => self.findings.push(
                Finding::info(p, format!("`{key}` is not a base env key"))
                    .hint("It is valid only if the env plugin declares it; the platform checks it with the plugin installed."),
            ),
        }
    }

    /// Check one field's value.
    pub fn field(&mut self, value: &Value, field: &'static Field, path: &str) {
        if is_none(value) {
            if !field.null {
                let msg = null_message(field.ty);
                self.err(
                    path,
                    msg,
                    Some(format!("`{}` cannot be null (\"None\") here.", field.key)),
                );
            }
            return;
        }
        self.ty(value, field.ty, Some(field), path);
    }

    fn bounds(&mut self, x: f64, field: Option<&Field>, path: &str) {
        let Some(f) = field else { return };
        let checks = [
            (f.ge, "greater than or equal to", x >= f.ge.unwrap_or(0.0)),
            (f.gt, "greater than", x > f.gt.unwrap_or(0.0)),
            (f.le, "less than or equal to", x <= f.le.unwrap_or(0.0)),
            (f.lt, "less than", x < f.lt.unwrap_or(0.0)),
        ];
        for (bound, words, ok) in checks {
            if let Some(b) = bound
                && !ok
            {
                self.err(
                    path,
                    format!("Input should be {words} {}", num(b)),
                    Some(format!(
                        "`{}` must be {}; got {}.",
                        f.key,
                        f.bounds_text(),
                        num(x)
                    )),
                );
                return;
            }
        }
    }

    fn ty(&mut self, value: &Value, ty: Ty, field: Option<&'static Field>, path: &str) {
        let key = field.map_or("", |f| f.key);
        match ty {
            Ty::Str => {
                if !value.is_str() {
                    self.err(
                        path,
                        "Input should be a valid string",
                        Some(got(key, value)),
                    );
                }
            }
            Ty::Path => match value {
                Value::String(s) => self.path_values.push((path.to_string(), s.clone())),
                _ => self.err(
                    path,
                    "Input should be a valid string",
                    Some(got(key, value)),
                ),
            },
            Ty::Int => match as_int(value) {
                Ok(i) => self.bounds(i as f64, field, path),
                Err(e) => self.err(path, e.message(), Some(got(key, value))),
            },
            Ty::Float => match as_float(value) {
                Some(x) if x.is_nan() && field.is_some_and(has_bounds) => self.err(
                    path,
                    "Input should be a finite number",
                    Some(got(key, value)),
                ),
                Some(x) => self.bounds(x, field, path),
                None => self.err(
                    path,
                    "Input should be a valid number, unable to parse string as a number",
                    Some(got(key, value)),
                ),
            },
            Ty::Bool => {
                if as_bool(value).is_none() {
                    self.err(
                        path,
                        "Input should be a valid boolean",
                        Some(format!("Use true or false; {}", got(key, value))),
                    );
                }
            }
            Ty::Lit(values) => self.literal(value, values, key, path),
            Ty::IntOr(lit) => {
                let ok = value.as_str() == Some(lit) || as_int(value).is_ok();
                if !ok {
                    self.err(
                        path,
                        format!("Input should be a valid integer or '{lit}'"),
                        Some(got(key, value)),
                    );
                }
            }
            Ty::StrOrFloat => {
                if !value.is_str() && as_float(value).is_none() {
                    self.err(path, "Input should be a valid string or number", None);
                }
            }
            Ty::ListStr | Ty::ListInt | Ty::ListFloat | Ty::ListLit(_) => {
                self.scalar_list(value, ty, key, path)
            }
            Ty::DictStr | Ty::DictAny | Ty::DictFloat | Ty::DictAnyOrStr => {
                self.scalar_dict(value, ty, key, path)
            }
            Ty::Any => {}
            Ty::Model(m) => match value.as_table() {
                Some(t) => self.model(t, m, path),
                None => self.not_a_table(path, m.name, key, value),
            },
            Ty::DictOf(m) => self.dict_of(value, m, key, path),
            Ty::ListOf(m) => self.list_of(value, m, key, path),
            Ty::Union(u, inject) => match value.as_table() {
                Some(t) => self.union(t, u, inject, path),
                None => self.not_a_table(path, "a tagged table", key, value),
            },
            Ty::Renderer => match value.as_table() {
                Some(t) => self.renderer(t, path),
                None => self.not_a_table(path, "a renderer table", key, value),
            },
            Ty::BoolOrModel(m) => match value {
                Value::Boolean(_) => {}
                Value::Table(t) => self.model(t, m, path),
                _ => self.not_a_table(path, m.name, key, value),
            },
            Ty::PolicyOr(m) => match value {
                Value::String(s) if s == "policy" => {}
                Value::Table(t) => self.model(t, m, path),
                _ => self.err(
                    path,
                    "Input should be 'policy' or a frozen model table",
                    Some(
                        "Use `source = \"policy\"`, or a table with `name` and `base_url`.".into(),
                    ),
                ),
            },
        }
    }

    /// A list of scalars (`list[str]`, `list[int]`, `list[float]`, a list of literals).
    fn scalar_list(&mut self, value: &Value, ty: Ty, key: &str, path: &str) {
        let Some(items) = value.as_array() else {
            self.err(path, "Input should be a valid list", Some(got(key, value)));
            return;
        };
        for (i, item) in items.iter().enumerate() {
            let p = join(path, &i.to_string());
            match ty {
                Ty::ListStr if !item.is_str() => {
                    self.err(&p, "Input should be a valid string", None)
                }
                Ty::ListInt => {
                    if let Err(e) = as_int(item) {
                        self.err(&p, e.message(), None)
                    }
                }
                Ty::ListFloat if as_float(item).is_none() => {
                    self.err(&p, "Input should be a valid number", None)
                }
                Ty::ListLit(values) => self.literal(item, values, key, &p),
                _ => {}
            }
        }
    }

    /// A dictionary of scalars (or, for `dict | str`, a string).
    fn scalar_dict(&mut self, value: &Value, ty: Ty, key: &str, path: &str) {
        let Some(t) = value.as_table() else {
            if matches!(ty, Ty::DictAnyOrStr) && value.is_str() {
                return;
            }
            self.err(
                path,
                "Input should be a valid dictionary",
                Some(got(key, value)),
            );
            return;
        };
        for (k, v) in t {
            let p = join(path, k);
            match ty {
                Ty::DictStr if !v.is_str() => self.err(
                    &p,
                    "Input should be a valid string",
                    Some(format!("Values of `{key}` are strings; quote it.")),
                ),
                Ty::DictFloat if as_float(v).is_none() => {
                    self.err(&p, "Input should be a valid number", None)
                }
                _ => {}
            }
        }
    }

    /// A dictionary of model tables (`dict[str, Model]`).
    fn dict_of(&mut self, value: &Value, m: &'static Model, key: &str, path: &str) {
        match value.as_table() {
            Some(t) => {
                for (k, v) in t {
                    let p = join(path, k);
                    match v.as_table() {
                        Some(inner) => self.model(inner, m, &p),
                        None => self.not_a_table(&p, m.name, k, v),
                    }
                }
            }
            None => self.err(
                path,
                "Input should be a valid dictionary",
                Some(got(key, value)),
            ),
        }
    }

    /// A list of model tables (`list[Model]`, written `[[path]]`).
    fn list_of(&mut self, value: &Value, m: &'static Model, key: &str, path: &str) {
        match value.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = join(path, &i.to_string());
                    match item.as_table() {
                        Some(t) => self.model(t, m, &p),
                        None => self.not_a_table(&p, m.name, key, item),
                    }
                }
            }
            None => self.err(
                path,
                "Input should be a valid list",
                Some(format!("Write each entry as a `[[{path}]]` table.")),
            ),
        }
    }

    fn not_a_table(&mut self, path: &str, what: &str, key: &str, value: &Value) {
        self.err(
            path,
            format!("Input should be a valid dictionary or instance of {what}"),
            Some(format!("`{key}` is a table; {}", got(key, value))),
        );
    }

    fn literal(&mut self, value: &Value, values: &[&str], key: &str, path: &str) {
        if value.as_str().is_some_and(|s| values.contains(&s)) {
            return;
        }
        let hint = match value.as_str() {
            Some(s) => match values.iter().find(|v| v.eq_ignore_ascii_case(s)) {
                Some(v) => format!("Values are case-sensitive: use '{v}'."),
                None => got(key, value),
            },
            None => got(key, value),
        };
        self.err(
            path,
            format!("Input should be {}", or_list(values)),
            Some(hint),
        );
    }

    fn union(&mut self, t: &Table, u: &'static Union, inject: Option<&'static str>, path: &str) {
        let tags: Vec<&str> = u.tags().collect();
        let variant = match t.get(u.tag) {
            None => match inject.and_then(|tag| u.variant(tag)) {
                Some(m) => m,
                None => {
                    self.err(
                        path,
                        format!("Unable to extract tag using discriminator '{}'", u.tag),
                        Some(format!(
                            "`[{path}]` needs `{} = ` one of {} (it is not filled in here).",
                            u.tag,
                            or_list(&tags)
                        )),
                    );
                    return;
                }
            },
            Some(Value::String(s)) => match u.variant(s) {
                Some(m) => m,
                None => {
                    self.err(
                        path,
                        format!(
                            "Input tag {} found using '{}' does not match any of the expected tags: {}",
                            show_value(u.tag, &Value::String(s.clone())),
                            u.tag,
                            tags.iter().map(|t| format!("'{t}'")).collect::<Vec<_>>().join(", ")
                        ),
                        tags.iter()
                            .find(|t| t.eq_ignore_ascii_case(s))
                            .map(|t| format!("Tags are case-sensitive: use '{t}'.")),
                    );
                    return;
                }
            },
            Some(other) => {
                self.err(
                    path,
                    format!("Tag '{}' should be a string", u.tag),
                    Some(got(u.tag, other)),
                );
                return;
            }
        };
        self.model(t, variant, path);
    }

    fn renderer(&mut self, t: &Table, path: &str) {
        let names: Vec<&str> = schema::RENDERERS.iter().map(|r| r.name).collect();
        let variant: &RendererVariant = match t.get("name") {
            None => {
                self.err(
                    path,
                    "Unable to extract tag using discriminator 'name'",
                    Some("A renderer table must set `name` (e.g. \"auto\", \"default\", \"qwen3\"); it is never filled in.".to_string()),
                );
                return;
            }
            Some(Value::String(s)) => match renderer_variant(s) {
                Some(v) => v,
                None => {
                    self.err(
                        path,
                        format!(
                            "Input tag {} found using 'name' does not match any of the expected tags",
                            show_value("name", &Value::String(s.clone()))
                        ),
                        Some(format!("Renderer names: {}.", names.join(", "))),
                    );
                    return;
                }
            },
            Some(other) => {
                self.err(
                    path,
                    "Tag 'name' should be a string",
                    Some(got("name", other)),
                );
                return;
            }
        };
        self.fields(
            t,
            &[
                variant.fields,
                std::slice::from_ref(&schema::THINKING_RETENTION),
                std::slice::from_ref(&NAME_FIELD),
            ],
            variant.extra,
            Special::None,
            path,
            "the renderer",
        );
    }
}

fn has_bounds(f: &'static Field) -> bool {
    f.ge.is_some() || f.gt.is_some() || f.le.is_some() || f.lt.is_some()
}

fn null_message(ty: Ty) -> &'static str {
    match ty {
        Ty::Str | Ty::Path => "Input should be a valid string",
        Ty::Int | Ty::IntOr(_) => "Input should be a valid integer",
        Ty::Float => "Input should be a valid number",
        Ty::Bool => "Input should be a valid boolean",
        Ty::ListStr | Ty::ListInt | Ty::ListFloat | Ty::ListLit(_) | Ty::ListOf(_) => {
            "Input should be a valid list"
        }
        Ty::Lit(_) => "Input should be one of the listed values, not null",
        _ => "Input should be a valid dictionary",
    }
}

fn got(key: &str, value: &Value) -> String {
    let kind = match value {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date/time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    };
    match value {
        Value::Array(_) | Value::Table(_) => format!("got {kind}."),
        _ => format!("got {kind}: {}.", show_value(key, value)),
    }
}

/// `'a', 'b' or 'c'`.
pub(crate) fn or_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.len() {
        0 => String::new(),
        1 => quoted[0].clone(),
        n => format!("{} or {}", quoted[..n - 1].join(", "), quoted[n - 1]),
    }
}

/// Keys renamed or moved across prime-rl versions and formats, with where they live now.
const MOVED: &[(&str, &str)] = &[
    (
        "rollouts_per_example",
        "renamed to `group_size` (orchestrator, or per source)",
    ),
    (
        "fused_lm_head_chunk_size",
        "renamed to `fused_lm_head_token_chunk_size`",
    ),
    (
        "learning_rate",
        "the learning rate is `lr` in `[trainer.optim]` (RL) or `[optim]` (SFT)",
    ),
    (
        "lr",
        "the learning rate is `lr` in `[trainer.optim]` (RL) or `[optim]` (SFT)",
    ),
    ("checkpoints", "checkpointing is `[ckpt]`"),
    ("wandb", "W&B is `[monitors.wandb]`"),
    (
        "sampling",
        "sampling is `[orchestrator.train.sampling]` (RL)",
    ),
    (
        "oversampling_factor",
        "removed; see `[orchestrator.concurrency]`",
    ),
    ("max_async_level", "see `orchestrator.max_off_policy_steps`"),
    (
        "parallel",
        "parallelism is `inference.vllm.tensor_parallel_size` / `data_parallel_size`",
    ),
    ("mode", "a top-level `mode` is not read by prime CLI 0.18.0"),
    ("max_tokens", "use `max_completion_tokens`"),
    (
        "lora_alpha",
        "LoRA is `[trainer.model.lora]` (`rank`, `alpha`)",
    ),
    (
        "lora_rank",
        "LoRA is `[trainer.model.lora]` (`rank`, `alpha`)",
    ),
];

fn unknown_key_hint(path: &str, key: &str, known: &[&str], class: &str) -> String {
    let place = if path.is_empty() {
        "the top level".to_string()
    } else {
        format!("`[{path}]`")
    };
    let mut hint = format!("`{key}` is not a key of {place} ({class})");
    if (path == "deployment")
        && matches!(
            key,
            "num_train_nodes" | "num_infer_nodes" | "num_infer_replicas" | "nodes_per_fsdp_group"
        )
    {
        return format!(
            "{hint}: multi-node keys need `type = \"multi_node\"` in `[deployment]` (the default is single_node)."
        );
    }
    if (path.ends_with("train") || path.ends_with("eval")) && key == "env" {
        return format!(
            "{hint}: environments are listed as `[[{path}.source]]` entries with an `env` table."
        );
    }
    if path.is_empty() && matches!(key, "data" | "optim" | "scheduler" | "val") {
        return format!(
            "{hint}: `[{key}]` is an SFT table; an RL config sets it under `[trainer]` (`trainer.{key}`) — or remove `[trainer]`/`[orchestrator]` to make this an SFT config."
        );
    }
    if path.is_empty() && matches!(key, "batch_size" | "group_size" | "token_batch_size") {
        return format!("{hint}: it belongs in `[orchestrator]`.");
    }
    if path == "model" && !known.contains(&key) && known.contains(&"vlm") && known.len() == 2 {
        return format!(
            "{hint}: the shared `[model]` takes only `name` and `vlm`; trainer knobs go in `[trainer.model]`, `seq_len` at the top level."
        );
    }
    if let Some((_, moved)) = MOVED.iter().find(|(k, _)| *k == key) {
        return format!("{hint}: {moved}.");
    }
    let best = known
        .iter()
        .map(|k| (crate::value::edit_distance(key, k), *k))
        .min();
    if let Some((d, k)) = best
        && d <= 2.max(key.len() / 4)
    {
        hint.push_str(&format!("; did you mean `{k}`?"));
        return hint;
    }
    hint.push_str(". Remove it.");
    hint
}

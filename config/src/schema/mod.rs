//! The prime-rl config schema at commit 559b4477 as data: one [`Model`] per config class
//! (its fields, their types, defaults and bounds, whether unknown keys are allowed), unions
//! keyed by a tag, and the renderer union of Appendix B. The walker and the cross-field rules
//! read these tables instead of hard-coding one check per key.

mod renderer;
mod tables;

pub use renderer::{
    MODEL_RENDERER_MAP, RENDERERS, RendererVariant, THINKING_RETENTION, renderer_variant,
};
pub use tables::{RL_ROOT, SFT_ROOT};

/// The type of a field, as far as validation needs it.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    /// `str`.
    Str,
    /// `path(str)`: a plain string naming a file or directory.
    Path,
    /// `int` (lax: integral floats, bools and numeric strings accepted).
    Int,
    /// `float` (lax: ints, bools and numeric strings accepted).
    Float,
    /// `bool` (lax: 0/1 and yes/no/true/false/on/off strings accepted).
    Bool,
    /// A string literal out of a fixed set (case-sensitive).
    Lit(&'static [&'static str]),
    /// `int | "<literal>"` (e.g. `ep = "auto"`, `fused_lm_head_token_chunk_size = "disabled"`).
    IntOr(&'static str),
    /// `str | float`.
    StrOrFloat,
    /// `list[str]`.
    ListStr,
    /// `list[int]`.
    ListInt,
    /// `list[float]`.
    ListFloat,
    /// `list[<literal>]`.
    ListLit(&'static [&'static str]),
    /// `dict[str, str]`.
    DictStr,
    /// `dict[str, Any]`.
    DictAny,
    /// `dict[str, float]`.
    DictFloat,
    /// `dict[str, Any] | str`.
    DictAnyOrStr,
    /// Anything (plugin-owned values the static schema cannot type).
    Any,
    /// A nested config table.
    Model(&'static Model),
    /// `dict[str, <config>]`.
    DictOf(&'static Model),
    /// `list[<config>]` (arrays of tables).
    ListOf(&'static Model),
    /// A union keyed by a tag; the second member is the tag injected when the table has none.
    Union(&'static Union, Option<&'static str>),
    /// The renderer union, keyed by `name` (never injected).
    Renderer,
    /// `true` → the table with defaults, `false` → null, or the table.
    BoolOrModel(&'static Model),
    /// The string `"policy"` or a frozen-model table.
    PolicyOr(&'static Model),
}

/// A discriminated union.
#[derive(Debug)]
pub struct Union {
    /// The tag key (`type`).
    pub tag: &'static str,
    /// `(tag value, variant)` pairs.
    pub variants: &'static [(&'static str, &'static Model)],
}

impl Union {
    /// The variant for a tag value.
    pub fn variant(&self, tag: &str) -> Option<&'static Model> {
        self.variants
            .iter()
            .find(|(t, _)| *t == tag)
            .map(|(_, m)| *m)
    }

    /// The tag values, in declaration order.
    pub fn tags(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.variants.iter().map(|(t, _)| *t)
    }
}

/// A field's default, as the appendix tables give it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dv {
    /// No default: the key is required.
    Req,
    /// `null`.
    Null,
    /// An integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A bool.
    Bool(bool),
    /// A string.
    Str(&'static str),
    /// A config instance built from its own defaults (the sub-table is on by default).
    Obj,
    /// A list or dict default, not needed by the rules.
    Other,
}

/// One key of a config table.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    /// The TOML key.
    pub key: &'static str,
    /// Its type.
    pub ty: Ty,
    /// Whether null (the string `"None"`) is accepted.
    pub null: bool,
    /// Its default.
    pub def: Dv,
    /// `>=` bound.
    pub ge: Option<f64>,
    /// `>` bound.
    pub gt: Option<f64>,
    /// `<=` bound.
    pub le: Option<f64>,
    /// `<` bound.
    pub lt: Option<f64>,
    /// An alternative key accepted for the same field.
    pub alias: Option<&'static str>,
}

impl Field {
    /// A field with no bounds, not nullable.
    pub const fn new(key: &'static str, ty: Ty, def: Dv) -> Self {
        Field {
            key,
            ty,
            null: false,
            def,
            ge: None,
            gt: None,
            le: None,
            lt: None,
            alias: None,
        }
    }
    /// Accept null.
    pub const fn null(mut self) -> Self {
        self.null = true;
        self
    }
    /// `>= v`.
    pub const fn ge(mut self, v: f64) -> Self {
        self.ge = Some(v);
        self
    }
    /// `> v`.
    pub const fn gt(mut self, v: f64) -> Self {
        self.gt = Some(v);
        self
    }
    /// `<= v`.
    pub const fn le(mut self, v: f64) -> Self {
        self.le = Some(v);
        self
    }
    /// `< v`.
    pub const fn lt(mut self, v: f64) -> Self {
        self.lt = Some(v);
        self
    }
    /// Also accept `alias` as the key.
    pub const fn alias(mut self, alias: &'static str) -> Self {
        self.alias = Some(alias);
        self
    }

    /// Whether `key` names this field.
    pub fn matches(&self, key: &str) -> bool {
        self.key == key || self.alias == Some(key)
    }

    /// The bounds as words, e.g. `>= 1, <= 65535`.
    pub fn bounds_text(&self) -> String {
        let mut parts = Vec::new();
        if let Some(v) = self.ge {
            parts.push(format!(">= {}", num(v)));
        }
        if let Some(v) = self.gt {
            parts.push(format!("> {}", num(v)));
        }
        if let Some(v) = self.le {
            parts.push(format!("<= {}", num(v)));
        }
        if let Some(v) = self.lt {
            parts.push(format!("< {}", num(v)));
        }
        parts.join(", ")
    }
}

/// A number as pydantic prints bounds: `1`, `0.5`.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// A config class: its fields and whether it accepts unknown keys.
#[derive(Debug)]
pub struct Model {
    /// The prime-rl class name (for messages).
    pub name: &'static str,
    /// Its fields.
    pub fields: &'static [Field],
    /// Unknown keys allowed (`inference.vllm`, plugin-extensible verifiers tables).
    pub extra: bool,
    /// Extra handling the walker applies (verifiers env roles).
    pub special: Special,
}

/// Extra handling for tables the static schema cannot fully describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// None.
    None,
    /// A verifiers env: unknown table keys are agent seats (roles); `harness` is refused here.
    Env,
    /// `inference.vllm`: kebab-case keys are read as snake_case.
    Vllm,
}

impl Model {
    /// The field named `key` (or aliased so).
    pub fn field(&self, key: &str) -> Option<&'static Field>
    where
        Self: 'static,
    {
        self.fields.iter().find(|f| f.matches(key))
    }
}

/// The agent-seat table of a verifiers env.
pub(crate) fn tables_role() -> &'static Model {
    &tables::ROLE
}

/// The root schema for a mode.
pub fn root(mode: crate::Mode) -> &'static Model {
    match mode {
        crate::Mode::Rl => &RL_ROOT,
        crate::Mode::Sft => &SFT_ROOT,
    }
}

/// Every distinct model reachable from `root`, with one representative dotted path each
/// (list items are written without an index). Used by tests and by tooling that lists keys.
pub fn walk_models(root: &'static Model) -> Vec<(String, &'static Model, Option<&'static str>)> {
    let mut out: Vec<(String, &'static Model, Option<&'static str>)> = Vec::new();
    fn visit(
        path: String,
        model: &'static Model,
        variant: Option<&'static str>,
        out: &mut Vec<(String, &'static Model, Option<&'static str>)>,
        depth: usize,
    ) {
        if depth > 16 {
            return;
        }
        out.push((path.clone(), model, variant));
        for f in model.fields {
            let p = if path.is_empty() {
                f.key.to_string()
            } else {
                format!("{path}.{}", f.key)
            };
            match f.ty {
                Ty::Model(m)
                | Ty::DictOf(m)
                | Ty::ListOf(m)
                | Ty::BoolOrModel(m)
                | Ty::PolicyOr(m) => visit(p, m, None, out, depth + 1),
                Ty::Union(u, _) => {
                    for (tag, m) in u.variants {
                        visit(p.clone(), m, Some(tag), out, depth + 1);
                    }
                }
                _ => {}
            }
        }
    }
    visit(String::new(), root, None, &mut out, 0);
    out
}

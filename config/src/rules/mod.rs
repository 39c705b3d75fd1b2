//! Cross-field rules (§6 of the reference) and the hosted policy (§7). They read the
//! propagated document through [`View`], which resolves explicit values with lax coercion
//! and falls back to the schema tables' defaults, so the rules name no default themselves.
//! A rule for a table runs only when that table had no earlier error, as pydantic runs a
//! model validator only once the model's fields are valid.

mod rl;
mod sft;
mod shared;

pub(crate) use rl::infer_nodes;

use toml::{Table, Value};

use crate::report::{Finding, Mode, Severity};
use crate::schema::{self, Dv, Field, Model, Ty};
use crate::value::{as_bool, as_float, as_int, get, is_none};

/// Effective values of a document, defaults taken from the schema.
pub(crate) struct View<'a> {
    pub doc: &'a Table,
    root: &'static Model,
}

impl<'a> View<'a> {
    pub fn new(doc: &'a Table, mode: Mode) -> Self {
        View {
            doc,
            root: schema::root(mode),
        }
    }

    /// The schema field at a dotted path, following union variants as written (or injected).
    pub fn field_at(&self, path: &str) -> Option<&'static Field> {
        let segs: Vec<&str> = path.split('.').collect();
        let mut model = self.root;
        let mut i = 0;
        loop {
            let field = model.field(segs[i])?;
            if i + 1 == segs.len() {
                return Some(field);
            }
            let here = segs[..=i].join(".");
            let (next, skip) = match field.ty {
                Ty::Model(m) | Ty::BoolOrModel(m) | Ty::PolicyOr(m) => (m, 0),
                Ty::DictOf(m) | Ty::ListOf(m) => (m, 1),
                Ty::Union(u, inject) => {
                    let tag = match get(self.doc, &format!("{here}.{}", u.tag)) {
                        Some(Value::String(s)) => Some(s.as_str()),
                        Some(_) => None,
                        None => inject,
                    };
                    (u.variant(tag?)?, 0)
                }
                _ => return None,
            };
            model = next;
            i += 1 + skip;
            if i >= segs.len() {
                return None;
            }
        }
    }

    /// The value as written (`"None"` included), if any.
    pub fn raw(&self, path: &str) -> Option<&'a Value> {
        get(self.doc, path)
    }

    /// Written and not null.
    pub fn set(&self, path: &str) -> bool {
        self.raw(path).is_some_and(|v| !is_none(v))
    }

    /// Whether an optional sub-table is on: written as a table (or `true`), or absent with a
    /// default instance.
    pub fn on(&self, path: &str) -> bool {
        match self.raw(path) {
            Some(Value::Table(_)) => true,
            Some(Value::Boolean(b)) => *b,
            Some(_) => false,
            None => self.field_at(path).is_some_and(|f| f.def == Dv::Obj),
        }
    }

    pub fn int(&self, path: &str) -> Option<i64> {
        match self.raw(path) {
            Some(v) if is_none(v) => None,
            Some(v) => as_int(v).ok(),
            None => match self.field_at(path)?.def {
                Dv::Int(i) => Some(i),
                _ => None,
            },
        }
    }

    pub fn float(&self, path: &str) -> Option<f64> {
        match self.raw(path) {
            Some(v) if is_none(v) => None,
            Some(v) => as_float(v),
            None => match self.field_at(path)?.def {
                Dv::Float(x) => Some(x),
                Dv::Int(i) => Some(i as f64),
                _ => None,
            },
        }
    }

    pub fn bool(&self, path: &str) -> Option<bool> {
        match self.raw(path) {
            Some(v) if is_none(v) => None,
            Some(v) => as_bool(v),
            None => match self.field_at(path)?.def {
                Dv::Bool(b) => Some(b),
                _ => None,
            },
        }
    }

    pub fn flag(&self, path: &str) -> bool {
        self.bool(path).unwrap_or(false)
    }

    pub fn str(&self, path: &str) -> Option<&'a str> {
        match self.raw(path) {
            Some(Value::String(s)) if s == "None" => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => None,
            None => match self.field_at(path)?.def {
                Dv::Str(s) => Some(s),
                _ => None,
            },
        }
    }

    /// The union variant at `path`: its written tag, or the injected default when the table
    /// or the tag is absent. None when the union is off or unknown.
    pub fn tag(&self, path: &str) -> Option<&'a str> {
        let field = self.field_at(path)?;
        let Ty::Union(u, inject) = field.ty else {
            return None;
        };
        match self.raw(path) {
            Some(Value::Table(t)) => match t.get(u.tag) {
                Some(Value::String(s)) => Some(s.as_str()),
                Some(_) => None,
                None => inject,
            },
            Some(_) => None,
            None if field.def == Dv::Obj => inject,
            None => None,
        }
    }
}

/// Collects rule findings, gating each table's rules on it having no error yet.
pub(crate) struct Ctx {
    pub findings: Vec<Finding>,
}

impl Ctx {
    /// No error so far at `scope` or below it (the root scope `""`: none at all).
    pub fn ok(&self, scope: &str) -> bool {
        !self.findings.iter().any(|f| {
            f.severity == Severity::Error
                && (scope.is_empty()
                    || f.path == scope
                    || (f.path.starts_with(scope) && f.path[scope.len()..].starts_with('.')))
        })
    }

    pub fn error(&mut self, path: &str, message: impl Into<String>, hint: impl Into<String>) {
        self.findings.push(Finding::error(path, message).hint(hint));
    }
}

/// Run the cross-field rules of `mode` over the propagated document; `findings` holds the
/// structural findings so far and receives the rule findings.
pub(crate) fn run(mode: Mode, doc: &Table, findings: Vec<Finding>) -> Vec<Finding> {
    let view = View::new(doc, mode);
    let mut ctx = Ctx { findings };
    match mode {
        Mode::Rl => rl::run(&view, &mut ctx),
        Mode::Sft => sft::run(&view, &mut ctx),
    }
    ctx.findings
}

/// The hosted policy of the CLI's schema worker (§7), independent of the schema verdict.
pub(crate) fn hosted_policy(mode: Mode, doc: &Table) -> Vec<Finding> {
    let view = View::new(doc, mode);
    let mut out = Vec::new();
    if mode == Mode::Rl {
        rl::hosted_policy(&view, &mut out);
    }
    out
}

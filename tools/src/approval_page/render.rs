//! The approval page's HTML. Every string that did not come from this server's own computation
//! (config values, run and team names, the platform's texts) is made one line with control and
//! bidi characters replaced (`factory_policies::untrusted::one_line`) and then HTML-escaped, so
//! it can neither inject markup nor reorder or imitate the figures a person decides on. No
//! script; one stylesheet from the same origin; nothing secret (secrets by name only; the
//! token appears only in the form's hidden field, which the page's CSP keeps on this origin).

use factory_policies::{store::PlanRecord, untrusted::one_line};

use super::PATH_PREFIX;
use crate::launch::{PlanBody, PlannedRequest};

/// Longest single value shown.
const FIELD_CHARS: usize = 300;
/// Most lines of a config or a difference shown.
const MAX_LINES: usize = 400;

/// `text` safe inside HTML text or a double-quoted attribute.
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An untrusted value as one line (escape it before it goes into HTML).
fn line(text: &str) -> String {
    one_line(text, FIELD_CHARS)
}

/// An untrusted value as one safe line of HTML.
fn field(text: &str) -> String {
    esc(&line(text))
}

/// Untrusted multi-line text (a config, a difference) as safe lines for a `<pre>`.
fn block(text: &str) -> String {
    let mut lines: Vec<String> = text
        .lines()
        .take(MAX_LINES)
        .map(|l| esc(&one_line(l, FIELD_CHARS)))
        .collect();
    if text.lines().count() > MAX_LINES {
        lines.push(format!(
            "… ({} more lines)",
            text.lines().count() - MAX_LINES
        ));
    }
    lines.join("\n")
}

fn shell(title: &str, main: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <meta name=\"referrer\" content=\"same-origin\">\
         <title>{title}</title><link rel=\"stylesheet\" href=\"{PATH_PREFIX}/style.css\"></head>\
         <body><main>{main}</main></body></html>\n",
        title = esc(title)
    )
}

/// A page that only says something (a refusal, a recorded decision).
pub(super) fn message(title: &str, text: &str) -> String {
    shell(
        title,
        &format!("<h1>{}</h1><p id=\"message\">{}</p>", esc(title), esc(text)),
    )
}

/// The facts a person agrees to, as (label, value) rows; one line each, not yet escaped.
fn launch_facts(
    plan: &PlanRecord,
    b: &PlanBody,
    team_name: Option<&str>,
) -> Vec<(&'static str, String, &'static str)> {
    let owner = match &b.team_id {
        Some(id) => format!(
            "team “{}” (id {}) — from {}",
            line(team_name.unwrap_or("name not available")),
            line(id),
            line(&b.owner_source)
        ),
        None => format!("personal account — from {}", line(&b.owner_source)),
    };
    let gpu_type = b
        .gpu_type
        .as_deref()
        .or(b.price.gpu_type.as_deref())
        .map(line)
        .unwrap_or_else(|| "any type".into());
    let gpus = match b.gpus {
        Some(n) => format!("{n} × {gpu_type}"),
        None => format!("not derivable from the config × {gpu_type}"),
    };
    let price = match (b.price.per_hour_usd, b.price.per_gpu_hour_usd) {
        (Some(h), Some(g)) => format!("${h:.2} per hour (${g:.2} per GPU-hour)"),
        (None, Some(g)) => format!("${g:.2} per GPU-hour; hourly total unknown"),
        _ => "unknown".into(),
    };
    let length = match b.max_steps {
        Some(s) => format!("max_steps = {s}; billed per hour until the run ends"),
        None => "NO max_steps: trains and bills until stopped".into(),
    };
    let image = format!(
        "{} · source ref: {}",
        b.request
            .image_tag()
            .map(line)
            .unwrap_or_else(|| "(platform default)".into()),
        b.request
            .source_ref()
            .map(line)
            .unwrap_or_else(|| "(none)".into())
    );
    let volume = match &b.volume {
        Some(v) if v.create => format!(
            "{} — will be CREATED ({}), billable",
            line(&v.name),
            line(&v.size)
        ),
        Some(v) => format!("{} (exists)", line(&v.name)),
        None => "none".into(),
    };
    let secrets = if b.env_names.is_empty() {
        "none".into()
    } else {
        format!(
            "{} (by name; values stay in the server's environment)",
            b.env_names
                .iter()
                .map(|n| line(n))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let mut rows = vec![
        ("Owner", owner, "owner"),
        (
            "Model",
            format!(
                "{} ({})",
                line(b.model.as_deref().unwrap_or("?")),
                line(&b.mode.to_uppercase())
            ),
            "model",
        ),
        ("GPUs", gpus, "gpus"),
        ("Price", price, "price"),
        ("Price basis", line(&b.price.basis), "basis"),
        ("Length", length, "length"),
        ("Image", image, "image"),
        ("Volume", volume, "volume"),
        ("Secrets", secrets, "secrets"),
        (
            "Run name",
            format!(
                "{}{}",
                line(&b.run_name),
                if b.run_name_generated {
                    " (generated)"
                } else {
                    ""
                }
            ),
            "run-name",
        ),
        (
            "Expires",
            plan.expires_at.format("%Y-%m-%d %H:%M UTC").to_string(),
            "expires",
        ),
    ];
    if let Some(from) = &b.resume_from {
        rows.insert(
            0,
            (
                "Resumes",
                format!("{} as a NEW billable run", line(from)),
                "resumes",
            ),
        );
    }
    if let Some(path) = &b.config_path {
        rows.push(("Config file", line(path), "config-path"));
    }
    if !b.overrides.is_empty() {
        rows.push((
            "Set by the assistant",
            line(&b.overrides.join(", ")),
            "overrides",
        ));
    }
    rows
}

/// The plan's config as text (TOML when it can be written as TOML, else JSON).
pub(super) fn config_text(b: &PlanBody) -> String {
    match &b.request {
        PlannedRequest::Create(r) => toml::to_string_pretty(&r.config)
            .unwrap_or_else(|_| serde_json::to_string_pretty(&r.config).unwrap_or_default()),
        PlannedRequest::Resume(_) => String::new(),
    }
}

/// What a person compares between two plans: the facts and the config, as lines.
fn comparable(plan: &PlanRecord, b: &PlanBody) -> String {
    let mut out = String::new();
    for (label, value, _) in launch_facts(plan, b, None) {
        if label == "Expires" {
            continue;
        }
        out.push_str(&format!("{label}: {value}\n"));
    }
    out.push_str(&config_text(b));
    out
}

/// The difference from the previous plan of the same file or name, as safe lines.
fn difference(plan: &PlanRecord, b: &PlanBody, prev: Option<(&PlanRecord, &PlanBody)>) -> String {
    let Some((pp, pb)) = prev else {
        return "<p id=\"difference\">No earlier plan with this config file or run name.</p>"
            .into();
    };
    let old = comparable(pp, pb);
    let new = comparable(plan, b);
    let diff = similar::TextDiff::from_lines(&old, &new);
    let mut lines = Vec::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => continue,
        };
        lines.push(format!("{sign} {}", change.value().trim_end_matches('\n')));
    }
    let head = format!(
        "<p>Compared with plan {} (made {}):</p>",
        field(&pp.id),
        pp.created_at.format("%Y-%m-%d %H:%M UTC")
    );
    if lines.is_empty() {
        return format!("{head}<p id=\"difference\">No difference.</p>");
    }
    let body: Vec<String> = lines
        .into_iter()
        .take(MAX_LINES)
        .map(|l| esc(&one_line(&l, FIELD_CHARS * 2)))
        .collect();
    format!("{head}<pre id=\"difference\">{}</pre>", body.join("\n"))
}

/// The page for a plan, with the Approve and Decline forms.
pub(super) fn plan_page(
    plan: &PlanRecord,
    body: Option<&PlanBody>,
    team_name: Option<&str>,
    prev: Option<(&PlanRecord, &PlanBody)>,
    token: &str,
) -> String {
    let (title, facts, config, diff) = match body {
        Some(b) => {
            let verb = if b.resume_from.is_some() {
                "Resume"
            } else {
                "Launch"
            };
            let rows: String = launch_facts(plan, b, team_name)
                .into_iter()
                .map(|(label, value, id)| {
                    format!(
                        "<tr><th scope=\"row\">{label}</th><td id=\"{id}\">{}</td></tr>",
                        esc(&value)
                    )
                })
                .collect();
            let config = config_text(b);
            (
                format!("{verb} plan {}", plan.id),
                format!("<table>{rows}</table>"),
                if config.is_empty() {
                    String::new()
                } else {
                    format!("<h2>Config</h2><pre id=\"config\">{}</pre>", block(&config))
                },
                format!(
                    "<h2>Difference from the previous plan</h2>{}",
                    difference(plan, b, prev)
                ),
            )
        }
        None => (
            if plan.body.get("kind").and_then(|k| k.as_str()) == Some("delete") {
                format!("Delete (intent {})", plan.id)
            } else {
                format!("Plan {}", plan.id)
            },
            String::new(),
            String::new(),
            String::new(),
        ),
    };
    let form = |value: &str, label: &str, class: &str| {
        format!(
            "<form method=\"post\" action=\"{PATH_PREFIX}/{id}\">\
             <input type=\"hidden\" name=\"t\" value=\"{token}\">\
             <input type=\"hidden\" name=\"decision\" value=\"{value}\">\
             <button type=\"submit\" id=\"{value}\" class=\"{class}\">{label}</button></form>",
            id = esc(&plan.id),
            token = esc(token),
        )
    };
    let main = format!(
        "<h1>{}</h1><p>An assistant asks to go ahead with this. Read it; the decision is yours, \
         made here.</p><noscript><p id=\"noscript\">This page needs no JavaScript.</p></noscript>{facts}<h2>Summary</h2><pre id=\"summary\">{}</pre>{config}{diff}\
         <div class=\"buttons\">{}{}</div>",
        esc(&title),
        block(&plan.summary_text),
        form("approve", "Approve", "approve"),
        form("decline", "Decline", "decline"),
    );
    shell(&title, &main)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_cannot_make_markup_new_lines_or_reorder() {
        let hostile = "x</td><script>alert(1)</script>\n\u{1b}[2JPrice: $0.01\u{202e}evil";
        let out = field(hostile);
        assert!(!out.contains('<') && !out.contains('>'), "{out}");
        assert!(!out.contains('\n') && !out.contains('\u{1b}') && !out.contains('\u{202e}'));
        let b = block("a\u{2066}b\nc\rd");
        assert!(!b.contains('\u{2066}') && !b.contains('\r'), "{b:?}");
        assert_eq!(esc("\"'&"), "&quot;&#39;&amp;");
    }
}

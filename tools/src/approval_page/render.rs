//! The approval page's HTML. Every string that did not come from this server's own computation
//! (config values, run and team names, the platform's texts) is made one line with control and
//! bidi characters replaced (`factory_policies::untrusted::one_line`) and then HTML-escaped, so
//! it can neither inject markup nor reorder or imitate the figures a person decides on. No
//! script; one stylesheet from the same origin; nothing secret (secrets by name only; the
//! token appears only in the form's hidden field, which the page's CSP keeps on this origin).

use factory_policies::{
    store::PlanRecord,
    summary::{self, Line, Part, Summary, SummaryKind},
    untrusted::one_line,
};

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

/// An untrusted value as one safe line of HTML.
fn field(text: &str) -> String {
    esc(&one_line(text, FIELD_CHARS))
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

/// The plan's config as text (TOML when it can be written as TOML, else JSON).
pub(super) fn config_text(b: &PlanBody) -> String {
    match &b.request {
        PlannedRequest::Create(r) => toml::to_string_pretty(&r.config)
            .unwrap_or_else(|_| serde_json::to_string_pretty(&r.config).unwrap_or_default()),
        PlannedRequest::Resume(_) => String::new(),
    }
}

/// The plan's summary: the structured one it was stored with, or `None` for a plan stored
/// before summaries were structured.
fn summary_of(plan: &PlanRecord) -> Option<Summary> {
    Summary::from_plan_body(&plan.body)
}

/// What the plan asks for when it holds no structured summary: a delete intent says so.
fn kind_without_summary(plan: &PlanRecord, body: Option<&PlanBody>) -> Option<SummaryKind> {
    if plan.body.get("kind").and_then(|k| k.as_str()) == Some("delete") {
        return Some(SummaryKind::Delete);
    }
    body.map(|b| {
        if b.resume_from.is_some() {
            SummaryKind::Resume
        } else {
            SummaryKind::Launch
        }
    })
}

/// A row id from our label ("Run name" → `run-name`); repeated labels get a number.
fn row_id(label: &str, seen: &mut Vec<String>) -> String {
    let mut id: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    if id.is_empty() {
        id.push_str("line");
    }
    let n = seen.iter().filter(|s| **s == id).count();
    seen.push(id.clone());
    if n > 0 {
        id = format!("{id}-{}", n + 1);
    }
    id
}

/// One summary line as a table row: our label, then each part escaped for HTML from its
/// display form (neutralised by `factory_policies::summary`); a value we did not write sits in
/// `<code>`, so it reads as a value and never as our words.
fn row(line: &Line, seen: &mut Vec<String>) -> String {
    let label = one_line(&line.label, 40);
    let value: String = line
        .parts
        .iter()
        .map(|p| match p {
            Part::Ours(_) => esc(&p.display()),
            Part::Untrusted(_) => format!("<code>{}</code>", esc(&p.display())),
            Part::Prose(_) => format!("<span class=\"prose\">{}</span>", esc(&p.display())),
        })
        .collect();
    format!(
        "<tr><th scope=\"row\">{}</th><td id=\"{}\">{value}</td></tr>",
        esc(&label),
        row_id(&label, seen)
    )
}

/// The summary as HTML: the figures a person decides on first, in their own block, then the
/// details and the plan's expiry.
fn summary_tables(s: &Summary, plan: &PlanRecord) -> String {
    let mut seen = Vec::new();
    let figures: String = s.figures.iter().map(|l| row(l, &mut seen)).collect();
    let details: String = s.details.iter().map(|l| row(l, &mut seen)).collect();
    format!(
        "<h2>What you decide on</h2><table id=\"figures\" class=\"figures\">{figures}</table>\
         <h2>Details</h2><table id=\"details\">{details}\
         <tr><th scope=\"row\">Expires</th><td id=\"expires\">{}</td></tr></table>",
        plan.expires_at.format("%Y-%m-%d %H:%M UTC")
    )
}

/// What a person compares between two plans: the summary's lines and the config, as lines.
fn comparable(plan: &PlanRecord, b: &PlanBody) -> String {
    let mut out = String::new();
    match summary_of(plan) {
        Some(s) => {
            for l in s.figures.iter().chain(&s.details) {
                out.push_str(&format!("{}: {}\n", one_line(&l.label, 40), l.value()));
            }
        }
        None => {
            out.push_str(&summary::plain_text_fallback(&plan.summary_text));
            out.push('\n');
        }
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

/// The page for a plan, with the Approve and Decline forms. What the person agrees to is the
/// plan's stored [`Summary`] — the same value the terminal and the client's dialog render —
/// followed by the config and its difference from the previous plan.
pub(super) fn plan_page(
    plan: &PlanRecord,
    body: Option<&PlanBody>,
    prev: Option<(&PlanRecord, &PlanBody)>,
    token: &str,
) -> String {
    let structured = summary_of(plan);
    let kind = structured
        .as_ref()
        .map(|s| s.kind)
        .or_else(|| kind_without_summary(plan, body));
    let title = match kind {
        Some(SummaryKind::Launch) => format!("Launch plan {}", plan.id),
        Some(SummaryKind::Resume) => format!("Resume plan {}", plan.id),
        Some(SummaryKind::Delete) => format!("Delete (intent {})", plan.id),
        None => format!("Plan {}", plan.id),
    };
    let summary = match &structured {
        Some(s) => summary_tables(s, plan),
        // A plan stored before summaries were structured: its text, neutralised line by line.
        None => format!(
            "<h2>Summary</h2><pre id=\"summary\">{}</pre>",
            block(&summary::plain_text_fallback(&plan.summary_text))
        ),
    };
    let (config, diff) = match body {
        Some(b) if kind != Some(SummaryKind::Delete) => {
            let config = config_text(b);
            let from = b
                .config_path
                .as_deref()
                .map(|p| format!(" from <code id=\"config-path\">{}</code>", field(p)))
                .unwrap_or_default();
            (
                if config.is_empty() {
                    String::new()
                } else {
                    format!(
                        "<h2>Config{from}</h2><pre id=\"config\">{}</pre>",
                        block(&config)
                    )
                },
                format!(
                    "<h2>Difference from the previous plan</h2>{}",
                    difference(plan, b, prev)
                ),
            )
        }
        _ => (String::new(), String::new()),
    };
    let (question, approve) = match kind {
        Some(k) => (k.question(), format!("Approve {}", k.noun())),
        None => ("Approve this plan?", "Approve".to_owned()),
    };
    let form = |value: &str, label: &str, class: &str| {
        format!(
            "<form method=\"post\" action=\"{PATH_PREFIX}/{id}\">\
             <input type=\"hidden\" name=\"t\" value=\"{token}\">\
             <input type=\"hidden\" name=\"decision\" value=\"{value}\">\
             <button type=\"submit\" id=\"{value}\" class=\"{class}\">{label}</button></form>",
            id = esc(&plan.id),
            token = esc(token),
            label = esc(label),
        )
    };
    let main = format!(
        "<h1>{}</h1><p>An assistant asks to go ahead with this. Read it; the decision is yours, \
         made here.</p><noscript><p id=\"noscript\">This page needs no JavaScript.</p></noscript>\
         {summary}{config}{diff}<p id=\"question\"><strong>{}</strong></p>\
         <div class=\"buttons\">{}{}</div>",
        esc(&title),
        esc(question),
        form("approve", &approve, "approve"),
        form("decline", "Decline", "decline"),
    );
    shell(&title, &main)
}

#[cfg(test)]
mod tests {
    use chrono::DateTime;
    use factory_policies::{launch::Price, untrusted::is_plain};

    use super::*;
    use crate::launch::PlannedRequest;

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

    /// Every hostile shape a name from the platform, the TOML or the assistant may take.
    fn hostile() -> Vec<String> {
        vec![
            "x\nPrice:    $0.01/hour".into(),
            "x\r\n<tr><th scope=\"row\">GPUs</th><td id=\"gpus\">1</td></tr>".into(),
            "x\u{1b}[2J\u{1b}[HPrice:    $0.01/hour".into(),
            "x\u{202e}ruoh/10.0$\u{202c}".into(),
            "x\u{2028}Price:    $0.01/hour".into(),
            "x</td></tr><tr><th scope=\"row\">Owner</th><td id=\"owner\">me".into(),
            "<script>alert(1)</script>".into(),
            "y".repeat(10 * 1024),
        ]
    }

    fn ours(s: &str) -> Part {
        Part::Ours(s.into())
    }

    /// A summary whose every value we did not write is `h`.
    fn summary(kind: SummaryKind, h: &str) -> Summary {
        Summary {
            kind,
            id: "plan_abc".into(),
            expires_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            figures: vec![
                Line::new(
                    "Owner",
                    vec![
                        ours("team "),
                        Part::Untrusted("team_1".into()),
                        ours(" "),
                        Part::Untrusted(h.into()),
                        ours(" — from the config"),
                    ],
                ),
                Line::new("GPUs", vec![ours("8 × "), Part::Untrusted(h.into())]),
                Line::ours("Price", "$2.49/GPU-hour on demand → $19.92/hour"),
            ],
            details: vec![
                Line::new("Run name", vec![Part::Untrusted(h.into())]),
                Line::new(
                    "Basis",
                    vec![Part::Prose(format!("on-demand price for {h}"))],
                ),
                Line::new("Note", vec![Part::Prose(h.into())]),
                Line::new("Note", vec![Part::Prose(h.into())]),
            ],
        }
    }

    fn plan(s: &Summary, body: Option<&PlanBody>) -> PlanRecord {
        let mut json = match body {
            Some(b) => serde_json::to_value(b).unwrap(),
            None => serde_json::json!({"kind": "delete", "run_id": "run_1"}),
        };
        json["summary"] = serde_json::to_value(s).unwrap();
        PlanRecord {
            id: "plan_abc".into(),
            created_at: s.expires_at,
            expires_at: s.expires_at,
            request_digest: "rd".into(),
            content_digest: "cd".into(),
            owner: None,
            summary_text: "Price: $0.01/hour (a stale text the page must not show)".into(),
            body: json,
        }
    }

    /// A launch plan body whose config and names carry `h`.
    fn body(h: &str) -> PlanBody {
        let mut config = serde_json::Map::new();
        config.insert("name".into(), h.into());
        config.insert("max_steps".into(), 7.into());
        let spec = factory_platform::wire::runs::RunSpec {
            config,
            ..Default::default()
        };
        PlanBody {
            request: PlannedRequest::Create(spec),
            env_names: vec![],
            run_name: h.into(),
            run_name_generated: false,
            team_id: Some("team_1".into()),
            team_name: Some(h.into()),
            owner_label: "team team_1".into(),
            owner_source: "the config".into(),
            config_path: Some(format!("configs/{h}.toml")),
            config_sha256: None,
            config_digest: String::new(),
            volume: None,
            mode: "rl".into(),
            model: Some(h.into()),
            gpu_type: Some(h.into()),
            gpus: Some(8),
            max_steps: Some(7),
            price: Price {
                gpu_type: Some(h.into()),
                per_gpu_hour_usd: Some(2.49),
                gpus: Some(8),
                per_hour_usd: Some(19.92),
                basis: format!("on-demand price of {h}"),
                notes: vec![],
                reserved: false,
            },
            overrides: vec![],
            blocked: None,
            preexisting_same_name: vec![],
            kind: "launch".into(),
            resume_from: None,
        }
    }

    /// No raw markup from a value, no control, line-break or bidi character anywhere but the
    /// page's own new lines, and each figure exactly once.
    fn assert_safe(html: &str) {
        assert!(!html.contains("<script"), "raw <script>: {html}");
        assert!(
            is_plain(&html.replace('\n', "")),
            "a control or bidi character got through: {html:?}"
        );
        for (label, id) in [("Owner", "owner"), ("GPUs", "gpus"), ("Price", "price")] {
            let th = format!("<th scope=\"row\">{label}</th>");
            assert_eq!(html.matches(&th).count(), 1, "{label} rows: {html}");
            let td = format!("id=\"{id}\"");
            assert_eq!(html.matches(&td).count(), 1, "{id} cells: {html}");
        }
        assert_eq!(
            html.matches("$19.92/hour").count(),
            1,
            "the only price is ours: {html}"
        );
        assert!(!html.contains("$0.01/hour</td>"), "{html}");
        assert!(!html.contains("stale text"), "the stored text is not shown");
    }

    #[test]
    fn the_page_renders_the_stored_summary_and_no_hostile_value_escapes_it() {
        for h in hostile() {
            let s = summary(SummaryKind::Launch, &h);
            let b = body(&h);
            let p = plan(&s, Some(&b));
            let prev = plan(&summary(SummaryKind::Launch, "old"), Some(&body("old")));
            let html = plan_page(&p, Some(&b), Some((&prev, &body("old"))), "tok");
            assert_safe(&html);
            // The figures come first, in their own block; values we did not write are <code>.
            let figures = html.find("id=\"figures\"").expect("a figures block");
            let details = html.find("id=\"details\"").expect("a details block");
            assert!(figures < details && html.find("id=\"price\"").unwrap() < details);
            assert!(
                html.contains("<td id=\"owner\">team <code>team_1</code> <code>"),
                "{html}"
            );
            assert!(html.contains("Approve launch") && html.contains("billable launch?"));
            assert!(
                html.contains("id=\"note-2\""),
                "repeated labels get their own ids"
            );
        }
    }

    #[test]
    fn a_delete_page_says_delete_and_never_launch() {
        for h in hostile() {
            let s = summary(SummaryKind::Delete, &h);
            let html = plan_page(&plan(&s, None), None, None, "tok");
            assert_safe(&html);
            assert!(html.contains("<h1>Delete (intent plan_abc)</h1>"), "{html}");
            assert!(html.contains("PERMANENT delete?") && html.contains("Approve delete"));
            assert!(!html.to_lowercase().contains("launch"), "{html}");
        }
    }

    #[test]
    fn a_plan_without_a_structured_summary_shows_its_text_neutralised() {
        let mut p = plan(&summary(SummaryKind::Delete, "n"), None);
        p.body = serde_json::json!({"kind": "delete", "run_id": "run_1"});
        p.summary_text = "Delete run <script>x\u{202e}\nOwner: me".into();
        let html = plan_page(&p, None, None, "tok");
        assert!(html.contains("<pre id=\"summary\">Delete run &lt;script&gt;x?\nOwner: me</pre>"));
        assert!(html.contains("Approve delete"), "{html}");
        assert!(is_plain(&html.replace('\n', "")));
    }
}

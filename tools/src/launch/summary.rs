//! The plan's screen: what a person reads before saying yes (and what `factory-mcp approve`
//! and the approval page show), built as a structured [`Summary`] — our figures first, every
//! value we did not compute (model, run, team, image and volume names) marked untrusted so the
//! renderer neutralises it (`factory_policies::summary`).

use chrono::{DateTime, Utc};
use factory_policies::{
    launch,
    summary::{Line, Part, Summary, SummaryKind},
};

use super::PlanBody;
use crate::validation;

fn ours(s: impl Into<String>) -> Part {
    Part::Ours(s.into())
}

fn untrusted(s: impl Into<String>) -> Part {
    Part::Untrusted(s.into())
}

/// The owner: the team id with the team's name beside it (the name is the platform's), or
/// the personal account; and where the choice came from (ours).
pub(crate) fn owner_line(team_id: Option<&str>, team_name: Option<&str>, source: &str) -> Line {
    let mut parts = match team_id {
        Some(id) => vec![ours("team "), untrusted(id), ours(" ")],
        None => vec![ours("personal account ")],
    };
    match (team_id, team_name) {
        (Some(_), Some(name)) => parts.push(untrusted(name)),
        (Some(_), None) => parts.push(ours("(team name unknown)")),
        (None, _) => {}
    }
    parts.push(ours(format!(" — from {source}")));
    Line::new("Owner", parts)
}

fn gpu_type_of(b: &PlanBody) -> Part {
    match b.gpu_type.as_deref().or(b.price.gpu_type.as_deref()) {
        Some(t) => untrusted(t),
        None => ours("any type"),
    }
}

fn model_line(b: &PlanBody) -> Line {
    Line::new(
        "Model",
        vec![
            b.model.as_deref().map_or_else(|| ours("?"), untrusted),
            ours(format!(" ({})", b.mode.to_uppercase())),
        ],
    )
}

fn secrets_line(b: &PlanBody, how: &str) -> Line {
    // Names only, each checked against the forwardable list when the plan was made.
    Line::ours(
        "Secrets",
        if b.env_names.is_empty() {
            "none".to_string()
        } else {
            format!("{} ({how})", b.env_names.join(", "))
        },
    )
}

/// Lines shared by the end of both plan summaries: price basis, notes, overrides, sandbox.
fn closing_lines(b: &PlanBody, sandbox: bool) -> Vec<Line> {
    let mut lines = vec![Line::new("Basis", vec![Part::Prose(b.price.basis.clone())])];
    for n in &b.price.notes {
        lines.push(Line::new("Note", vec![Part::Prose(n.clone())]));
    }
    if !b.overrides.is_empty() {
        lines.push(Line::ours(
            "Assistant",
            format!("set {}", b.overrides.join(", ")),
        ));
    }
    if sandbox {
        lines.push(Line::ours(
            "Platform",
            "the embedded sandbox (no real GPUs, no charge)",
        ));
    }
    lines
}

/// The one screen a person reads before a launch: owner, GPUs, price, length, volume (the
/// figures), then model, image, source ref, secrets, run name, the price's basis and notes,
/// and what the assistant set.
pub(super) fn launch_summary(
    plan_id: &str,
    expires: &DateTime<Utc>,
    b: &PlanBody,
    report: &validation::Report,
    image_tag: Option<&str>,
    source_ref: Option<&str>,
    sandbox: bool,
) -> Summary {
    let g = &report.summary.gpus;
    let gpus = match (g.trainer, g.inference, g.total) {
        (Some(t), Some(i), Some(n)) => format!("{t} trainer + {i} inference = {n} × "),
        (_, _, Some(n)) => format!("{n} × "),
        _ => "not derivable from the config × ".into(),
    };
    let rate = if b.price.reserved {
        "reserved (the policy's rate)"
    } else {
        "on demand"
    };
    let price = match (b.price.per_gpu_hour_usd, b.price.per_hour_usd) {
        (Some(pg), Some(ph)) => format!("${pg:.2}/GPU-hour {rate} → ${ph:.2}/hour"),
        (Some(pg), None) => format!("${pg:.2}/GPU-hour {rate}; hourly total unknown"),
        _ if b.price.reserved => format!("{} (see Basis)", launch::RESERVED_NOT_COUNTED),
        _ => "unknown (see Basis)".into(),
    };
    let length = match b.max_steps {
        Some(s) => format!(
            "max_steps = {s}; run cost unknown (the platform gives no step timing), billed per hour until it ends"
        ),
        None => "NO max_steps: trains and bills until stopped".into(),
    };
    let volume = match &b.volume {
        Some(v) if v.create => vec![
            untrusted(&v.name),
            ours(" — will be CREATED ("),
            untrusted(&v.size),
            ours("), a billable side effect"),
        ],
        Some(v) => vec![untrusted(&v.name), ours(" (exists)")],
        None => vec![ours("none (checkpoints stay on the platform)")],
    };
    let mut figures = Vec::new();
    if let Some(bl) = &b.blocked {
        figures.push(Line::new("BLOCKED", vec![Part::Prose(bl.clone())]));
    }
    figures.extend([
        owner_line(
            b.team_id.as_deref(),
            b.team_name.as_deref(),
            &b.owner_source,
        ),
        Line::new("GPUs", vec![ours(gpus), gpu_type_of(b)]),
        Line::ours("Price", price),
        Line::ours("Length", length),
        Line::new("Volume", volume),
    ]);
    let optional = |v: Option<&str>, absent: &str| v.map_or_else(|| ours(absent), untrusted);
    let mut details = vec![
        model_line(b),
        Line::new("Image", vec![optional(image_tag, "(platform default)")]),
        Line::new("Source ref", vec![optional(source_ref, "(none)")]),
        secrets_line(b, "by name, from the server's environment"),
        Line::new(
            "Run name",
            vec![
                untrusted(&b.run_name),
                ours(if b.run_name_generated {
                    " (generated)"
                } else {
                    ""
                }),
            ],
        ),
    ];
    details.extend(closing_lines(b, sandbox));
    Summary {
        kind: SummaryKind::Launch,
        id: plan_id.to_owned(),
        expires_at: *expires,
        figures,
        details,
    }
}

/// The screen of a resume plan: a new billable run from a paused one, whose name and model the
/// platform supplied.
pub(super) fn resume_summary(
    plan_id: &str,
    expires: &DateTime<Utc>,
    from: &str,
    b: &PlanBody,
    sandbox: bool,
) -> Summary {
    let figures = vec![
        Line::new(
            "Resumes",
            vec![untrusted(from), ours(" (PAUSED) as a NEW billable run")],
        ),
        owner_line(
            b.team_id.as_deref(),
            b.team_name.as_deref(),
            "the paused run",
        ),
        Line::new(
            "GPUs",
            vec![
                ours(format!(
                    "{} × ",
                    b.gpus.map(|g| g.to_string()).unwrap_or_else(|| "?".into())
                )),
                gpu_type_of(b),
            ],
        ),
        Line::ours(
            "Price",
            match b.price.per_hour_usd {
                Some(ph) => format!("${ph:.2}/hour"),
                None if b.price.reserved => {
                    format!("{} (see Basis)", launch::RESERVED_NOT_COUNTED)
                }
                None => "unknown (see Basis)".into(),
            },
        ),
    ];
    let mut details = vec![
        Line::new(
            "Run name",
            vec![if b.run_name.is_empty() {
                ours("unnamed")
            } else {
                untrusted(&b.run_name)
            }],
        ),
        model_line(b),
        secrets_line(b, "by name"),
    ];
    details.extend(closing_lines(b, sandbox));
    Summary {
        kind: SummaryKind::Resume,
        id: plan_id.to_owned(),
        expires_at: *expires,
        figures,
        details,
    }
}

#[cfg(test)]
mod tests {
    use factory_policies::launch::Price;

    use super::*;
    use crate::launch::{KIND_RESUME, PlannedRequest};

    /// The hostile shapes a platform answer or a TOML value may carry.
    fn hostile() -> Vec<String> {
        vec![
            "x\nPrice:    $0.01/hour".into(),
            "x\u{1b}[2J\u{1b}[HPrice:    $0.01/hour".into(),
            "x\u{1b}[8mconcealed".into(),
            "x\u{202e}ruoh/10.0$".into(),
            "x\u{2028}Price:    $0.01/hour".into(),
            "x".repeat(100 * 1024),
        ]
    }

    /// A resume plan whose every platform-supplied string is `h` (the team's name included,
    /// as a fake platform answer would give it).
    fn body(h: &str) -> PlanBody {
        PlanBody {
            request: PlannedRequest::Create(Default::default()),
            env_names: vec!["WANDB_API_KEY".into()],
            run_name: h.into(),
            run_name_generated: false,
            team_id: Some("team_1".into()),
            team_name: Some(h.into()),
            owner_label: "team team_1".into(),
            owner_source: "the paused run".into(),
            config_path: None,
            config_sha256: None,
            config_digest: String::new(),
            volume: None,
            mode: "rl".into(),
            model: Some(h.into()),
            gpu_type: Some(h.into()),
            gpus: Some(8),
            max_steps: Some(100),
            price: Price {
                gpu_type: Some(h.into()),
                per_gpu_hour_usd: Some(2.49),
                gpus: Some(8),
                per_hour_usd: Some(19.92),
                basis: format!("on-demand price of {h}"),
                notes: vec![format!("note about {h}")],
                reserved: false,
            },
            overrides: vec![],
            blocked: Some(format!("an active run named {h} exists")),
            preexisting_same_name: vec![],
            kind: KIND_RESUME.into(),
            resume_from: Some("run_1".into()),
        }
    }

    fn assert_safe(text: &str) {
        for c in text.chars() {
            assert!(
                c == '\n' || factory_policies::untrusted::is_plain(&c.to_string()),
                "{c:?} got through: {text:?}"
            );
        }
        let prices: Vec<&str> = text.lines().filter(|l| l.starts_with("Price:")).collect();
        assert_eq!(prices, ["Price:     $19.92/hour"], "{text}");
        assert!(text.len() < 4096, "{} bytes", text.len());
        assert!(
            text.lines()
                .skip(1)
                .all(|l| l.starts_with(|c: char| c.is_ascii_uppercase())
                    || l.starts_with("          ")),
            "a line that is not ours:\n{text}"
        );
    }

    #[test]
    fn platform_names_and_the_team_name_cannot_forge_the_resume_summary() {
        let expires = Utc::now();
        for h in hostile() {
            let s = resume_summary("plan_1", &expires, "run_1", &body(&h), false);
            let text = s.to_text();
            assert_safe(&text);
            assert!(text.contains("Owner:     team team_1 \""), "{text}");
        }
    }

    #[test]
    fn the_team_name_sits_beside_the_team_id() {
        let line = owner_line(Some("team_1"), Some("Team Alpha"), "the team_id argument");
        assert_eq!(
            line.value(),
            "team team_1 \"Team Alpha\" — from the team_id argument"
        );
        let unknown = owner_line(Some("team_1"), None, "x").value();
        assert!(unknown.contains("team_1 (team name unknown)"), "{unknown}");
        let personal = owner_line(None, None, "x").value();
        assert!(personal.starts_with("personal account"), "{personal}");
    }
}

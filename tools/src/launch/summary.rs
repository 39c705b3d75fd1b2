//! The plan's screen: what a person reads before saying yes (and what `factory-mcp approve`
//! shows).

use chrono::{DateTime, Utc};

use super::PlanBody;
use crate::validation;

/// The one screen a person reads before a launch: owner, model, GPUs, price, length, image,
/// volume, secrets, run name, and what the assistant set.
#[allow(clippy::too_many_arguments)]
pub(super) fn launch_summary(
    plan_id: &str,
    expires: &DateTime<Utc>,
    b: &PlanBody,
    report: &validation::Report,
    image_tag: Option<&str>,
    source_ref: Option<&str>,
    sandbox: bool,
) -> String {
    let g = &report.summary.gpus;
    let gpus = match (g.trainer, g.inference, g.total) {
        (Some(t), Some(i), Some(n)) => format!("{t} trainer + {i} inference = {n}"),
        (_, _, Some(n)) => format!("{n}"),
        _ => "not derivable from the config".into(),
    };
    let rate = if b.price.reserved {
        "reserved (the policy's rate)"
    } else {
        "on demand"
    };
    let price = match (b.price.per_gpu_hour_usd, b.price.per_hour_usd) {
        (Some(pg), Some(ph)) => format!(
            "${pg:.2}/GPU-hour {rate} → ${ph:.2}/hour ({})",
            b.price.basis
        ),
        (Some(pg), None) => format!(
            "${pg:.2}/GPU-hour; hourly total unknown ({})",
            b.price.basis
        ),
        // Starts with "reserved — not counted in budgets".
        _ if b.price.reserved => b.price.basis.clone(),
        _ => format!("unknown ({})", b.price.basis),
    };
    let length = match b.max_steps {
        Some(s) => format!(
            "max_steps = {s}; run cost unknown (the platform gives no step timing), billed per hour until it ends"
        ),
        None => "NO max_steps: trains and bills until stopped".into(),
    };
    let volume = match &b.volume {
        Some(v) if v.create => format!(
            "{} — will be CREATED ({}), a billable side effect",
            v.name, v.size
        ),
        Some(v) => format!("{} (exists)", v.name),
        None => "none (checkpoints stay on the platform)".into(),
    };
    let mut lines = vec![
        format!(
            "Launch plan {plan_id} (expires {})",
            expires.format("%Y-%m-%d %H:%M UTC")
        ),
        format!("Owner:    {} — from {}", b.owner_label, b.owner_source),
        format!(
            "Model:    {} ({})",
            b.model.as_deref().unwrap_or("?"),
            b.mode.to_uppercase()
        ),
        format!(
            "GPUs:     {gpus} × {}",
            b.gpu_type
                .as_deref()
                .or(b.price.gpu_type.as_deref())
                .unwrap_or("any type")
        ),
        format!("Price:    {price}"),
        format!("Length:   {length}"),
        format!(
            "Image:    {} · source ref: {}",
            image_tag.unwrap_or("(platform default)"),
            source_ref.unwrap_or("(none)")
        ),
        format!("Volume:   {volume}"),
        format!(
            "Secrets:  {}",
            if b.env_names.is_empty() {
                "none".to_string()
            } else {
                format!(
                    "{} (by name, from the server's environment)",
                    b.env_names.join(", ")
                )
            }
        ),
        format!(
            "Run name: {}{}",
            b.run_name,
            if b.run_name_generated {
                " (generated)"
            } else {
                ""
            }
        ),
    ];
    for n in &b.price.notes {
        lines.push(format!("Note:     {n}"));
    }
    if !b.overrides.is_empty() {
        lines.push(format!("Set by the assistant: {}", b.overrides.join(", ")));
    }
    if let Some(bl) = &b.blocked {
        lines.push(format!("BLOCKED:  {bl}"));
    }
    if sandbox {
        lines.push("Platform: the embedded sandbox (no real GPUs, no charge)".into());
    }
    lines.join("\n")
}

/// The screen of a resume plan.
pub(super) fn resume_summary(
    plan_id: &str,
    expires: &DateTime<Utc>,
    from: &str,
    b: &PlanBody,
    sandbox: bool,
) -> String {
    let mut lines = vec![
        format!(
            "Resume plan {plan_id} (expires {})",
            expires.format("%Y-%m-%d %H:%M UTC")
        ),
        format!(
            "Resumes:  {from} ({}, PAUSED) as a NEW billable run",
            if b.run_name.is_empty() {
                "unnamed"
            } else {
                &b.run_name
            }
        ),
        format!("Owner:    {} — from the paused run", b.owner_label),
        format!(
            "Model:    {} ({})",
            b.model.as_deref().unwrap_or("?"),
            b.mode.to_uppercase()
        ),
        format!(
            "GPUs:     {} × {}",
            b.gpus.map(|g| g.to_string()).unwrap_or_else(|| "?".into()),
            b.gpu_type
                .as_deref()
                .or(b.price.gpu_type.as_deref())
                .unwrap_or("any type")
        ),
        format!(
            "Price:    {}",
            match b.price.per_hour_usd {
                Some(ph) => format!("${ph:.2}/hour ({})", b.price.basis),
                None if b.price.reserved => b.price.basis.clone(),
                None => format!("unknown ({})", b.price.basis),
            }
        ),
        format!(
            "Secrets:  {}",
            if b.env_names.is_empty() {
                "none".to_string()
            } else {
                format!("{} (by name)", b.env_names.join(", "))
            }
        ),
    ];
    for n in &b.price.notes {
        lines.push(format!("Note:     {n}"));
    }
    if !b.overrides.is_empty() {
        lines.push(format!("Set by the assistant: {}", b.overrides.join(", ")));
    }
    if sandbox {
        lines.push("Platform: the embedded sandbox (no real GPUs, no charge)".into());
    }
    lines.join("\n")
}

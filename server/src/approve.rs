//! `factory-mcp approve PLAN_ID`: a person approves or refuses a pending launch plan from
//! their own terminal. It shows the plan's summary, asks `[y/N]`, and records the decision
//! (and an audit entry) in the state database. It never dispatches anything: the next
//! `launch_run` of the plan does, after its own checks.
//!
//! Rules, in order:
//! - unknown plan: exit 2; a plan already launched: its run id, exit 0, nothing asked;
//!   a launch in progress or being reconciled: said so, exit 0, nothing asked;
//! - expired plan: exit 1 ("re-plan");
//! - already approved: said so, exit 0, nothing asked (`--refuse` revokes the approval);
//! - already refused: said so, then asked again, so that a refusal (perhaps an accidental
//!   Enter or a closed input) can be changed to an approval;
//! - otherwise the summary and `Approve this launch? [y/N]`: only `y`/`yes` approves;
//!   anything else, an empty line or end of input refuses (fail closed).
//!
//! Exit 0 approved (or nothing to decide), 1 refused or expired, 2 unusable (unknown plan,
//! no state directory, database error).
//!
//! `--yes` approves without asking, for scripts that a person runs. An assistant that runs
//! `approve --yes` (or pipes `y` into it) approves its own plan, which defeats the human
//! confirmation: do not allow it to. The audit entry records how each answer was given.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use factory_policies::store::{
    AuditEvent, DB_FILE, Decision, DispatchState, PlanRecord, Store, StoreError,
};
use serde_json::json;

/// Approve (or refuse) a pending launch plan from this terminal; launches nothing.
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The plan id that plan_run returned (plan_…).
    pub plan_id: String,
    /// Approve without asking. For scripts a person runs: an assistant that runs this
    /// approves its own plan, which defeats the confirmation.
    #[arg(long, conflicts_with = "refuse")]
    pub yes: bool,
    /// Refuse without asking (also revokes an approval that was not used yet).
    #[arg(long)]
    pub refuse: bool,
    /// Decide on the approval page in your browser instead: prints the page's address on this
    /// terminal (only), serves the page on a loopback port, and waits for your decision.
    #[arg(long, conflicts_with_all = ["yes", "refuse"])]
    pub page: bool,
    /// The state directory [default: $XDG_STATE_HOME/factory-mcp, else
    /// ~/.local/state/factory-mcp]; must match the server's.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

const EXIT_APPROVED: u8 = 0;
const EXIT_REFUSED: u8 = 1;
const EXIT_UNUSABLE: u8 = 2;
const ACTOR: &str = "approve";

/// Run the subcommand on this process's terminal.
pub fn run(args: ApproveArgs) -> ExitCode {
    if args.page {
        return ExitCode::from(crate::page::approve_on_page(&args));
    }
    let interactive = std::io::stdin().is_terminal();
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let code = run_with(
        &args,
        &|k| std::env::var(k).ok(),
        interactive,
        &mut input,
        &mut out,
    );
    ExitCode::from(code)
}

/// How the answer was given, for the audit log.
fn how(args: &ApproveArgs) -> &'static str {
    if args.yes {
        "--yes"
    } else if args.refuse {
        "--refuse"
    } else {
        "prompt"
    }
}

/// The command with its inputs and outputs injected; returns the exit code.
pub fn run_with(
    args: &ApproveArgs,
    env: &dyn Fn(&str) -> Option<String>,
    interactive: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> u8 {
    match decide(args, env, interactive, input, out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("factory-mcp approve: {e}");
            EXIT_UNUSABLE
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum ApproveError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write to the terminal: {0}")]
    Output(#[from] std::io::Error),
    #[error(
        "no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir (the server's \
         state directory)"
    )]
    NoStateDir,
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn decide(
    args: &ApproveArgs,
    env: &dyn Fn(&str) -> Option<String>,
    interactive: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> Result<u8, ApproveError> {
    let id = args.plan_id.trim();
    let dir = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => Store::default_dir(env).ok_or(ApproveError::NoStateDir)?,
    };
    // Do not create a state directory just to say the plan is not there.
    if !dir.join(DB_FILE).exists() {
        eprintln!(
            "factory-mcp approve: no plan {id}: there is no state database in {} (is this the \
             server's state directory? pass --state-dir)",
            dir.display()
        );
        return Ok(EXIT_UNUSABLE);
    }
    let store = Store::open(&dir)?;
    let audit = |outcome: &str, detail: serde_json::Value| {
        let event = AuditEvent::new(ACTOR, "approve", outcome)
            .plan(id)
            .detail(detail);
        // The audit log is the record of what happened here; failing to write it is fatal.
        store.audit(&event)
    };

    let Some(plan) = store.get_plan(id)? else {
        audit("unknown_plan", json!({}))?;
        eprintln!(
            "factory-mcp approve: no plan {id} in {}: check the id (plan_run returns it) and \
             that this is the server's state directory (--state-dir)",
            dir.display()
        );
        return Ok(EXIT_UNUSABLE);
    };

    if let Some(record) = store.dispatch(id)? {
        match record.state {
            DispatchState::Dispatched { run_id, .. } => {
                audit("already_dispatched", json!({ "run_id": run_id }))?;
                writeln!(
                    out,
                    "Plan {id} was already launched as run {run_id}. Nothing to approve."
                )?;
                return Ok(EXIT_APPROVED);
            }
            DispatchState::Dispatching { .. } | DispatchState::Unknown { .. } => {
                audit("launch_in_progress", json!({}))?;
                writeln!(
                    out,
                    "Plan {id} is being launched (or its outcome is being checked). Nothing to \
                     approve; ask your assistant for the run (list_runs or launch_run again)."
                )?;
                return Ok(EXIT_APPROVED);
            }
            // A definite failure created nothing; the plan may be launched again.
            DispatchState::Failed { .. } => {}
        }
    }

    let now = Utc::now();
    if plan.is_expired(now) {
        audit("expired", json!({ "expires_at": plan.expires_at }))?;
        eprintln!(
            "factory-mcp approve: plan {id} expired at {}; re-plan (ask your assistant to call \
             plan_run again) and approve the new plan",
            when(plan.expires_at)
        );
        return Ok(EXIT_REFUSED);
    }

    let previous = store.decision(id)?;
    match (&previous, args.refuse) {
        (Some(p), false) if p.decision == Decision::Approved => {
            audit("already_approved", json!({ "via": p.via }))?;
            writeln!(
                out,
                "Plan {id} is already approved ({} via {}). Ask your assistant to call \
                 launch_run again with plan_id {id}. (factory-mcp approve --refuse {id} \
                 revokes the approval.)",
                when(p.decided_at),
                p.via
            )?;
            return Ok(EXIT_APPROVED);
        }
        (Some(p), true) if p.decision == Decision::Refused => {
            audit("already_refused", json!({}))?;
            writeln!(
                out,
                "Plan {id} is already refused ({}).",
                when(p.decided_at)
            )?;
            return Ok(EXIT_REFUSED);
        }
        _ => {}
    }

    show(out, &plan)?;
    if let Some(p) = previous
        .as_ref()
        .filter(|p| p.decision == Decision::Refused)
    {
        writeln!(
            out,
            "You refused this plan at {}; answering y now approves it.",
            when(p.decided_at)
        )?;
    }

    let (decision, answer) = if args.refuse {
        (Decision::Refused, "--refuse".to_owned())
    } else if args.yes {
        writeln!(out, "--yes given: approving without asking.")?;
        (Decision::Approved, "--yes".to_owned())
    } else {
        write!(out, "Approve this launch? [y/N] ")?;
        out.flush()?;
        let mut line = String::new();
        // A read error or end of input refuses: never approve by default.
        let read = input.read_line(&mut line).unwrap_or(0);
        if read == 0 {
            writeln!(out)?;
        }
        let answer = line.trim().to_ascii_lowercase();
        let yes = matches!(answer.as_str(), "y" | "yes");
        let answer = if read == 0 {
            "end of input".to_owned()
        } else {
            answer
        };
        (
            if yes {
                Decision::Approved
            } else {
                Decision::Refused
            },
            answer,
        )
    };

    if decision == Decision::Approved {
        // Re-check what was approved after the answer: the person may have taken a while.
        match recheck(&store, &plan)? {
            Recheck::Ok => {}
            Recheck::Changed(why) => {
                audit("stale_after_answer", json!({ "why": why }))?;
                eprintln!("factory-mcp approve: not recorded: {why}");
                return Ok(EXIT_REFUSED);
            }
        }
    }

    store.record_decision(id, decision, "terminal")?;
    audit(
        decision.as_str(),
        json!({
            "how": how(args),
            "answer": answer,
            "stdin_is_terminal": interactive,
            "request_digest": plan.request_digest,
        }),
    )?;
    match decision {
        Decision::Approved => {
            writeln!(
                out,
                "Approved. Nothing has been launched yet: ask your assistant to call launch_run \
                 again with plan_id {id}."
            )?;
            Ok(EXIT_APPROVED)
        }
        Decision::Refused => {
            writeln!(
                out,
                "Refused. Nothing will be launched for plan {id}; launch_run will report the \
                 refusal. Run factory-mcp approve {id} again to change your mind."
            )?;
            Ok(EXIT_REFUSED)
        }
    }
}

fn show(out: &mut dyn Write, plan: &PlanRecord) -> std::io::Result<()> {
    writeln!(out, "Plan {} (expires {})", plan.id, when(plan.expires_at))?;
    writeln!(out)?;
    writeln!(out, "{}", plan.summary_text.trim_end())?;
    writeln!(out)
}

enum Recheck {
    Ok,
    Changed(String),
}

fn recheck(store: &Store, shown: &PlanRecord) -> Result<Recheck, StoreError> {
    let id = &shown.id;
    let Some(plan) = store.get_plan(id)? else {
        return Ok(Recheck::Changed(format!("plan {id} is gone")));
    };
    if plan.request_digest != shown.request_digest {
        return Ok(Recheck::Changed(format!(
            "plan {id} changed while you were reading it; run approve again"
        )));
    }
    if plan.is_expired(Utc::now()) {
        return Ok(Recheck::Changed(format!(
            "plan {id} expired at {} while waiting for the answer; re-plan",
            when(plan.expires_at)
        )));
    }
    if let Some(record) = store.dispatch(id)?
        && !matches!(record.state, DispatchState::Failed { .. })
    {
        return Ok(Recheck::Changed(format!(
            "plan {id} started launching while waiting for the answer"
        )));
    }
    Ok(Recheck::Ok)
}

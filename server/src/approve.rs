//! `factory-mcp approve PLAN_ID`: a person approves or refuses a pending launch, resume or
//! delete from their own terminal. It shows the plan's summary on the controlling terminal
//! (`/dev/tty`, never standard input or output), prints a short random code there, and records
//! an approval only when the person types that code back. It never dispatches anything: the
//! next `launch_run` / `resume_run` / `delete_run` does, after its own checks.
//!
//! Rules, in order:
//! - no controlling terminal (a pipe, a background job, an assistant's shell): refused with
//!   "approve needs a person at a terminal", exit 2, nothing recorded. `--refuse` needs no
//!   terminal (a refusal can only stop something);
//! - unknown plan: exit 2; a plan already carried out: its run id, exit 0, nothing asked;
//!   one in progress or being reconciled: said so, exit 0, nothing asked;
//! - expired plan: exit 1 ("re-plan");
//! - already approved on a terminal: said so, exit 0 (`--refuse` revokes the approval); a
//!   plan refused before, or approved in the client's form only, is asked again;
//! - otherwise the summary and the code: the code approves, `n`/`no` refuses; end of input,
//!   Ctrl-C or any other answer is *no answer* — nothing is recorded and the plan still waits.
//!
//! Exit 0 approved (or nothing to decide), 1 refused, expired or no answer, 2 unusable (no
//! terminal, unknown plan, no state directory, database error).
//!
//! A process that allocates its own pseudo-terminal (`script`, `expect`) can still read the
//! code and type it: the terminal rule keeps an assistant's ordinary shell commands out, not a
//! determined program running as the same user. `docs/SECURITY.md` says where the real
//! boundary is (the server under another OS user).

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use factory_policies::{
    confirmation::Via,
    policy::StatePolicy,
    store::{
        AuditEvent, DB_FILE, Decision, DecisionRecord, DispatchRecord, DispatchState, PlanRecord,
        StateStore, Store, StoreError,
    },
    summary::{self, Summary, SummaryKind},
};
use rand::TryRngCore;
use serde_json::json;

/// Approve (or refuse) a pending launch, resume or delete from this terminal; runs nothing.
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The plan id that plan_run returned (plan_…), or a delete intent's id.
    pub plan_id: String,
    /// Refuse without asking (also revokes an approval that was not used yet).
    #[arg(long)]
    pub refuse: bool,
    /// Decide on the approval page in your browser instead: prints the page's address on this
    /// terminal (only), serves the page on a loopback port, and waits for your decision.
    #[arg(long, conflicts_with = "refuse")]
    pub page: bool,
    /// The state directory [default: $XDG_STATE_HOME/factory-mcp, else
    /// ~/.local/state/factory-mcp]; must match the server's.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// The shared state database of a gateway (`postgres://user@host:port/db`, as the
    /// server's `[state] url`); the password from --state-password-file or
    /// FACTORY_MCP_STATE_PASSWORD. Replaces --state-dir.
    #[arg(
        long,
        value_name = "URL",
        env = "FACTORY_MCP_STATE_URL",
        conflicts_with = "state_dir"
    )]
    pub state_url: Option<String>,
    /// File holding the state database's password.
    #[arg(long, value_name = "FILE")]
    pub state_password_file: Option<PathBuf>,
}

const EXIT_APPROVED: u8 = 0;
const EXIT_REFUSED: u8 = 1;
const EXIT_UNUSABLE: u8 = 2;
const ACTOR: &str = "approve";
/// Letters and digits that cannot be mistaken for each other.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 6;

/// The words a person reads when there is no terminal to ask on.
pub const NEEDS_TERMINAL: &str = "approve needs a person at a terminal";

/// Run the subcommand: ask on the controlling terminal, or refuse without one.
pub fn run(args: ApproveArgs) -> ExitCode {
    if args.page && args.state_url.is_some() {
        eprintln!(
            "factory-mcp approve: --page serves the page from this machine's SQLite store; with \
             a shared store (--state-url) approve here with the code, or on the gateway's own \
             approval page. Nothing was recorded."
        );
        return ExitCode::from(EXIT_UNUSABLE);
    }
    if args.page {
        // The page's address goes to the controlling terminal only (the same rule as below).
        return ExitCode::from(crate::page::approve_on_page(&args));
    }
    let env = |k: &str| std::env::var(k).ok();
    if args.refuse {
        // A refusal asks nothing and can only stop something: no terminal needed.
        let mut out = std::io::stdout().lock();
        return ExitCode::from(run_with(&args, &env, None, &mut out));
    }
    let tty = match open_terminal() {
        Ok(tty) => tty,
        Err(e) => {
            eprintln!(
                "factory-mcp approve: {NEEDS_TERMINAL} ({e}). Nothing was recorded. Run it \
                 yourself in a terminal window: it shows the summary there and asks you to type \
                 a code. (An assistant cannot answer for you.)"
            );
            return ExitCode::from(EXIT_UNUSABLE);
        }
    };
    let (mut reader, mut writer) = tty;
    let code = match new_code() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("factory-mcp approve: no randomness for the code: {e}");
            return ExitCode::from(EXIT_UNUSABLE);
        }
    };
    let mut answer = Terminal {
        input: &mut reader,
        code,
    };
    ExitCode::from(run_with(&args, &env, Some(&mut answer), &mut writer))
}

/// The controlling terminal, for reading and writing; an error when the process has none.
pub(crate) fn open_terminal() -> std::io::Result<(BufReader<File>, File)> {
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")?;
    let writer = tty.try_clone()?;
    Ok((BufReader::new(tty), writer))
}

/// A fresh code for one question.
fn new_code() -> std::io::Result<String> {
    let mut bytes = [0u8; CODE_LEN];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes
        .iter()
        .map(|b| CODE_ALPHABET[usize::from(*b) % CODE_ALPHABET.len()] as char)
        .collect())
}

/// Where the answer comes from: the person's terminal, and the code printed on it.
pub struct Terminal<'a> {
    pub input: &'a mut dyn BufRead,
    pub code: String,
}

/// The command with its terminal injected (`None`: `--refuse`, nothing is asked); writes to
/// `out` (the terminal, or standard output for `--refuse`); returns the exit code.
pub fn run_with(
    args: &ApproveArgs,
    env: &dyn Fn(&str) -> Option<String>,
    terminal: Option<&mut Terminal<'_>>,
    out: &mut dyn Write,
) -> u8 {
    match decide(args, env, terminal, out) {
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
    #[error("approve needs a person at a terminal: nothing was recorded")]
    NoTerminal,
    #[error(
        "cannot read the state directory {}: permission denied, nothing was recorded; run \
         approve as the OS user the server runs as (e.g. `sudo -u factory -H factory-mcp \
         approve PLAN_ID`, see docs/SECURITY.md)",
        .0.display()
    )]
    NotAllowed(PathBuf),
    #[error("{0}")]
    Shared(String),
}

fn when(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// What a plan is, for the words around the question.
#[derive(Clone, Copy)]
struct Kind(SummaryKind);

impl Kind {
    fn of(plan: &PlanRecord) -> Kind {
        Kind(match plan.body.get("kind").and_then(|k| k.as_str()) {
            Some("delete") => SummaryKind::Delete,
            Some("resume") => SummaryKind::Resume,
            _ => SummaryKind::Launch,
        })
    }

    fn tool(self) -> &'static str {
        match self.0 {
            SummaryKind::Launch => "launch_run",
            SummaryKind::Resume => "resume_run",
            SummaryKind::Delete => "delete_run",
        }
    }

    fn done(self) -> &'static str {
        match self.0 {
            SummaryKind::Launch => "launched",
            SummaryKind::Resume => "resumed",
            SummaryKind::Delete => "deleted",
        }
    }

    fn noun(self) -> &'static str {
        self.0.noun()
    }
}

/// Wait for a store call. `approve` is a short synchronous command: inside the binary's
/// runtime it blocks this worker (`block_in_place`); the SQLite store's answers are ready at
/// once and need no runtime at all.
fn wait<F: std::future::Future>(f: F) -> F::Output {
    use futures::FutureExt;
    let mut f = std::pin::pin!(f);
    if let Some(out) = f.as_mut().now_or_never() {
        return out;
    }
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| h.block_on(f))
        }
        _ => match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt.block_on(f),
            // No runtime can be built: a resource limit; nothing sensible to wait with.
            Err(e) => panic!("approve: cannot start an async runtime: {e}"),
        },
    }
}

/// The store `approve` decides in (the server's SQLite database, or the shared one), with
/// synchronous calls.
struct Db {
    store: Arc<dyn StateStore>,
    /// Where it is, for messages (a directory, or "the shared state database").
    place: String,
}

impl Db {
    fn get_plan(&self, id: &str) -> Result<Option<PlanRecord>, StoreError> {
        wait(self.store.get_plan(id))
    }
    fn decision(&self, id: &str) -> Result<Option<DecisionRecord>, StoreError> {
        wait(self.store.decision(id))
    }
    fn dispatch(&self, id: &str) -> Result<Option<DispatchRecord>, StoreError> {
        wait(self.store.dispatch(id))
    }
    fn audit(&self, e: &AuditEvent) -> Result<(), StoreError> {
        wait(self.store.audit(e))
    }
    fn record_decision(&self, id: &str, d: Decision, via: &str) -> Result<(), StoreError> {
        wait(self.store.record_decision(id, d, via))
    }
}

/// The open store and the plan id being decided, with the audit writer.
struct Ctx<'a> {
    store: &'a Db,
    id: &'a str,
}

impl Ctx<'_> {
    /// The audit log is the record of what happened here; failing to write it is fatal.
    fn audit(&self, outcome: &str, detail: serde_json::Value) -> Result<(), StoreError> {
        self.store.audit(
            &AuditEvent::new(ACTOR, "approve", outcome)
                .plan(self.id)
                .detail(detail),
        )
    }
}

/// The person's answer.
enum Answer {
    /// The code was typed back.
    Yes,
    /// `n`/`no` typed, or `--refuse`.
    No(&'static str),
    /// End of input, or something that is neither the code nor a no: nothing is recorded.
    None(&'static str),
}

fn decide(
    args: &ApproveArgs,
    env: &dyn Fn(&str) -> Option<String>,
    terminal: Option<&mut Terminal<'_>>,
    out: &mut dyn Write,
) -> Result<u8, ApproveError> {
    if terminal.is_none() && !args.refuse {
        return Err(ApproveError::NoTerminal);
    }
    let id = args.plan_id.trim();
    let Some(store) = open_store(args, env, id)? else {
        return Ok(EXIT_UNUSABLE);
    };
    let ctx = Ctx { store: &store, id };
    let Some(plan) = find_plan(&ctx)? else {
        return Ok(EXIT_UNUSABLE);
    };
    let kind = Kind::of(&plan);
    if let Some(code) = settled(&ctx, kind, out)? {
        return Ok(code);
    }
    if let Some(code) = expired(&ctx, &plan)? {
        return Ok(code);
    }
    let previous = store.decision(id)?;
    if let Some(code) = already_decided(&ctx, kind, previous.as_ref(), args.refuse, out)? {
        return Ok(code);
    }
    let answer = match terminal {
        Some(t) if !args.refuse => ask(t, &plan, kind, previous.as_ref(), out)?,
        _ => Answer::No("--refuse"),
    };
    match answer {
        Answer::Yes => record(&ctx, &plan, kind, Decision::Approved, "code", out),
        Answer::No(how) => record(&ctx, &plan, kind, Decision::Refused, how, out),
        Answer::None(why) => {
            writeln!(
                out,
                "No answer ({why}): nothing was recorded. The {} of plan {id} still waits for a \
                 person; run factory-mcp approve {id} again to answer.",
                kind.noun()
            )?;
            Ok(EXIT_REFUSED)
        }
    }
}

/// The server's store; `None` (said on stderr) when there is no database in that directory —
/// one is not created just to say the plan is not there.
fn open_store(
    args: &ApproveArgs,
    env: &dyn Fn(&str) -> Option<String>,
    id: &str,
) -> Result<Option<Db>, ApproveError> {
    if let Some(url) = &args.state_url {
        let state = StatePolicy {
            url: Some(url.clone()),
            password_file: args.state_password_file.clone(),
            dispatch_lease_seconds: None,
        };
        StatePolicy::check_url(url).map_err(ApproveError::Shared)?;
        let shared = wait(crate::state_store::open_shared(&state, env))
            .map_err(ApproveError::Shared)?
            .ok_or_else(|| ApproveError::Shared("no state URL".into()))?;
        return Ok(Some(Db {
            store: shared.store,
            place: "the shared state database".into(),
        }));
    }
    let dir = match &args.state_dir {
        Some(dir) => dir.clone(),
        None => Store::default_dir(env).ok_or(ApproveError::NoStateDir)?,
    };
    // `exists()` would call a database this user may not read "absent": approve run as
    // another OS user than the server's is told so, and pointed at the right one.
    match dir.join(DB_FILE).try_exists() {
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(ApproveError::NotAllowed(dir))
        }
        Ok(false) => {
            eprintln!(
                "factory-mcp approve: no plan {id}: there is no state database in {} (is this \
                 the server's state directory? pass --state-dir)",
                dir.display()
            );
            Ok(None)
        }
        Ok(true) | Err(_) => Ok(Some(Db {
            store: Arc::new(Store::open(&dir)?),
            place: dir.display().to_string(),
        })),
    }
}

fn find_plan(ctx: &Ctx<'_>) -> Result<Option<PlanRecord>, ApproveError> {
    let plan = ctx.store.get_plan(ctx.id)?;
    if plan.is_none() {
        ctx.audit("unknown_plan", json!({}))?;
        eprintln!(
            "factory-mcp approve: no plan {} in {}: check the id (plan_run returns it) and that \
             this is the server's state directory (--state-dir)",
            ctx.id, ctx.store.place
        );
    }
    Ok(plan)
}

/// A plan already carried out, or being carried out: nothing to decide.
fn settled(ctx: &Ctx<'_>, kind: Kind, out: &mut dyn Write) -> Result<Option<u8>, ApproveError> {
    let id = ctx.id;
    let Some(record) = ctx.store.dispatch(id)? else {
        return Ok(None);
    };
    match record.state {
        DispatchState::Dispatched { run_id, .. } => {
            ctx.audit("already_dispatched", json!({ "run_id": run_id }))?;
            if kind.0 == SummaryKind::Delete {
                writeln!(
                    out,
                    "Intent {id} was already carried out: run {run_id} was deleted. Nothing to \
                     approve."
                )?;
            } else {
                writeln!(
                    out,
                    "Plan {id} was already {} as run {run_id}. Nothing to approve.",
                    kind.done()
                )?;
            }
            Ok(Some(EXIT_APPROVED))
        }
        DispatchState::Dispatching { .. } | DispatchState::Unknown { .. } => {
            ctx.audit("launch_in_progress", json!({}))?;
            writeln!(
                out,
                "Plan {id} is being carried out (or its outcome is being checked). Nothing to \
                 approve; your assistant's next {} call with it reports the run.",
                kind.tool()
            )?;
            Ok(Some(EXIT_APPROVED))
        }
        // A definite failure created nothing; the plan may be carried out again.
        DispatchState::Failed { .. } => Ok(None),
    }
}

fn expired(ctx: &Ctx<'_>, plan: &PlanRecord) -> Result<Option<u8>, ApproveError> {
    if !plan.is_expired(Utc::now()) {
        return Ok(None);
    }
    ctx.audit("expired", json!({ "expires_at": plan.expires_at }))?;
    eprintln!(
        "factory-mcp approve: plan {} expired at {}; re-plan (ask your assistant to call \
         plan_run again) and approve the new plan",
        ctx.id,
        when(plan.expires_at)
    );
    Ok(Some(EXIT_REFUSED))
}

/// An approval given on a terminal stands (unless `--refuse`); a refusal being refused again
/// is said so. Anything else goes on to the question.
fn already_decided(
    ctx: &Ctx<'_>,
    kind: Kind,
    previous: Option<&DecisionRecord>,
    refuse: bool,
    out: &mut dyn Write,
) -> Result<Option<u8>, ApproveError> {
    let id = ctx.id;
    let Some(p) = previous else {
        return Ok(None);
    };
    let on_terminal = Via::parse(&p.via).is_some_and(Via::out_of_band);
    match (p.decision, refuse) {
        (Decision::Approved, false) if on_terminal => {
            ctx.audit("already_approved", json!({ "channel": p.via }))?;
            writeln!(
                out,
                "Plan {id} is already approved ({} on a terminal). Your assistant's next {} call \
                 with it goes ahead. (factory-mcp approve --refuse {id} revokes the approval.)",
                when(p.decided_at),
                kind.tool()
            )?;
            Ok(Some(EXIT_APPROVED))
        }
        (Decision::Refused, true) => {
            ctx.audit("already_refused", json!({}))?;
            writeln!(
                out,
                "Plan {id} is already refused ({}).",
                when(p.decided_at)
            )?;
            Ok(Some(EXIT_REFUSED))
        }
        _ => Ok(None),
    }
}

/// Show the summary and the code on the terminal and read one line from it.
fn ask(
    t: &mut Terminal<'_>,
    plan: &PlanRecord,
    kind: Kind,
    previous: Option<&DecisionRecord>,
    out: &mut dyn Write,
) -> Result<Answer, ApproveError> {
    show(out, plan)?;
    match previous {
        Some(p) if p.decision == Decision::Refused => writeln!(
            out,
            "You refused this plan at {}; typing the code now approves it.",
            when(p.decided_at)
        )?,
        Some(p) => writeln!(
            out,
            "This plan was approved in the client's dialog ({}) at {}; approve it here as well \
             if your server takes only terminal answers.",
            p.via,
            when(p.decided_at)
        )?,
        None => {}
    }
    writeln!(
        out,
        "To approve this {}, type this code: {}\n(n refuses; Enter, Ctrl-D or Ctrl-C leaves it \
         unanswered)",
        kind.noun(),
        t.code
    )?;
    write!(out, "Code: ")?;
    out.flush()?;
    let mut line = String::new();
    // A read error is no answer: never approve by default.
    let read = t.input.read_line(&mut line).unwrap_or(0);
    if read == 0 {
        writeln!(out)?;
        return Ok(Answer::None("end of input"));
    }
    let typed = line.trim();
    Ok(if typed.eq_ignore_ascii_case(&t.code) {
        Answer::Yes
    } else if matches!(typed.to_ascii_lowercase().as_str(), "n" | "no") {
        Answer::No("n")
    } else if typed.is_empty() {
        Answer::None("an empty line")
    } else {
        Answer::None("not the code")
    })
}

fn show(out: &mut dyn Write, plan: &PlanRecord) -> std::io::Result<()> {
    let text = Summary::from_plan_body(&plan.body)
        .map(|s| s.to_text())
        .unwrap_or_else(|| {
            format!(
                "Plan {} (expires {})\n{}",
                plan.id,
                when(plan.expires_at),
                summary::plain_text_fallback(&plan.summary_text)
            )
        });
    writeln!(out)?;
    writeln!(out, "{text}")?;
    writeln!(out)
}

/// Record the decision (re-checking an approval first) and say what happens next.
fn record(
    ctx: &Ctx<'_>,
    plan: &PlanRecord,
    kind: Kind,
    decision: Decision,
    how: &str,
    out: &mut dyn Write,
) -> Result<u8, ApproveError> {
    let id = ctx.id;
    if decision == Decision::Approved
        && let Some(why) = changed_since_shown(ctx.store, plan)?
    {
        ctx.audit("stale_after_answer", json!({ "why": why }))?;
        writeln!(out, "Not recorded: {why}")?;
        return Ok(EXIT_REFUSED);
    }
    let channel = Via::Terminal.as_str();
    ctx.store.record_decision(id, decision, channel)?;
    ctx.audit(
        decision.as_str(),
        json!({
            "channel": channel,
            "how": how,
            "decided_at": Utc::now().to_rfc3339(),
            "request_digest": plan.request_digest,
        }),
    )?;
    match decision {
        Decision::Approved => {
            writeln!(
                out,
                "Approved. Nothing has been {} yet: your assistant's next {} call with {id} \
                 goes ahead (after its own checks).",
                kind.done(),
                kind.tool()
            )?;
            Ok(EXIT_APPROVED)
        }
        Decision::Refused => {
            writeln!(
                out,
                "Refused. Nothing will be {} for {id}; {} will report the refusal. Run \
                 factory-mcp approve {id} again to change your mind.",
                kind.done(),
                kind.tool()
            )?;
            Ok(EXIT_REFUSED)
        }
    }
}

/// Why an approval is no longer valid after the answer (the person may have taken a while).
fn changed_since_shown(store: &Db, shown: &PlanRecord) -> Result<Option<String>, StoreError> {
    let id = &shown.id;
    let Some(plan) = store.get_plan(id)? else {
        return Ok(Some(format!("plan {id} is gone")));
    };
    if plan.request_digest != shown.request_digest {
        return Ok(Some(format!(
            "plan {id} changed while you were reading it; run approve again"
        )));
    }
    if plan.is_expired(Utc::now()) {
        return Ok(Some(format!(
            "plan {id} expired at {} while waiting for the answer; re-plan",
            when(plan.expires_at)
        )));
    }
    if let Some(record) = store.dispatch(id)?
        && !matches!(record.state, DispatchState::Failed { .. })
    {
        return Ok(Some(format!(
            "plan {id} started while waiting for the answer"
        )));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_fresh_and_unambiguous() {
        let a = new_code().unwrap();
        let b = new_code().unwrap();
        assert_eq!(a.len(), CODE_LEN);
        assert!(a.bytes().all(|c| CODE_ALPHABET.contains(&c)), "{a}");
        assert!(!a.contains('0') && !a.contains('O') && !a.contains('1') && !a.contains('I'));
        // Two 6-character codes from 32 symbols collide once in a billion.
        assert_ne!(a, b);
    }

    fn answer_to(typed: &str) -> Answer {
        let plan = PlanRecord {
            id: "plan_t".into(),
            created_at: Utc::now(),
            expires_at: Utc::now(),
            request_digest: "d".into(),
            content_digest: "c".into(),
            owner: None,
            summary_text: "Owner: x".into(),
            body: json!({}),
        };
        let mut input = std::io::Cursor::new(typed.as_bytes().to_vec());
        let mut t = Terminal {
            input: &mut input,
            code: "K7QXPM".into(),
        };
        let mut out = Vec::new();
        ask(&mut t, &plan, Kind(SummaryKind::Launch), None, &mut out).unwrap()
    }

    #[test]
    fn only_the_code_approves_and_only_n_refuses() {
        assert!(matches!(answer_to("K7QXPM\n"), Answer::Yes));
        assert!(matches!(answer_to("  k7qxpm \n"), Answer::Yes));
        for typed in ["y\n", "yes\n", "K7QXP\n", "K7QXPMM\n", "\n", ""] {
            assert!(matches!(answer_to(typed), Answer::None(_)), "{typed:?}");
        }
        assert!(matches!(answer_to("n\n"), Answer::No(_)));
        assert!(matches!(answer_to("No\n"), Answer::No(_)));
    }
}

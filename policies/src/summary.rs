//! The summary a person reads before saying yes to a launch, a resume or a delete: one
//! structured value ([`Summary`]) rendered for the terminal (`factory-mcp approve`), the
//! client's form and the tool errors ([`Summary::to_text`]) — and, by the approval page, as
//! HTML from the same value.
//!
//! Each line is a label we write followed by parts of three kinds ([`Part`]): our own words
//! and figures, a value we did not write (a run, team or model name from the platform or the
//! TOML; shown quoted), and prose of ours that embeds such values (shown unquoted). Everything
//! not of our own computation goes through [`crate::untrusted`]: it cannot break a line, move
//! the cursor, hide or reorder text, and it is bounded. The figures a person decides on
//! (owner, GPUs, price, volume, length) come first, each on its own line starting with our
//! label; long lines are wrapped by us with an indent, so no value can begin a line.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::untrusted;

/// Longest value shown from a string we did not write (characters).
pub const MAX_VALUE_CHARS: usize = 60;
/// Longest prose line that embeds values we did not write (characters).
pub const MAX_PROSE_CHARS: usize = 240;
/// Column at which the text rendering wraps a line.
const WRAP_AT: usize = 96;
/// Width of the label column.
const LABEL_WIDTH: usize = 10;

/// What the person is asked to agree to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryKind {
    /// A new billable run from a config.
    Launch,
    /// A new billable run from a paused one.
    Resume,
    /// A permanent delete of a run.
    Delete,
}

impl SummaryKind {
    /// The action in a sentence: "this launch", "this resume", "this delete".
    pub fn noun(self) -> &'static str {
        match self {
            SummaryKind::Launch => "launch",
            SummaryKind::Resume => "resume",
            SummaryKind::Delete => "delete",
        }
    }

    /// The question a dialog asks.
    pub fn question(self) -> &'static str {
        match self {
            SummaryKind::Launch => "Approve this billable launch?",
            SummaryKind::Resume => "Approve this billable resume (a new run)?",
            SummaryKind::Delete => "Approve this PERMANENT delete?",
        }
    }

    /// The description of the form's checkbox.
    pub fn tick(self) -> &'static str {
        match self {
            SummaryKind::Launch => "Tick to launch (billable)",
            SummaryKind::Resume => "Tick to resume as a new run (billable)",
            SummaryKind::Delete => "Tick to delete the run permanently",
        }
    }

    fn title(self) -> &'static str {
        match self {
            SummaryKind::Launch => "LAUNCH plan",
            SummaryKind::Resume => "RESUME plan",
            SummaryKind::Delete => "DELETE intent",
        }
    }
}

/// One piece of a line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "text", rename_all = "snake_case")]
pub enum Part {
    /// Our own words or a figure we computed.
    Ours(String),
    /// A value we did not write (a name from the platform, the TOML or the assistant): a plain
    /// token as it is, anything else quoted, neutralised, at most [`MAX_VALUE_CHARS`].
    Untrusted(String),
    /// Our prose embedding values we did not write (a price basis naming a model): shown
    /// unquoted, neutralised, at most [`MAX_PROSE_CHARS`].
    Prose(String),
}

impl Part {
    /// The part as it is displayed (the page escapes this for HTML too).
    pub fn display(&self) -> String {
        match self {
            // Ours too passes through the neutraliser: a figure never holds a control
            // character, and a mistake here must not become one.
            Part::Ours(s) => untrusted::one_line(s, MAX_PROSE_CHARS),
            // A plain token (a run id, `H100_80GB`, `my-run`) reads as it is; anything else
            // (a space, a quote, a control character, an overlong value) is quoted.
            Part::Untrusted(s) if is_token(s) => s.clone(),
            Part::Untrusted(s) => untrusted::quoted(s, MAX_VALUE_CHARS),
            Part::Prose(s) => untrusted::inline(s, MAX_PROSE_CHARS),
        }
    }
}

/// Whether `s` is a short plain token that cannot pose as anything but itself: no space, no
/// quote, no control or formatting character.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.chars().count() <= MAX_VALUE_CHARS
        && s.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | ':' | '@' | '+')
        })
}

/// A labelled line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// Our label ("Price", "Owner", …).
    pub label: String,
    pub parts: Vec<Part>,
}

impl Line {
    pub fn new(label: &str, parts: Vec<Part>) -> Line {
        Line {
            label: label.to_owned(),
            parts,
        }
    }

    /// A line of our own words only.
    pub fn ours(label: &str, text: impl Into<String>) -> Line {
        Line::new(label, vec![Part::Ours(text.into())])
    }

    /// The line's value as displayed, parts joined by nothing (parts carry their spaces).
    pub fn value(&self) -> String {
        self.parts.iter().map(Part::display).collect()
    }
}

/// What a person reads before saying yes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub kind: SummaryKind,
    /// The plan or intent id (ours).
    pub id: String,
    pub expires_at: DateTime<Utc>,
    /// The figures the person decides on (owner, GPUs, price, volume, length): first, each on
    /// its own line.
    pub figures: Vec<Line>,
    /// Everything else: names, image, secrets by name, notes.
    pub details: Vec<Line>,
}

impl Summary {
    /// The summary stored in a plan's body (`body.summary`), if it has one.
    pub fn from_plan_body(body: &serde_json::Value) -> Option<Summary> {
        serde_json::from_value(body.get("summary")?.clone()).ok()
    }

    /// The title line: "LAUNCH plan plan_… (expires …)".
    pub fn title(&self) -> String {
        format!(
            "{} {} (expires {})",
            self.kind.title(),
            untrusted::one_line(&self.id, 64),
            self.expires_at.format("%Y-%m-%d %H:%M UTC")
        )
    }

    /// The summary as plain text for a terminal or a client's dialog: the title, the figures,
    /// the details; every line starts with our label, long lines wrap with an indent, and no
    /// character of a value we did not write can break a line or drive the terminal.
    pub fn to_text(&self) -> String {
        let mut out = vec![self.title()];
        for line in self.figures.iter().chain(&self.details) {
            render_line(&mut out, line);
        }
        out.join("\n")
    }
}

fn render_line(out: &mut Vec<String>, line: &Line) {
    let label = format!(
        "{:<width$}",
        format!("{}:", untrusted::one_line(&line.label, LABEL_WIDTH)),
        width = LABEL_WIDTH
    );
    let value: Vec<char> = line.value().chars().collect();
    let room = WRAP_AT - LABEL_WIDTH - 1;
    let mut rest: &[char] = &value;
    let mut first = true;
    loop {
        let (chunk, next) = wrap_once(rest, room);
        let text = String::from_iter(chunk);
        out.push(if first {
            format!("{label} {text}")
        } else {
            format!("{:width$} {text}", "", width = LABEL_WIDTH)
        });
        first = false;
        rest = next;
        if rest.is_empty() {
            break;
        }
    }
}

/// One line of at most `room` characters from `value`, and the rest: broken after the last
/// space in the line's second half when there is one, otherwise cut at `room`.
fn wrap_once(value: &[char], room: usize) -> (&[char], &[char]) {
    if value.len() <= room {
        return (value, &[]);
    }
    let cut = value[room / 2..=room]
        .iter()
        .rposition(|c| *c == ' ')
        .map_or(room, |i| room / 2 + i);
    let (line, rest) = value.split_at(cut);
    let rest = if rest.first() == Some(&' ') {
        &rest[1..]
    } else {
        rest
    };
    let line = if line.last() == Some(&' ') {
        &line[..line.len() - 1]
    } else {
        line
    };
    (line, rest)
}

/// A plan summary that predates the structured one: each stored line neutralised.
pub fn plain_text_fallback(summary_text: &str) -> String {
    summary_text
        .lines()
        .take(60)
        .map(|l| untrusted::one_line(l, MAX_PROSE_CHARS))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hostile shape the summary must survive.
    pub(crate) fn hostile() -> Vec<String> {
        vec![
            "x\nPrice:    $0.01/hour".into(),
            "x\r\nGPUs:      1".into(),
            "x\u{1b}[2J\u{1b}[HPrice:    $0.01/hour".into(),
            "x\u{1b}[8mconcealed\u{1b}[0m".into(),
            "x\u{202e}ruoh/10.0$\u{202c}".into(),
            "x\u{2066}\u{2067}y\u{2069}".into(),
            "x\u{2028}Price:    $0.01/hour".into(),
            "x\u{2029}y".into(),
            "x\u{85}y\u{9b}2J".into(),
            format!("x{}Price:    $0.01/hour", " ".repeat(200)),
            "\" Price: \"$0.01".into(),
            "y".repeat(100 * 1024),
        ]
    }

    fn summary(hostile: &str) -> Summary {
        Summary {
            kind: SummaryKind::Launch,
            id: "plan_abc".into(),
            expires_at: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            figures: vec![
                Line::new(
                    "Owner",
                    vec![
                        Part::Ours("team team_1 ".into()),
                        Part::Untrusted(hostile.into()),
                    ],
                ),
                Line::ours("Price", "$2.49/GPU-hour on demand → $19.92/hour"),
            ],
            details: vec![
                Line::new("Run name", vec![Part::Untrusted(hostile.into())]),
                Line::new(
                    "Basis",
                    vec![Part::Prose(format!("on-demand price for {hostile}"))],
                ),
            ],
        }
    }

    /// A rendered summary is safe: no control, format or line-break character anywhere, every
    /// line starts with our label or our indent, and the only Price line is ours.
    pub(crate) fn assert_safe(text: &str, labels: &[&str]) {
        assert!(
            untrusted::is_plain(&text.replace('\n', "")),
            "a control or format character got through: {text:?}"
        );
        for line in text.lines().skip(1) {
            let ours = labels.iter().any(|l| line.starts_with(&format!("{l}:")))
                || line.starts_with(&" ".repeat(LABEL_WIDTH));
            assert!(ours, "a line that is not ours: {line:?}");
            assert!(line.chars().count() <= WRAP_AT, "{line:?}");
        }
        assert!(text.len() < 4096, "bounded: {} bytes", text.len());
    }

    #[test]
    fn long_lines_wrap_between_words_under_the_label_column() {
        let words = "reserved capacity has no published price; the policy key counts it ".repeat(3);
        let mut out = Vec::new();
        render_line(
            &mut out,
            &Line::new("Basis", vec![Part::Prose(words.clone())]),
        );
        assert!(out.len() > 1, "{out:?}");
        for (i, l) in out.iter().enumerate() {
            assert!(l.chars().count() <= WRAP_AT, "{l:?}");
            assert!(!l.ends_with(' '), "{l:?}");
            if i > 0 {
                assert!(l.starts_with(&" ".repeat(LABEL_WIDTH + 1)), "{l:?}");
            }
        }
        // Nothing lost: the words read back in order.
        let back: Vec<&str> = out
            .iter()
            .flat_map(|l| l.split_whitespace())
            .skip(1)
            .collect();
        assert_eq!(back, words.split_whitespace().collect::<Vec<_>>());
        // A value without spaces is cut at the width.
        let mut out = Vec::new();
        render_line(&mut out, &Line::ours("Basis", "x".repeat(200)));
        assert_eq!(out[0].chars().count(), WRAP_AT);
        assert_eq!(out.len(), 3);
    }

    #[test]
    fn no_hostile_value_can_imitate_a_line_or_drive_the_terminal() {
        for h in hostile() {
            let text = summary(&h).to_text();
            assert_safe(&text, &["Owner", "Price", "Run name", "Basis"]);
            let prices: Vec<_> = text.lines().filter(|l| l.starts_with("Price:")).collect();
            assert_eq!(
                prices,
                ["Price:     $2.49/GPU-hour on demand → $19.92/hour"]
            );
        }
    }

    #[test]
    fn values_are_quoted_and_figures_come_first() {
        let text = summary("Team Alpha").to_text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "LAUNCH plan plan_abc (expires 2027-01-15 08:00 UTC)"
        );
        assert_eq!(lines[1], "Owner:     team team_1 \"Team Alpha\"");
        assert!(lines[2].starts_with("Price:"));
        assert_eq!(lines[3], "Run name:  \"Team Alpha\"");
        let plain = summary("my-run_2").to_text();
        assert!(plain.contains("Run name:  my-run_2\n"), "{plain}");
    }

    #[test]
    fn the_summary_round_trips_through_a_plan_body() {
        let s = summary("n");
        let body = serde_json::json!({"kind": "delete", "summary": s});
        assert_eq!(Summary::from_plan_body(&body), Some(s));
        assert_eq!(Summary::from_plan_body(&serde_json::json!({})), None);
    }

    #[test]
    fn a_stored_plain_summary_is_neutralised_line_by_line() {
        let t = plain_text_fallback("Owner: a\u{1b}[2J\nPrice: $1\u{2028}x");
        assert_eq!(t, "Owner: a?[2J\nPrice: $1 x");
    }

    #[test]
    fn each_kind_says_what_it_is() {
        assert!(SummaryKind::Delete.question().contains("delete"));
        assert!(!SummaryKind::Delete.question().contains("launch"));
        assert!(!SummaryKind::Delete.tick().contains("launch"));
        assert!(SummaryKind::Resume.question().contains("resume"));
    }
}

//! The newest lines of a log for `get_logs` without a cursor, read from the end of the
//! platform's text: decoded and redacted only from a cut where the text after it redacts as it
//! does in the whole ([`Redactor::cut_stands_alone`]), so a 5,000-line tail answered with a
//! few dozen lines does not decode or scan the other half-megabyte.
use factory_platform::wire::runs::LogsBody;
use factory_policies::Redactor;
use factory_policies::redact::holds_context_literal;

use super::logs::{LogCursor, Selection, fit_from_end, fold_progress, render_line};

/// Bytes of a text (as sent) decoded and redacted from the end first, for the newest lines of
/// an answer; four times more while every line read fits.
const NEWEST_FIRST_READ: usize = 16 * 1024;

/// Lines walked back from a cut while looking for one that stands alone.
const CUT_SEARCH_LINES: usize = 64;

/// [`select_lines`](super::logs::select_lines) without a cursor, reading only the end of the
/// text: the newest lines that fit, decoded and redacted from a cut where the text after it
/// redacts as it does in the whole ([`Redactor::cut_stands_alone`]); a wider read while every line read fits. `None`
/// when the end does not decode, for the whole text to say why.
pub(super) fn newest_lines(
    body: &LogsBody,
    redactor: &Redactor,
    max_bytes: usize,
    query_parts: &[&str],
    component: &str,
) -> Option<Selection> {
    let mut read = max_bytes.saturating_mul(4).max(NEWEST_FIRST_READ);
    let mut checked = 0;
    loop {
        let cut = standalone_cut(
            body,
            redactor,
            body.len().saturating_sub(read),
            &mut checked,
        );
        let text = body.decode(cut..body.len())?;
        let text = redactor.redact(&text);
        let all: Vec<&str> = text.lines().collect();
        let (from, entries) =
            fit_from_end(all.len(), |i| render_line(all[i], component), max_bytes);
        // Every line read fits: the lines before the cut may fit too.
        if from == 0 && cut > 0 {
            read = read.saturating_mul(4);
            continue;
        }
        let mut next = LogCursor::new(query_parts);
        next.advance(&all[from..]);
        return Some((fold_progress(&entries), from > 0, next, false));
    }
}

/// The latest line start at or before `at` after which the text redacts as it does in the
/// whole, or 0 (the whole text): none before it when the text before holds a
/// [`CONTEXT_LITERALS`](factory_policies::redact::CONTEXT_LITERALS) literal (or might, behind
/// escapes: a PEM block or a certificate printed anywhere before makes the read whole), or
/// when none of the [`CUT_SEARCH_LINES`] lines before `at` ends so that the cut stands alone.
/// `checked`: a length of the text known free of the literals (a later, earlier cut needs no
/// second scan).
fn standalone_cut(body: &LogsBody, redactor: &Redactor, at: usize, checked: &mut usize) -> usize {
    let mut cut = body.line_start(at);
    if cut == 0 {
        return 0;
    }
    if cut > *checked {
        if body.hides_letters(cut) || holds_context_literal(body.sent_before(cut)) {
            return 0;
        }
        *checked = cut;
    }
    for _ in 0..CUT_SEARCH_LINES {
        // `cut - 1` is in the line feed that ends the line before.
        let before = body.line_start(cut - 1);
        let Some(line) = body.decode(before..cut) else {
            return 0;
        };
        if redactor.cut_stands_alone(line.lines().next_back().unwrap_or("")) {
            return cut;
        }
        if before == 0 {
            return 0;
        }
        cut = before;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::super::logs::select_lines;
    use super::*;

    /// A log of `lines` lines: mostly JSON records (progress among them), with plain lines,
    /// blank lines, secrets known and shaped, and lines that a cut must not follow; a PEM
    /// block or an AWS key id in some.
    fn random_log(seed: u64, lines: usize) -> String {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let context = next(4);
        let mut out = String::new();
        for i in 0..lines {
            let line = match next(40) {
                0 => "Authorization: Bearer\nabcdefghijklmnopqrstuvwx0123".to_string(),
                1 => "abcdefghijklmnopqrstuvwx0123".to_string(),
                2 => "HF_TOKEN=\n  'supersecretvalue123'".to_string(),
                3 => "hf_KnownValue0123456789ABCDEFGHIJ in a plain line".to_string(),
                4 => String::new(),
                5 => "loss=0.25 step".to_string(),
                6 if context == 0 => "-----BEGIN RSA PRIVATE KEY-----".to_string(),
                7 if context == 1 => "key id AKIAIOSFODNN7EXAMPLE".to_string(),
                8 => "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_string(),
                9 => "-----END RSA PRIVATE KEY-----".to_string(),
                10..=17 => format!(
                    r#"{{"timestamp":"2026-12-01T10:{:02}:{:02}Z","level":"INFO","type":"progress","step":{i},"total":9999}}"#,
                    i / 60 % 60,
                    i % 60
                ),
                18 => format!(
                    r#"{{"timestamp":"2026-12-01T10:00:00Z","level":"WARNING","message":"token=\"sk-proj-0123456789abcdefghij{i}\""}}"#
                ),
                _ => format!(
                    r#"{{"timestamp":"2026-12-01T10:{:02}:{:02}Z","level":"INFO","message":"Step {i} | loss {} | \u00e9 é 😀 \"q\""}}"#,
                    i / 60 % 60,
                    i % 60,
                    next(1000)
                ),
            };
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// `{"logs": text}` as encoders write it: 0–2 as serde_json does; 3 with every non-ASCII
    /// character escaped (as Python does: `\u00e9`, surrogate pairs); 4 with line feeds
    /// written `\u000a` and an escaped letter (`\u0041`), which leave no place to cut.
    fn encode(text: &str, how: u64) -> Vec<u8> {
        let json = serde_json::to_string(&serde_json::json!({ "logs": text })).unwrap();
        let ascii = |json: &str| {
            let mut out = String::new();
            for c in json.chars() {
                if c.is_ascii() {
                    out.push(c);
                } else {
                    for unit in c.encode_utf16(&mut [0; 2]) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
            }
            out
        };
        match how {
            3 => ascii(&json).into_bytes(),
            4 => ascii(&json)
                .replace("\\n", "\\u000a")
                .replace("Step 1 ", "\\u0053tep 1 ")
                .into_bytes(),
            _ => json.into_bytes(),
        }
    }

    /// Reading only the end answers exactly as reading the whole text does, at every size of
    /// answer and as every encoder writes the text; and most logs are read from a cut.
    #[test]
    fn the_newest_lines_read_from_the_end_are_those_of_the_whole_text() {
        let mut known = factory_policies::KnownSecrets::new();
        known.add(
            "HF_TOKEN",
            &secrecy::SecretString::from("hf_KnownValue0123456789ABCDEFGHIJ"),
        );
        let redactor = Redactor::new(known);
        let q = ["run", "orchestrator"];
        let (mut cuts, mut reads) = (0, 0);
        for seed in 0..60u64 {
            let text = random_log(seed, 200 + (seed as usize % 7) * 150);
            let body = LogsBody::from_json(encode(&text, seed % 5)).unwrap();
            let whole = redactor.redact(&text);
            // From any place, the text after the cut redacts as it does in the whole.
            for at in (0..body.len()).step_by(1999) {
                let cut = standalone_cut(&body, &redactor, at, &mut 0);
                let tail = redactor
                    .redact(&body.decode(cut..body.len()).unwrap())
                    .into_owned();
                assert!(
                    whole.ends_with(&tail),
                    "seed {seed}, cut {cut}: {tail:.200}"
                );
                reads += 1;
                cuts += usize::from(cut > 0);
            }
            for max_bytes in [1024, 3000, 20_000, 65_536] {
                let from_end = newest_lines(&body, &redactor, max_bytes, &q, "orchestrator")
                    .expect("the end decodes");
                let from_whole = select_lines(&whole, None, max_bytes, &q, "orchestrator");
                assert_eq!(from_end, from_whole, "seed {seed}, max_bytes {max_bytes}");
            }
        }
        assert!(
            cuts * 3 > reads,
            "only {cuts} of {reads} reads were from a cut"
        );
    }
}

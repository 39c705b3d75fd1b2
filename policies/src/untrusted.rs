//! Text the server did not write (a checker's output, a tool name or URI a client sent, a run
//! or team name the platform returned, a value from a TOML file) made safe to show a person:
//! one line, bounded, with control characters (C0, DEL, C1 — ESC included), line and paragraph
//! separators, bidirectional overrides and invisible formatting characters replaced, so it
//! cannot start a new line, move the cursor, hide text or reorder what is displayed. Redact
//! first, then pass the result through here.

/// Characters that change how the surrounding text is displayed without being visible: bidi
/// embeddings, overrides, isolates and marks; zero-width joiners and spaces; the BOM; the
/// interlinear annotation marks.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// Characters that end a line on some display: newline, carriage return, NEL, the Unicode line
/// and paragraph separators, vertical tab and form feed.
fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// `text` as one line of at most `max_chars` characters: control and formatting characters
/// become `?` (a line break or tab becomes a space), and a cut is marked with `…`.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    for (i, c) in text.chars().enumerate() {
        if i >= max_chars {
            out.push('…');
            break;
        }
        out.push(match c {
            '\t' => ' ',
            c if is_line_break(c) => ' ',
            c if c.is_control() || is_format(c) => '?',
            c => c,
        });
    }
    out
}

/// `text` as one bounded line for display in a summary: [`one_line`], with runs of white space
/// folded into one space (so a value cannot pad itself into looking like a separate column or
/// line) and ends trimmed.
pub fn inline(text: &str, max_chars: usize) -> String {
    let flat = one_line(text, max_chars);
    let mut out = String::with_capacity(flat.len());
    let mut space = false;
    for c in flat.trim().chars() {
        if c.is_whitespace() {
            if !space {
                out.push(' ');
            }
            space = true;
        } else {
            out.push(c);
            space = false;
        }
    }
    out
}

/// `text` as a quoted value: [`inline`], inside double quotes, with `"` and `\` escaped, so the
/// value's end is always visible and it cannot close its quotes early.
pub fn quoted(text: &str, max_chars: usize) -> String {
    let mut out = String::from("\"");
    for c in inline(text, max_chars).chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// Whether `text` would pass through [`one_line`] unchanged (given room enough). Text of
/// printable ASCII alone (nearly every id, status and time a platform sends) is told by one
/// pass over its bytes: no ASCII character is a format character, and every ASCII line break
/// is a control.
pub fn is_plain(text: &str) -> bool {
    text.bytes().all(|b| (0x20..0x7f).contains(&b)) || plain_chars(text)
}

/// [`is_plain`] character by character.
fn plain_chars(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() || is_format(c) || is_line_break(c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn plain_ascii_is_told_as_each_character_tells_it(
            text in "[ -~]{0,40}|[\\x00-\\x7f]{0,40}|\\PC{0,40}|.{0,40}",
        ) {
            prop_assert_eq!(is_plain(&text), plain_chars(&text));
        }
    }

    #[test]
    fn printable_ascii_is_plain_and_each_control_is_not() {
        assert!(is_plain(" !~azAZ09{}\"\\"));
        for b in (0u8..0x20).chain([0x7f]) {
            let text = format!("ab{}cd", b as char);
            assert!(!is_plain(&text), "{b:#x}");
            assert_eq!(is_plain(&text), plain_chars(&text));
        }
    }

    #[test]
    fn escapes_newlines_and_bidi_are_neutralised_and_length_bounded() {
        let s = one_line("ok\n\u{1b}[2Jfake\u{202E}txt.exe\u{200B}", 100);
        assert_eq!(s, "ok ?[2Jfake?txt.exe?");
        assert!(is_plain(&s));
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert!(!is_plain("a\u{2066}b"));
    }

    #[test]
    fn unicode_line_separators_and_c1_controls_do_not_break_the_line() {
        let s = one_line("a\u{2028}b\u{2029}c\u{85}d\u{9b}2Je\u{0B}f\u{0C}g", 100);
        assert_eq!(s, "a b c d?2Je f g");
        assert!(is_plain(&s));
        assert!(!is_plain("a\u{2028}b"));
    }

    #[test]
    fn inline_folds_padding_and_quoted_cannot_be_closed_early() {
        assert_eq!(
            inline("  x \n\n      Price:   $0.01 ", 100),
            "x Price: $0.01"
        );
        assert_eq!(
            quoted("a\" Price: \"$0.01\\", 100),
            "\"a\\\" Price: \\\"$0.01\\\\\""
        );
        let long = quoted(&"x".repeat(100 * 1024), 60);
        assert_eq!(
            long.chars().count(),
            63,
            "60 characters, the cut mark, two quotes"
        );
    }
}

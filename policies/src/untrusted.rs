//! Text the server did not write (a checker's output, a tool name or URI a client sent) made
//! safe to show a person: one line, bounded, with control characters, bidirectional overrides
//! and invisible formatting characters replaced, so it cannot start a new line, move the
//! cursor, or reorder what is displayed. Redact first, then pass the result through here.

/// Characters that change how the surrounding text is displayed without being visible: bidi
/// embeddings, overrides, isolates and marks; zero-width joiners and spaces; the BOM.
fn is_format(c: char) -> bool {
    matches!(c,
        '\u{061C}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}'
        | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// `text` as one line of at most `max_chars` characters: control and formatting characters
/// become `?` (a newline or tab becomes a space), and a cut is marked with `…`.
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max_chars * 4));
    for (i, c) in text.chars().enumerate() {
        if i >= max_chars {
            out.push('…');
            break;
        }
        out.push(match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() || is_format(c) => '?',
            c => c,
        });
    }
    out
}

/// Whether `text` would pass through [`one_line`] unchanged (given room enough).
pub fn is_plain(text: &str) -> bool {
    !text.chars().any(|c| c.is_control() || is_format(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_newlines_and_bidi_are_neutralised_and_length_bounded() {
        let s = one_line("ok\n\u{1b}[2Jfake\u{202E}txt.exe\u{200B}", 100);
        assert_eq!(s, "ok ?[2Jfake?txt.exe?");
        assert!(is_plain(&s));
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert!(!is_plain("a\u{2066}b"));
    }
}

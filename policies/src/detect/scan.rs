//! The redactor's scan: every occurrence of a literal set found with SIMD, the credential
//! shapes' ranges behind their trigger literals, and the `NAME=VALUE` assignments found from
//! the operators of the segments that hold a secret-name fragment. Clean text costs a few
//! vector passes; nothing is allocated until something is found.

use std::ops::Range;
use std::sync::LazyLock;

use aho_corasick::{AhoCorasick, MatchKind, packed};

use super::{SHAPES, aws_secrets, is_placeholder, name_says_secret};
use crate::secret::SecretKind;

/// A packed (Teddy) searcher refuses more than 64 literals, and past 32 it switches to its
/// "fat" variant, half as fast: larger sets are split into gates of this size.
const GATE_LITERALS: usize = 32;

/// A gate searches for the literals' first bytes only (Teddy's masks look at four): fewer
/// distinct gate literals (the padded and unpadded base64 of a value, say, share theirs), and
/// a candidate start is then checked against the whole literals.
const GATE_PREFIX: usize = 8;

/// Every occurrence, overlapping ones included, of a set of literals.
///
/// A Teddy searcher (`aho_corasick::packed`, SSSE3/AVX2 or NEON) over the literals' prefixes
/// finds the leftmost start of any prefix at or after a position; the whole literals with one
/// of that gate's prefixes are then compared there, and the search resumes one byte on. No
/// occurrence is missed: a literal occurring at `p` has its prefix occurring at `p`, no
/// prefix starts between the point the search resumed from and the leftmost one, and each
/// literal is compared by the one gate holding its prefix. Where Teddy is unavailable
/// (another architecture, no SSSE3), one Aho-Corasick automaton reports the same occurrences.
pub(crate) struct Literals {
    literals: Vec<Box<[u8]>>,
    search: Search,
}

enum Search {
    Gates(Vec<Gate>),
    Automaton(AhoCorasick),
}

struct Gate {
    searcher: packed::Searcher,
    /// The literals (indices into `Literals::literals`) whose prefix is one of this gate's.
    members: Vec<usize>,
}

impl Literals {
    /// `None` for an empty set or one holding the empty string (which occurs everywhere).
    pub(crate) fn new<P: AsRef<[u8]>>(literals: &[P]) -> Option<Literals> {
        if literals.is_empty() || literals.iter().any(|l| l.as_ref().is_empty()) {
            return None;
        }
        let literals: Vec<Box<[u8]>> = literals.iter().map(|l| l.as_ref().into()).collect();
        let mut prefixes: Vec<&[u8]> = literals
            .iter()
            .map(|l| &l[..l.len().min(GATE_PREFIX)])
            .collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        let mut gates = Vec::new();
        for part in prefixes.chunks(GATE_LITERALS) {
            let searcher = packed::Config::new()
                .match_kind(packed::MatchKind::LeftmostFirst)
                .builder()
                .extend(part)
                .build();
            let Some(searcher) = searcher else {
                gates.clear();
                break;
            };
            let members = (0..literals.len())
                .filter(|&i| {
                    let l = &literals[i];
                    part.contains(&&l[..l.len().min(GATE_PREFIX)])
                })
                .collect();
            gates.push(Gate { searcher, members });
        }
        let search = if gates.is_empty() {
            Search::Automaton(
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(&literals)
                    .ok()?,
            )
        } else {
            Search::Gates(gates)
        };
        Some(Literals { literals, search })
    }

    /// Calls `found(start, literal)` for every occurrence of every literal in `hay` (in no
    /// particular order).
    pub(crate) fn each(&self, hay: &[u8], mut found: impl FnMut(usize, usize)) {
        match &self.search {
            Search::Gates(gates) => {
                for gate in gates {
                    let mut at = 0;
                    while at < hay.len()
                        && let Some(m) = gate
                            .searcher
                            .find_in(hay, aho_corasick::Span::from(at..hay.len()))
                    {
                        let start = m.start();
                        let rest = &hay[start..];
                        for &i in &gate.members {
                            if rest.starts_with(&self.literals[i]) {
                                found(start, i);
                            }
                        }
                        at = start + 1;
                    }
                }
            }
            Search::Automaton(automaton) => {
                for m in automaton.find_overlapping_iter(hay) {
                    found(m.start(), m.pattern().as_usize());
                }
            }
        }
    }

    /// The literals, in the order they were given.
    pub(crate) fn literals(&self) -> &[Box<[u8]>] {
        &self.literals
    }

    /// The length of literal `i`.
    pub(crate) fn len_of(&self, i: usize) -> usize {
        self.literals.get(i).map_or(0, |l| l.len())
    }

    /// How many gates scan (0 when the automaton does), for the tests.
    #[cfg(test)]
    pub(crate) fn gates(&self) -> usize {
        match &self.search {
            Search::Gates(gates) => gates.len(),
            Search::Automaton(_) => 0,
        }
    }
}

/// Which shapes a trigger literal stands for (a bit per index of [`SHAPES`]).
struct Triggers {
    literals: Literals,
    shapes: Vec<u32>,
}

/// Every shape's trigger literals as one gate: 22 short case-sensitive literals (the eight
/// spellings of `rer` share Teddy's bucket, whose nybble masks hold both cases exactly).
static TRIGGERS: LazyLock<Triggers> = LazyLock::new(|| {
    let mut patterns: Vec<&str> = Vec::new();
    let mut shapes: Vec<u32> = Vec::new();
    for (idx, shape) in SHAPES.iter().enumerate() {
        for t in shape.triggers {
            match patterns.iter().position(|p| p == t) {
                Some(i) => shapes[i] |= 1 << idx,
                None => {
                    patterns.push(t);
                    shapes.push(1 << idx);
                }
            }
        }
    }
    // The patterns are constants checked by the unit tests; a failure is a programming error.
    #[allow(clippy::expect_used)]
    let literals = Literals::new(&patterns).expect("shape triggers compile");
    Triggers { literals, shapes }
});

/// The byte ranges the redactor replaces for the credential shapes: the same ranges as the
/// shape hits of [`super::shape_hits`] (the differential test in `redact` holds them equal),
/// found by one vector pass over `text` for the trigger literals and one for the name fragments
/// of assignments ([`assignment_ranges`]). A shape's regex runs only when one of its literals occurs. Allocates
/// nothing unless it finds something.
pub(crate) fn shape_ranges(text: &str, out: &mut Vec<Range<usize>>) {
    let mut present: u32 = 0;
    TRIGGERS.literals.each(text.as_bytes(), |_, i| {
        present |= TRIGGERS.shapes.get(i).copied().unwrap_or(0);
    });
    let mut aws_id = false;
    if present != 0 {
        for (idx, shape) in SHAPES.iter().enumerate() {
            if present & (1 << idx) == 0 {
                continue;
            }
            for caps in shape.re.captures_iter(text) {
                let Some(m) = caps.get(shape.group) else {
                    continue;
                };
                if !(shape.accept)(m.as_str()) {
                    continue;
                }
                aws_id |= shape.kind == SecretKind::AwsAccessKeyId;
                out.push(m.range());
            }
        }
    }
    if aws_id {
        out.extend(aws_secrets(text));
    }
    assignment_ranges(text, out);
}

/// Calls `found(at)` with the start of every occurrence in `text` of a shape's trigger literal,
/// and with the start of at least one occurrence of a secret-name fragment in each stretch of
/// text `found` leaves unskipped: for a fragment, the search resumes where `found` says (at
/// least one past `at`). No shape ranges a text that holds none of these ([`shape_ranges`]
/// runs a shape's regex only where one of its triggers occurs, and an assignment's name holds
/// a fragment). `false`, having found nothing, where the fragment gate is not available (no
/// SIMD here): every text may then hold a shape.
pub(crate) fn shape_literal_starts(text: &[u8], mut found: impl FnMut(usize) -> usize) -> bool {
    let Some(gate) = NAME_GATE.as_ref() else {
        return false;
    };
    TRIGGERS.literals.each(text, |at, _| {
        found(at);
    });
    let mut from = 0;
    while from < text.len()
        && let Some(m) = gate.find_in(text, aho_corasick::Span::from(from..text.len()))
    {
        from = found(m.start()).max(m.start() + 1);
    }
    true
}

/// The byte classes of the assignment walk.
const NAME: u8 = 1;
const NAME_START: u8 = 2;
/// `White_Space` as the regex crate's Unicode `\s` reads it: U+000B included, where
/// `u8::is_ascii_whitespace` leaves it out.
const SPACE: u8 = 4;
/// Ends an assignment's value: `[\s"'\\&,;{}\[\]<>()]`.
const STOP: u8 = 8;
/// A byte of a non-ASCII character, which is decoded.
const HIGH: u8 = 16;
/// `&,;{}[]<>()`: a byte no assignment match holds (not in a name, not between the name and
/// the value, not in the value), so the matches after it are those of the text after it.
const BARRIER: u8 = 32;

static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' || c == b'-' {
            t[b] |= NAME;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            t[b] |= NAME_START;
        }
        if c >= 0x80 {
            t[b] |= HIGH;
        }
        b += 1;
    }
    let spaces = b"\t\n\x0b\x0c\r ";
    let mut i = 0;
    while i < spaces.len() {
        t[spaces[i] as usize] |= SPACE | STOP;
        i += 1;
    }
    let stops = b"\"'\\&,;{}[]<>()";
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] |= STOP;
        i += 1;
    }
    let barriers = b"&,;{}[]<>()";
    let mut i = 0;
    while i < barriers.len() {
        t[barriers[i] as usize] |= BARRIER;
        i += 1;
    }
    t
};

#[inline(always)]
fn class(b: u8) -> u8 {
    CLASS[b as usize]
}

/// The first position from `i` that is not Unicode white space.
#[inline]
fn skip_space_forwards(text: &str, mut i: usize) -> usize {
    let bytes = text.as_bytes();
    while let Some(&b) = bytes.get(i) {
        if b < 0x80 {
            if class(b) & SPACE == 0 {
                break;
            }
            i += 1;
        } else {
            match text.get(i..).and_then(|rest| rest.chars().next()) {
                Some(c) if c.is_whitespace() => i += c.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// The last position down from `j`, not below `floor`, after which `text[..j]` is white space.
#[inline]
fn skip_space_backwards(text: &str, floor: usize, mut j: usize) -> usize {
    let bytes = text.as_bytes();
    while j > floor {
        let b = bytes[j - 1];
        if b < 0x80 {
            if class(b) & SPACE == 0 {
                break;
            }
            j -= 1;
        } else {
            match text.get(floor..j).and_then(|s| s.chars().next_back()) {
                Some(c) if c.is_whitespace() => j -= c.len_utf8(),
                _ => break,
            }
        }
    }
    j
}

/// The value run from `start`: where it stops (at a stop character or after `limit`
/// characters) and how many characters it holds.
#[inline]
fn value_run(text: &str, start: usize, limit: usize) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut i = start;
    let mut chars = 0;
    // Eight ASCII value bytes at a time (a timestamp, a run id, a path).
    while chars + 8 <= limit
        && let Some(block) = bytes.get(i..).and_then(|b| b.first_chunk::<8>())
        && block.iter().fold(0, |acc, &b| acc | class(b)) & (STOP | HIGH) == 0
    {
        i += 8;
        chars += 8;
    }
    while chars < limit
        && let Some(&b) = bytes.get(i)
    {
        if b < 0x80 {
            if class(b) & STOP != 0 {
                break;
            }
            i += 1;
        } else {
            match text.get(i..).and_then(|rest| rest.chars().next()) {
                Some(c) if !c.is_whitespace() => i += c.len_utf8(),
                _ => break,
            }
        }
        chars += 1;
    }
    (i, chars)
}

/// A necessary condition for [`holds_secret_word`] (so [`may_say_secret`] asks it first), in one
/// cheap pass: with `_`/`-` dropped and in upper case, the name holds `KE` (`TOKEN`, `KEY`),
/// `CR` (`SECRET`, `CREDENTIAL`) or `AS` (`PASS`). Log keys such as `timestamp`, `message` or
/// `orchestrator` hold none.
fn may_say_secret_quick(name: &str) -> bool {
    let mut prev = 0u8;
    for b in name.bytes() {
        if b == b'_' || b == b'-' {
            continue;
        }
        let b = b.to_ascii_uppercase();
        if matches!((prev, b), (b'K', b'E') | (b'C', b'R') | (b'A', b'S')) {
            return true;
        }
        prev = b;
    }
    false
}

/// A necessary condition for [`name_says_secret`] and for `strong_secret_name`, without
/// allocating: with `_`/`-` dropped and in upper case, the name holds `TOKEN`, `SECRET`,
/// `PASS`, `CREDENTIAL` or `KEY` (every word either looks for holds one; the `TOKENIZ` removal
/// only applies to names holding `TOKEN`). The redactor's walk over an answer relies on this to
/// skip both checks.
pub(crate) fn may_say_secret(name: &str) -> bool {
    // Most names (an answer's keys) fail the cheaper necessary condition: no copy is made.
    may_say_secret_quick(name) && holds_secret_word(name)
}

/// Whether the name, with `_`/`-` dropped and in upper case, holds one of the words of
/// [`may_say_secret`]: `TOKEN`, `SECRET`, `PASS`, `CREDENTIAL` or `KEY`. A name of a key's
/// length is upper-cased once into a buffer on the stack, and each position is tried only for
/// the word its byte begins; a longer one (a name taken from free text) goes through
/// [`holds_secret_word_by_window`]. The redactor asks this, for every string of an answer,
/// of the key it is under when the key passes [`may_say_secret_quick`] (`created_at`,
/// `base_model`).
fn holds_secret_word(name: &str) -> bool {
    let mut upper = [0u8; 64];
    if name.len() > upper.len() {
        return holds_secret_word_by_window(name);
    }
    let mut len = 0;
    for b in name.bytes().filter(|&b| b != b'_' && b != b'-') {
        upper[len] = b.to_ascii_uppercase();
        len += 1;
    }
    let upper = &upper[..len];
    (0..upper.len()).any(|i| {
        let rest = &upper[i..];
        match rest[0] {
            b'T' => rest.starts_with(b"TOKEN"),
            b'S' => rest.starts_with(b"SECRET"),
            b'P' => rest.starts_with(b"PASS"),
            b'C' => rest.starts_with(b"CREDENTIAL"),
            b'K' => rest.starts_with(b"KEY"),
            _ => false,
        }
    })
}

/// [`holds_secret_word`] for a name of any length, without a copy of it: a window of its last
/// ten bytes (upper case, `_`/`-` dropped), shifted per byte and tried for every word. Also
/// the property test's oracle for the short names.
fn holds_secret_word_by_window(name: &str) -> bool {
    const WORDS: [&[u8]; 5] = [b"TOKEN", b"SECRET", b"PASS", b"CREDENTIAL", b"KEY"];
    let mut window = [0u8; 10];
    let mut len = 0;
    for b in name.bytes() {
        if b == b'_' || b == b'-' {
            continue;
        }
        window.copy_within(1.., 0);
        window[9] = b.to_ascii_uppercase();
        len = (len + 1).min(10);
        if WORDS
            .iter()
            .any(|w| len >= w.len() && window[10 - w.len()..] == **w)
        {
            return true;
        }
    }
    false
}

/// `NAME=VALUE` / `"name": "value"` assignments: the name must say secret and the value must
/// not be a placeholder, a number or an already-redacted marker.
pub(super) fn assignment_value(s: &str) -> bool {
    !is_placeholder(s) && !s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The two-byte fragments of which every name that passes [`may_say_secret_quick`] holds one:
/// `K`, `C` or `A` (either case) followed by the next letter of its pair (`E`, `R`, `S`, either
/// case) or by a `_`/`-` (which that check skips). 24 literals, one Teddy gate.
fn name_fragments() -> Vec<[u8; 2]> {
    let mut out = Vec::new();
    for (first, second) in [(b'k', b'e'), (b'c', b'r'), (b'a', b's')] {
        for f in [first, first.to_ascii_uppercase()] {
            for s in [second, second.to_ascii_uppercase(), b'_', b'-'] {
                out.push([f, s]);
            }
        }
    }
    out
}

/// The fragment gate: `None` where Teddy is unavailable (the walk then visits every operator).
static NAME_GATE: LazyLock<Option<packed::Searcher>> = LazyLock::new(|| {
    packed::Config::new()
        .match_kind(packed::MatchKind::LeftmostFirst)
        .builder()
        .extend(name_fragments())
        .build()
});

/// The `SecretAssignment` shape without its regex: the same matches as that regex's
/// `captures_iter` whose name says secret. No match holds a [`BARRIER`] byte, so the matches
/// of the text between two barriers (a segment: a JSON field, a `k=v` pair of a query string)
/// are that segment's own; and a hit's name passes [`may_say_secret_quick`], so its segment
/// holds one of the [`name_fragments`]. One vector pass finds the fragments, and only their
/// segments are walked ([`assignment_ranges_walk`]); log text whose keys are `timestamp`,
/// `level`, `step` costs that pass alone.
pub(crate) fn assignment_ranges(text: &str, out: &mut Vec<Range<usize>>) {
    let Some(gate) = NAME_GATE.as_ref() else {
        assignment_ranges_walk(text, 0, out);
        return;
    };
    let bytes = text.as_bytes();
    // Every segment before `done` has been walked or holds no fragment; `done` is 0 or just
    // after a barrier.
    let mut done = 0;
    while done < bytes.len()
        && let Some(m) = gate.find_in(bytes, aho_corasick::Span::from(done..bytes.len()))
    {
        let mut start = m.start();
        while start > done && class(bytes[start - 1]) & BARRIER == 0 {
            start -= 1;
        }
        let mut end = m.start();
        while end < bytes.len() && class(bytes[end]) & BARRIER == 0 {
            end += 1;
        }
        // Barriers are ASCII: both ends are character boundaries.
        if let Some(segment) = text.get(start..end) {
            assignment_ranges_walk(segment, start, out);
        }
        done = end + 1;
    }
}

/// The `SecretAssignment` shape without its regex: the same matches as that regex's
/// `captures_iter` (leftmost-first, non-overlapping, each consuming its value whether or not
/// its name says secret), found from each `=`/`:` by parsing the value forwards and the name
/// backwards. The regex has no literal to skip ahead on, and on log text (`"key": "value"` on
/// every line) it matched on most lines; this visits each operator once, and most operators
/// of log text (`"level":"INFO"`, `step=12`) cost a look at the few characters of their
/// value. Its ranges are pushed offset by `base` (where `text` starts in the whole text).
fn assignment_ranges_walk(text: &str, base: usize, out: &mut Vec<Range<usize>>) {
    let bytes = text.as_bytes();
    // Where the regex would resume: the end of the last match.
    let mut resume = 0;
    let mut from = 0;
    while let Some(off) = bytes
        .get(from..)
        .and_then(|b| memchr::memchr2(b'=', b':', b))
    {
        let op = from + off;
        from = op + 1;
        // Forwards over `\s*\\?["']?([^\s"'\\&,;{}\[\]<>()]{8,})`, first to its eighth
        // character only: a shorter value is no match, whatever the name.
        let mut v = skip_space_forwards(text, op + 1);
        if bytes.get(v) == Some(&b'\\') {
            v += 1;
        }
        if matches!(bytes.get(v), Some(b'"' | b'\'')) {
            v += 1;
        }
        let (eighth, chars) = value_run(text, v, 8);
        if chars < 8 {
            continue;
        }
        // Backwards over `([A-Za-z_][A-Za-z0-9_.-]*)\\?"?\s*`, not into the last match.
        let mut j = skip_space_backwards(text, resume, op);
        if j > resume && bytes[j - 1] == b'"' {
            j -= 1;
        }
        if j > resume && bytes[j - 1] == b'\\' {
            j -= 1;
        }
        let name_end = j;
        let mut k = j;
        while k > resume && class(bytes[k - 1]) & NAME != 0 {
            k -= 1;
        }
        let Some(lead) = bytes[k..name_end]
            .iter()
            .position(|b| class(*b) & NAME_START != 0)
        else {
            continue;
        };
        let name_start = k + lead;
        // A match: it consumes its whole value.
        let (value_end, _) = value_run(text, eighth, usize::MAX);
        resume = value_end;
        from = value_end;
        let name = &text[name_start..name_end];
        if !may_say_secret_quick(name) {
            continue;
        }
        let value = &text[v..value_end];
        if assignment_value(value) && holds_secret_word(name) && name_says_secret(name) {
            out.push(base + v..base + value_end);
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn the_byte_classes_agree_with_the_regex_crate() {
        for b in 0u8..=255 {
            assert_eq!(class(b) & HIGH != 0, b >= 0x80, "{b:#x}");
            if b >= 0x80 {
                assert_eq!(class(b) & !HIGH, 0, "{b:#x}");
                continue;
            }
            let c = b as char;
            assert_eq!(class(b) & SPACE != 0, c.is_whitespace(), "{b:#x}");
            assert_eq!(
                class(b) & STOP != 0,
                c.is_whitespace() || "\"'\\&,;{}[]<>()".contains(c),
                "{b:#x}"
            );
            assert_eq!(
                class(b) & NAME != 0,
                c.is_ascii_alphanumeric() || "_.-".contains(c),
                "{b:#x}"
            );
            assert_eq!(
                class(b) & NAME_START != 0,
                c.is_ascii_alphabetic() || c == '_',
                "{b:#x}"
            );
            assert_eq!(class(b) & BARRIER != 0, "&,;{}[]<>()".contains(c), "{b:#x}");
            if class(b) & BARRIER != 0 {
                assert!(class(b) & STOP != 0 && class(b) & (NAME | SPACE) == 0);
            }
        }
    }

    #[test]
    fn the_trigger_and_known_value_gates_run_on_simd_here() {
        // On x86-64 with SSSE3 (every machine this runs on) and on aarch64, the gates are
        // Teddy searchers; elsewhere the automaton fallback is as exact, only slower.
        if cfg!(any(target_arch = "x86_64", target_arch = "aarch64"))
            && (cfg!(target_arch = "aarch64") || std::is_x86_feature_detected!("ssse3"))
        {
            assert_eq!(TRIGGERS.literals.gates(), 1);
        }
    }

    /// Every occurrence of `literals` in `hay` by brute force, sorted.
    fn brute(literals: &[String], hay: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        for start in 0..hay.len() {
            for (i, l) in literals.iter().enumerate() {
                if hay.as_bytes()[start..].starts_with(l.as_bytes()) {
                    out.push((start, i));
                }
            }
        }
        out
    }

    fn found(literals: &Literals, hay: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        literals.each(hay.as_bytes(), |start, i| out.push((start, i)));
        out.sort_unstable();
        out
    }

    #[test]
    fn literals_find_overlapping_occurrences_at_the_edges() {
        let literals: Vec<String> = ["abcabc", "bcab", "cab", "abcabcabc"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let set = Literals::new(&literals).unwrap_or_else(|| unreachable!());
        // Long enough for the vector searcher, with occurrences at the very start, straddling
        // a 16- and a 32-byte block, overlapping one another, and at the very end.
        let mut hay = String::from("abcabcabc");
        hay.push_str(&"x".repeat(20));
        hay.push_str("abcabcab");
        hay.push_str(&"y".repeat(29));
        hay.push_str("cabcabcabc");
        for cut in 0..=hay.len() {
            let h = &hay[..cut];
            assert_eq!(found(&set, h), brute(&literals, h), "{h:?}");
        }
    }

    #[test]
    fn more_literals_than_a_gate_holds_are_split_and_all_found() {
        let literals: Vec<String> = (0..75).map(|i| format!("lit{i:03}x")).collect();
        let set = Literals::new(&literals).unwrap_or_else(|| unreachable!());
        let hay: String = (0..75)
            .rev()
            .map(|i| format!("..lit{i:03}x"))
            .collect::<Vec<_>>()
            .concat();
        assert_eq!(found(&set, &hay), brute(&literals, &hay));
        assert_eq!(set.len_of(74), 7);
    }

    /// The walk over the whole text, without the fragment gate.
    fn walked(text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        assignment_ranges_walk(text, 0, &mut out);
        out
    }

    fn gated(text: &str) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        assignment_ranges(text, &mut out);
        out
    }

    #[test]
    fn the_name_gate_runs_on_simd_here() {
        if cfg!(target_arch = "aarch64")
            || (cfg!(target_arch = "x86_64") && std::is_x86_feature_detected!("ssse3"))
        {
            assert!(NAME_GATE.is_some());
        }
    }

    #[test]
    fn the_name_gate_finds_what_the_walk_finds_at_the_edges() {
        let value = "abcdefgh1234";
        let mut cases: Vec<String> = vec![
            format!("token={value}"),
            format!("KEY{value}x HF_TOKEN = {value}"),
            format!("{{\"level\":\"INFO\"}},{{\"Api_Key\" :  \"{value}\"}}"),
            format!("T_O_K_E_N={value}"),
            format!("P-A-S-S-W-O-R-D:\t{value}"),
            format!("x;sEcReT\n=\n'{value}';y"),
            format!("url=https://x/?token={value}&password={value}"),
            format!("(accessKey : {value}),[c_r_e_d_e_n_t_i_a_l={value}]"),
            format!("secretAccessKey\u{a0}=\u{2003}{value}"),
            format!("a_key={value}"),
        ];
        // Names straddling the gate's 16- and 32-byte blocks, after clean fields.
        for pad in 0..40 {
            let filler = "{\"ts\":\"2026-12-01T00:00:01Z\"},".repeat(3);
            cases.push(format!(
                "{}{}\"privateKey\":\"{value}\"",
                &filler[..pad.min(filler.len())],
                "x".repeat(pad % 7)
            ));
            cases.push(format!("{}Token={value}", ",".repeat(pad)));
        }
        let mut hits = 0;
        for text in &cases {
            for cut in 0..=text.len() {
                let Some(t) = text.get(..cut) else { continue };
                assert_eq!(gated(t), walked(t), "{t:?}");
                let Some(t) = text.get(cut..) else { continue };
                assert_eq!(gated(t), walked(t), "{t:?}");
            }
            hits += gated(text).len();
        }
        assert!(hits >= cases.len(), "the cases hold hits ({hits})");
    }

    #[test]
    fn each_word_is_found_at_every_offset_around_the_buffer_s_length() {
        for word in ["token", "SECRET", "Pass", "credential", "KEY"] {
            for total in [5, 10, 63, 64, 65, 80] {
                for at in [0, 1, 30, 54, 59, 60, 61, 62, 63, 64, 70] {
                    if at + word.len() > total {
                        continue;
                    }
                    let name = format!(
                        "{}{word}{}",
                        "x".repeat(at),
                        "y".repeat(total - at - word.len())
                    );
                    assert!(holds_secret_word(&name), "{name}");
                    assert!(holds_secret_word_by_window(&name), "{name}");
                    // The same with separators, which neither counts.
                    let spaced = name.replace('x', "x_");
                    assert!(holds_secret_word(&spaced), "{spaced}");
                }
            }
            assert!(!holds_secret_word(&"x".repeat(65)));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn the_name_gate_agrees_with_the_walk(
            text in "([A-Za-z_.-]{0,6}(KEY|kEy|Token|secret|pass|_key|Key|c-R|x)?[ \"\\\\]{0,2}[=:][ \"'\\\\\u{a0}]{0,2}[ -~é]{0,14}[,;{}()&<>\\[\\]]?){0,8}"
        ) {
            prop_assert_eq!(gated(&text), walked(&text));
        }

        #[test]
        fn every_name_that_may_say_secret_holds_a_fragment(
            name in "[A-Za-z0-9_.-]{0,24}|[A-Za-z_.-]{0,4}(t_?o-?k_?e_?n|S_E-C_R_E_T|pa_s_s|KE_Y|c_r_e_d|y)[A-Za-z_.-]{0,4}",
        ) {
            if may_say_secret_quick(&name) {
                let fragments = name_fragments();
                prop_assert!(
                    name.as_bytes().windows(2).any(|w| fragments.iter().any(|f| f == w)),
                    "{:?}", name
                );
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn literals_find_what_brute_force_finds(
            literals in prop::collection::vec("[ab]{1,5}", 1..40),
            hay in "[abc]{0,200}",
        ) {
            let set = Literals::new(&literals).unwrap_or_else(|| unreachable!());
            prop_assert_eq!(found(&set, &hay), brute(&literals, &hay));
        }

        #[test]
        fn the_secret_word_check_says_what_the_window_said(
            name in "[A-Za-z0-9_.-]{0,24}|[A-Za-z_.-]{0,4}(t_?o-?k_?e_?n|S_E-C_R_E_T|pa_s_s|KE_Y|c_r_e_d_e_n_t_i_a_l|c_r_e_d|y)[A-Za-z_.-]{0,4}|[A-Za-z_-]{60,70}(TOKEN|key)?|\\PC{0,80}",
        ) {
            prop_assert_eq!(holds_secret_word(&name), holds_secret_word_by_window(&name), "{:?}", name);
        }

        #[test]
        fn the_quick_check_holds_for_every_name_holding_a_secret_word(
            name in "[A-Za-z0-9_.-]{0,24}|[A-Za-z_.-]{0,4}(t_?o-?k_?e_?n|S_E-C_R_E_T|pa_s_s|KE_Y|c_r_e_d|y)[A-Za-z_.-]{0,4}",
        ) {
            if holds_secret_word(&name) {
                prop_assert!(may_say_secret_quick(&name));
            }
        }
    }
}

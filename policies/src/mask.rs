//! Masking of a credential shown to a person (`whoami`): at most its last 4 characters.

use secrecy::{ExposeSecret as _, SecretString};

/// Keys shorter than this show nothing but the ellipsis: 4 characters of a short key would
/// give away too large a share of it.
pub const MIN_LEN_FOR_TAIL: usize = 12;

/// `…wxyz` for a key ending in `wxyz`; `…` alone for a key shorter than
/// [`MIN_LEN_FOR_TAIL`] characters (or an empty one).
pub fn mask_key(key: &SecretString) -> String {
    let chars: Vec<char> = key.expose_secret().trim().chars().collect();
    if chars.len() < MIN_LEN_FOR_TAIL {
        return "…".to_string();
    }
    let tail: String = chars[chars.len() - 4..].iter().collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_key_keeps_only_its_last_four_characters() {
        let masked = mask_key(&SecretString::from("pit_abcdefghijklmnopwxyz"));
        assert_eq!(masked, "…wxyz");
    }

    #[test]
    fn a_short_key_shows_nothing() {
        assert_eq!(mask_key(&SecretString::from("short-key")), "…");
        assert_eq!(mask_key(&SecretString::from("")), "…");
    }

    #[test]
    fn multibyte_keys_are_cut_on_characters() {
        assert_eq!(mask_key(&SecretString::from("ééééééééééééabcd")), "…abcd");
    }
}

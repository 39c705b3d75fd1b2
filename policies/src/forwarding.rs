//! Which secrets a run may receive: the one list, and the check of the names an assistant asks
//! to forward (names only, never values).

use std::fmt;

/// The only secrets a run can receive, by name (the platform forwards no others).
pub const FORWARDABLE: [&str; 2] = ["WANDB_API_KEY", "HF_TOKEN"];

/// Whether a run may receive the secret called `name`.
pub fn is_forwardable(name: &str) -> bool {
    FORWARDABLE.contains(&name)
}

/// Why an `env` entry is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvNameRefusal {
    /// `NAME=value`: a value where a name belongs.
    CarriesValue { index: usize, name: String },
    /// A name the platform does not forward (the first 40 characters).
    NotForwardable {
        index: usize,
        shown: String,
        platform_key: bool,
    },
}

impl fmt::Display for EnvNameRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EnvNameRefusal::CarriesValue { index, name } => write!(
                f,
                "env[{index}]: `{name}=…` carries a value; pass the name only (e.g. \"{name}\") and set the value in the server's environment."
            ),
            EnvNameRefusal::NotForwardable {
                index,
                shown,
                platform_key,
            } => write!(
                f,
                "env[{index}]: `{shown}` cannot be forwarded: a run can receive only WANDB_API_KEY and HF_TOKEN{}.",
                if *platform_key {
                    " (the platform key is never forwarded)"
                } else {
                    ""
                }
            ),
        }
    }
}

/// The names to forward, deduplicated in order; refused when one carries a value or is not
/// forwardable.
pub fn check_env_names(names: &[String]) -> Result<Vec<String>, EnvNameRefusal> {
    let mut out = Vec::new();
    for (index, n) in names.iter().enumerate() {
        if n.contains('=') {
            let name = n.split('=').next().unwrap_or_default().to_string();
            return Err(EnvNameRefusal::CarriesValue { index, name });
        }
        if !is_forwardable(n) {
            return Err(EnvNameRefusal::NotForwardable {
                index,
                shown: n.chars().take(40).collect(),
                platform_key: n == "PRIME_API_KEY",
            });
        }
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    Ok(out)
}

/// Refuse a plan that names a secret the server holds no value for (`has_value`), before a
/// person is asked: the launch could not send it.
pub fn check_values_held(names: &[String], has_value: impl Fn(&str) -> bool) -> Result<(), String> {
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !has_value(n))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.join(", ");
    Err(format!(
        "env names {list}, but the server has no value for {}: set it in the server's environment (or the policy's secrets.env_file) and restart the server, or drop it from env. Nothing was planned.",
        if missing.len() == 1 { "it" } else { "them" }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_the_two_run_secrets_are_forwarded_once_each() {
        assert_eq!(
            check_env_names(&names(&["HF_TOKEN", "WANDB_API_KEY", "HF_TOKEN"])).unwrap(),
            names(&["HF_TOKEN", "WANDB_API_KEY"])
        );
        let e = check_env_names(&names(&["PRIME_API_KEY"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("the platform key is never forwarded"),
            "{e}"
        );
        let e = check_env_names(&names(&["HF_TOKEN", "AWS_SECRET"])).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("env[1]: `AWS_SECRET` cannot be forwarded")
        );
    }

    #[test]
    fn a_name_without_a_value_on_the_server_is_refused_by_name() {
        let held = |n: &str| n == "WANDB_API_KEY";
        assert!(check_values_held(&names(&["WANDB_API_KEY"]), held).is_ok());
        let e = check_values_held(&names(&["WANDB_API_KEY", "HF_TOKEN"]), held).unwrap_err();
        assert!(
            e.starts_with("env names HF_TOKEN, but the server has no value for it"),
            "{e}"
        );
        assert!(check_values_held(&[], held).is_ok());
    }

    #[test]
    fn a_value_is_refused_without_echoing_it() {
        let e = check_env_names(&names(&["HF_TOKEN=hf_abcdef"])).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("`HF_TOKEN=…` carries a value"), "{text}");
        assert!(!text.contains("hf_abcdef"));
    }
}

//! Which optional checkers `validate_config` runs: the policy decides (`[validate]`,
//! `factory_policies::checkers`); an argument that asks for one is refused, saying how a person
//! turns it on.

use std::ffi::OsString;
use std::path::PathBuf;

use factory_policies::checkers;

use crate::reply::ToolError;
use crate::state::AppState;

/// `(checkout to run, why the configured checkout is refused, run the prime CLI)`.
pub fn gate(
    state: &AppState,
    checkout_arg: Option<&str>,
    prime_cli_arg: Option<bool>,
) -> Result<(Option<PathBuf>, Option<String>, bool), ToolError> {
    let v = &state.policy.validate;
    if checkout_arg.is_some() {
        return Err(ToolError::new(format!(
            "Refused: `prime_rl_checkout` is not a tool argument. Running a prime-rl checkout {}.",
            checkers::BY_POLICY_ONLY
        )));
    }
    if prime_cli_arg == Some(true) && !v.prime_cli {
        return Err(ToolError::new(format!(
            "Refused: `prime_cli` is not enabled on this server. The prime CLI checker {}.",
            checkers::BY_POLICY_ONLY
        )));
    }
    let (checkout, refused) = match &v.prime_rl_checkout {
        None => (None, None),
        Some(dir) => match checkers::checkout_dir(state.workspace().ok(), dir) {
            Ok(c) => (Some(c), None),
            Err(why) => (None, Some(why)),
        },
    };
    Ok((checkout, refused, v.prime_cli))
}

/// The `PATH` the checkers search: this process's, without relative entries or directories
/// inside the workspace and the allowed directories.
pub fn search_path(state: &AppState) -> Option<OsString> {
    let path = std::env::var_os("PATH")?;
    checkers::search_path(state.workspace().ok(), &path)
}

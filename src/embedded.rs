//! The embedded sandbox behind `serve --sandbox` (and, later, the demo): started in-process on
//! an ephemeral loopback port, with the tools pointed at it as its first seeded user.

use factory_sandbox::{Sandbox, SandboxHandle, SandboxOptions};
use factory_tools::state::PlatformOverride;
use secrecy::SecretString;

/// Start the simulator and describe how the platform client reaches it.
pub async fn start(speed: f64) -> Result<(SandboxHandle, PlatformOverride), String> {
    let handle = Sandbox::start(SandboxOptions::with_speed(speed))
        .await
        .map_err(|e| format!("cannot start the embedded sandbox: {e}"))?;
    let key = handle
        .api_key(0)
        .ok_or("the sandbox seed has no user to act as")?;
    let over = PlatformOverride {
        base_url: handle.base_url(),
        traces_url: handle.base_url(),
        api_key: SecretString::from(key),
        frontend_url: Some(handle.frontend_url()),
    };
    Ok((handle, over))
}

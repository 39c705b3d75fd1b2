//! A real authorization server for the gateway's OAuth tests: `oidc-provider` (npm) on the
//! Node 22 of the interop set-up, run by `tests/oidc/provider.mjs` on a loopback port, with keys
//! from a JWKS file written here (so a test can mint tokens with the provider's own keys, and
//! restart the provider with rotated keys on the same port). Missing Node or oidc-provider is a
//! failure with the install command, never a skip.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Where the interop peers are: `FACTORY_MCP_INTEROP_DIR`, else the checkout's `.interop`.
fn interop_dir() -> PathBuf {
    std::env::var_os("FACTORY_MCP_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".interop"))
}

const HINT: &str = "install it with scripts/setup-interop.sh (Node 22 into .interop/node, \
                    oidc-provider into .interop/oidc) and export FACTORY_MCP_INTEROP_DIR=<that .interop>";

/// Node 22 and the oidc-provider install, or a panic saying how to install them.
fn node_and_oidc() -> (PathBuf, PathBuf) {
    let dir = interop_dir();
    let node = dir.join("node/node_modules/.bin/node");
    let oidc = dir.join("oidc");
    assert!(
        node.is_file(),
        "Node 22 not found at {}: {HINT}",
        node.display()
    );
    assert!(
        oidc.join("node_modules/oidc-provider/package.json")
            .is_file(),
        "oidc-provider not found under {}: {HINT}",
        oidc.display()
    );
    (node, oidc)
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs")
}

async fn run_script(args: &[&str]) -> String {
    let (node, oidc) = node_and_oidc();
    let out = tokio::process::Command::new(node)
        .arg(script())
        .args(args)
        .env("FACTORY_MCP_OIDC_DIR", oidc)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run node");
    assert!(
        out.status.success(),
        "provider.mjs {:?} failed: {}",
        args.first(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

/// A running `oidc-provider`.
pub struct Provider {
    child: Option<tokio::process::Child>,
    pub port: u16,
    pub issuer: String,
    pub resource: String,
    pub jwks: PathBuf,
    redirect_uris: Vec<String>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.start_kill();
        }
    }
}

impl Provider {
    /// Start a provider for `resource` with fresh keys written to `dir/jwks.json`.
    pub async fn start(dir: &Path, resource: &str, redirect_uris: &[String]) -> Provider {
        let jwks = dir.join("jwks.json");
        run_script(&["keys", jwks.to_str().expect("utf-8 path")]).await;
        let mut p = Provider {
            child: None,
            port: 0,
            issuer: String::new(),
            resource: resource.to_owned(),
            jwks,
            redirect_uris: redirect_uris.to_vec(),
        };
        p.spawn().await;
        p
    }

    async fn spawn(&mut self) {
        let (node, oidc) = node_and_oidc();
        let config = json!({
            "jwks": self.jwks,
            "resource": self.resource,
            "port": self.port,
            "redirect_uris": self.redirect_uris,
        });
        let mut child = tokio::process::Command::new(node)
            .arg(script())
            .arg("serve")
            .arg(config.to_string())
            .env("FACTORY_MCP_OIDC_DIR", oidc)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn the oidc provider");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let port = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(p) = line.strip_prefix("listening ") {
                    return p.trim().parse::<u16>().expect("port");
                }
            }
            panic!("the oidc provider exited before listening");
        })
        .await
        .expect("the oidc provider listens within 30 s");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.port = port;
        self.issuer = format!("http://127.0.0.1:{port}");
        self.child = Some(child);
    }

    /// Stop the provider, write new keys (new `kid`s), start it again on the same port.
    pub async fn restart_with_rotated_keys(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill().await;
        }
        run_script(&["keys", self.jwks.to_str().expect("utf-8 path")]).await;
        self.spawn().await;
    }

    /// A client-credentials access token for `resource` (the provider's answer as JSON on
    /// failure).
    pub async fn client_token(
        &self,
        client: &str,
        scope: &str,
        resource: &str,
    ) -> Result<String, Value> {
        let http = reqwest::Client::new();
        let mut form = vec![("grant_type", "client_credentials"), ("resource", resource)];
        if !scope.is_empty() {
            form.push(("scope", scope));
        }
        let answer: Value = http
            .post(format!("{}/token", self.issuer))
            .basic_auth(client, Some(format!("{client}-secret")))
            .form(&form)
            .send()
            .await
            .expect("token request")
            .json()
            .await
            .expect("token answer");
        match answer.get("access_token").and_then(Value::as_str) {
            Some(t) => Ok(t.to_owned()),
            None => Err(answer),
        }
    }

    /// A JWT access token with `claims`, signed with the provider's current ES256 key.
    pub async fn mint(&self, claims: Value) -> String {
        run_script(&[
            "mint",
            self.jwks.to_str().expect("utf-8 path"),
            &claims.to_string(),
        ])
        .await
    }
}

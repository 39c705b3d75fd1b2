//! Headless Chromium (JavaScript off) behind chromedriver's W3C WebDriver API, for the tests
//! that drive a page as a person would (tests/e2e_page.rs, tests/gateway_oauth.rs). A missing
//! browser fails with an install hint; it is never skipped.

use std::{path::PathBuf, process::Stdio};

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

pub const INSTALL_HINT: &str = "the approval-page test needs headless Chromium and chromedriver: install them with `apt-get install -y chromium chromium-driver` (.ci/run does), or point FACTORY_MCP_CHROMIUM / FACTORY_MCP_CHROMEDRIVER at them";

pub fn find_program(env_var: &str, names: &[&str]) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path).chain([PathBuf::from("/usr/bin")]) {
        for n in names {
            let c = dir.join(n);
            if c.is_file() {
                return c;
            }
        }
    }
    panic!("{names:?} not found. {INSTALL_HINT}");
}

/// Headless Chromium behind chromedriver, with a fresh profile; JavaScript is off.
pub struct Browser {
    driver: tokio::process::Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start() -> Browser {
        let chromium = find_program("FACTORY_MCP_CHROMIUM", &["chromium", "chromium-browser"]);
        let chromedriver = find_program("FACTORY_MCP_CHROMEDRIVER", &["chromedriver"]);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut driver = tokio::process::Command::new(&chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}. {INSTALL_HINT}",
                    chromedriver.display()
                )
            });
        // chromedriver says when it listens.
        let mut lines = tokio::io::BufReader::new(driver.stdout.take().unwrap()).lines();
        loop {
            match lines.next_line().await {
                Ok(Some(l)) if l.contains("started successfully") => break,
                Ok(Some(_)) => {}
                _ => panic!("chromedriver exited before it was ready. {INSTALL_HINT}"),
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let profile = tempfile::tempdir().unwrap();
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        // `implicit`: a find waits (up to 15 s) for its element — after a form is submitted
        // the next page may still be loading on a busy machine. A bound, not a timed assertion.
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "timeouts": {"implicit": 15000},
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                    "--window-size=1100,1400",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
                "prefs": {"profile.managed_default_content_settings.javascript": 2}
            }
        }}});
        let resp: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .unwrap();
        let session = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver refused a session: {resp}. {INSTALL_HINT}"))
            .to_string();
        Browser {
            driver,
            base,
            session,
            http,
            _profile: profile,
        }
    }

    pub async fn cmd(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.expect("webdriver").json().await.unwrap();
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.cmd(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    pub async fn find(&self, css: &str) -> Option<String> {
        let v = self
            .cmd(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v.as_object()?
            .iter()
            .find(|(k, _)| k.starts_with("element-"))
            .and_then(|(_, id)| id.as_str().map(str::to_owned))
    }

    pub async fn text(&self, css: &str) -> String {
        let id = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("no {css} on the page"));
        self.cmd(reqwest::Method::GET, &format!("/element/{id}/text"), None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    pub async fn click(&self, css: &str) {
        let id = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("no {css} on the page"));
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/click"),
            Some(json!({})),
        )
        .await;
    }

    pub async fn screenshot(&self) -> Vec<u8> {
        let b64 = self.cmd(reqwest::Method::GET, "/screenshot", None).await;
        base64::engine::general_purpose::STANDARD
            .decode(b64.as_str().expect("screenshot"))
            .expect("base64 PNG")
    }

    /// The page cookie the browser holds (`name=value`).
    pub async fn page_cookie(&self) -> Option<String> {
        let v = self
            .cmd(reqwest::Method::GET, "/cookie/factory_mcp_page", None)
            .await;
        Some(format!("factory_mcp_page={}", v["value"].as_str()?))
    }

    /// The address the browser is at.
    pub async fn current_url(&self) -> String {
        self.cmd(reqwest::Method::GET, "/url", None)
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// All the text of the page.
    pub async fn body_text(&self) -> String {
        self.text("body").await
    }

    /// Type `text` into the element `css`.
    pub async fn type_into(&self, css: &str, text: &str) {
        let id = self
            .find(css)
            .await
            .unwrap_or_else(|| panic!("no {css} on the page"));
        self.cmd(
            reqwest::Method::POST,
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    pub async fn quit(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
        let _ = self.driver.kill().await;
    }
}

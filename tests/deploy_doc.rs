//! docs/DEPLOY.md as an operator would follow it (issue 21 §3): every `sh` block of the guide,
//! in order, run as one bash script (`set -euo pipefail`) against a real PostgreSQL
//! (`common::postgres`), a real `oidc-provider` as the issuer (`common::oidc`) and the sandbox
//! as the platform. The guide's first block reads its site settings from the environment with
//! defaults; this test sets them to its own loopback addresses. The script starts three
//! replicas, checks them, scrapes their metrics and stops them; whatever it leaves running is
//! killed with its process group.

mod common;

use std::{process::Stdio, time::Duration};

use common::{World, oidc::Provider, postgres::Postgres};

const GUIDE: &str = include_str!("../docs/DEPLOY.md");

/// The `sh` blocks of a Markdown text, in order.
fn sh_blocks(md: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in md.lines() {
        match current.as_mut() {
            None if line.trim_end() == "```sh" => current = Some(String::new()),
            Some(block) if line.trim_end() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "an `sh` block is not closed");
    blocks
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn pg_bindir() -> String {
    let out = std::process::Command::new("pg_config")
        .arg("--bindir")
        .output()
        .expect("pg_config (PostgreSQL: apt-get install -y postgresql)");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn the_guide_has_the_blocks_this_test_runs() {
    let blocks = sh_blocks(GUIDE);
    let all = blocks.concat();
    for step in [
        "CREATE DATABASE factory",
        "gateway.toml",
        "factory-mcp serve --http",
        "/readyz",
        "oauth-protected-resource",
        "/metrics",
    ] {
        assert!(all.contains(step), "no `sh` block runs {step:?}");
    }
    assert!(sh_blocks("```sh\necho a\n```\ntext\n```sh\necho b\n```\n").len() == 2);
}

#[tokio::test]
async fn the_deploy_guide_runs_as_written() {
    let w = World::new().await;
    let pg = Postgres::start();
    let scratch = tempfile::tempdir().expect("tempdir");
    let public = "http://gateway.test";
    let issuer = Provider::start(scratch.path(), &format!("{public}/mcp"), &[]).await;
    let ports: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let metrics: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .parent()
        .expect("the binary's directory")
        .display()
        .to_string();
    let conf = scratch.path().join("factory");
    let script = format!("set -euo pipefail\n{}", sh_blocks(GUIDE).join("\n"));
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(&script)
        .current_dir(scratch.path())
        .env_clear()
        .envs(w.env(0))
        .env(
            "PATH",
            format!(
                "{bin}:{}:{}",
                pg_bindir(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", pg.port.to_string())
        .env("PGUSER", &pg.user)
        .env("PGDATABASE", "postgres")
        .env("FACTORY_PUBLIC_URL", public)
        .env("FACTORY_ISSUER", &issuer.issuer)
        .env("FACTORY_PAGE_CLIENT", "page")
        .env("FACTORY_DB", format!("127.0.0.1:{}", pg.port))
        .env("FACTORY_DB_SSLMODE", "disable")
        .env("FACTORY_PORTS", ports.join(" "))
        .env("FACTORY_METRICS_PORTS", metrics.join(" "))
        .env("FACTORY_CONF", &conf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd.spawn().expect("bash");
    let group = child.id().expect("pid") as i32;
    let out = tokio::time::timeout(Duration::from_secs(300), child.wait_with_output()).await;
    // Whatever the script left running (a replica after a failed step) goes with its group.
    // SAFETY: killpg on the group this test created; no memory is touched.
    unsafe { libc::killpg(group, libc::SIGKILL) };
    let out = out
        .expect("the guide's commands finish within 5 minutes")
        .expect("bash ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logs: String = (1..=3)
        .map(|n| {
            let log = std::fs::read_to_string(conf.join(format!("replica{n}.log")));
            format!("--- replica{n}.log\n{}\n", log.unwrap_or_default())
        })
        .collect();
    assert!(
        out.status.success(),
        "the guide's commands failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}\n{logs}",
        out.status
    );
    // Three replicas up and ready (the database and the platform answered each).
    assert_eq!(stdout.matches(r#""status":"ok""#).count(), 3, "{stdout}");
    assert_eq!(stdout.matches(r#""status":"ready""#).count(), 3, "{stdout}");
    // The resource metadata names the gateway and the issuer.
    assert!(
        stdout.contains(&format!(r#""resource":"{public}/mcp""#)),
        "{stdout}"
    );
    assert!(stdout.contains(&issuer.issuer), "{stdout}");
    // A call without a token is pointed at the metadata.
    assert!(
        stdout
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer resource_metadata="),
        "{stdout}"
    );
    // Each replica's metrics listener refused a scrape without its token and answered one with it.
    assert_eq!(stdout.matches("no token: 401").count(), 3, "{stdout}");
    assert_eq!(stdout.matches("metrics: 200").count(), 3, "{stdout}");
    // The migrations ran once, in the database the guide created, owned by its role.
    let tables = pg.psql(
        &pg.url("factory"),
        "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public' AND table_catalog = 'factory'",
    );
    assert!(tables.parse::<u32>().unwrap_or(0) >= 5, "{tables}");
    // Nothing secret reached the output: the state password and the metrics token.
    for secret in ["state-password", "metrics-token"] {
        let value = std::fs::read_to_string(conf.join(secret)).expect(secret);
        assert!(!stdout.contains(value.trim()) && !stderr.contains(value.trim()));
        assert!(!logs.contains(value.trim()), "{secret} in a replica's log");
    }
}

//! The Python wheel (pyproject.toml, maturin `bindings = "bin"`), built by
//! `scripts/build-wheel.sh` before `cargo test` (scripts/test.sh does it): installed into a
//! fresh venv with pip, offline, the installed `factory-mcp` answers `--version` and runs the
//! demo; its metadata carries the README with the MCP Registry's ownership marker. Prints the
//! time from creating the venv to the demo's first step.
//!
//! Without a wheel the test prints a skip note and passes, except when run by scripts/test.sh
//! (`FACTORY_MCP_INTEROP_DIR` set) or under CI (`CI` set), where it fails.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn wheel() -> Option<PathBuf> {
    // target/debug/factory-mcp → target/wheels/
    let exe = Path::new(env!("CARGO_BIN_EXE_factory-mcp"));
    let wheels = exe.parent()?.parent()?.join("wheels");
    let prefix = format!("factory_mcp-{VERSION}-");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&wheels)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.starts_with(&prefix) && n.ends_with(".whl")
        })
        .collect();
    found.sort();
    found.pop()
}

fn must_run() -> bool {
    std::env::var_os("CI").is_some() || std::env::var_os("FACTORY_MCP_INTEROP_DIR").is_some()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().expect("command starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_its_binary_runs_the_demo() {
    let Some(wheel) = wheel() else {
        let msg = "no wheel in target/wheels: run scripts/build-wheel.sh (scripts/test.sh does)";
        assert!(!must_run(), "{msg}");
        eprintln!("skipped: {msg}");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let started = Instant::now();
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv));
    run(Command::new(venv.join("bin/pip"))
        .args([
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--disable-pip-version-check",
        ])
        .arg(&wheel));
    let bin = venv.join("bin/factory-mcp");
    assert!(bin.is_file(), "the wheel installed no factory-mcp script");

    // `--version` from the installed copy.
    let version = run(Command::new(&bin).arg("--version"));
    assert_eq!(version.trim(), format!("factory-mcp {VERSION}"));

    // The demo from the installed copy, with a clean environment and PATH holding only the
    // venv: the server it starts is the installed binary too.
    let mut child = Command::new(&bin)
        .args(["demo", "--no-color"])
        .env_clear()
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", venv.join("bin").display()),
        )
        .env("HOME", &home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the installed factory-mcp starts");
    let mut stdout = String::new();
    let mut first_step = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if first_step.is_none() && line.contains("[ 1/11] whoami") {
            first_step = Some(started.elapsed());
        }
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the installed demo failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Demo complete: every step succeeded."),
        "{stdout}"
    );
    assert_eq!(stdout.matches("    ✓ ").count(), 11, "{stdout}");
    let first_step = first_step.expect("the demo printed its first step");
    eprintln!(
        "wheel {}: fresh venv to the demo's first step in {:.1} s (whole demo done at {:.1} s)",
        wheel.file_name().unwrap().to_string_lossy(),
        first_step.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    // The package's description is the README, with the registry's ownership marker.
    let metadata = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| {
            e.path().join(format!(
                "site-packages/factory_mcp-{VERSION}.dist-info/METADATA"
            ))
        })
        .find(|p| p.is_file())
        .expect("the wheel's METADATA is installed");
    let metadata = std::fs::read_to_string(metadata).unwrap();
    assert!(
        metadata.contains("<!-- mcp-name: io.github.factory-mcp/factory-mcp -->"),
        "{metadata}"
    );
    assert!(
        metadata.contains(&format!("Version: {VERSION}\n")),
        "{metadata}"
    );
}

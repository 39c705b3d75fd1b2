//! `factory-mcp completions SHELL` and `factory-mcp man` come from the clap definitions: every
//! subcommand is in them, and an unknown shell is a usage error.

use std::process::Command;

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(args)
        .output()
        .expect("factory-mcp runs")
}

const SUBCOMMANDS: [&str; 10] = [
    "serve",
    "sandbox",
    "check-config",
    "guard",
    "approve",
    "demo",
    "setup",
    "doctor",
    "completions",
    "man",
];

#[test]
fn completions_cover_every_subcommand_for_each_shell() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        for sub in SUBCOMMANDS {
            assert!(text.contains(sub), "{shell} completion lacks {sub}");
        }
    }
    assert!(
        String::from_utf8(run(&["completions", "bash"]).stdout)
            .unwrap()
            .contains("claude-code")
    );
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));
}

#[test]
fn the_man_page_is_roff_for_factory_mcp_with_its_subcommands() {
    let out = run(&["man"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(".TH factory-mcp 1"), "{text}");
    for sub in SUBCOMMANDS {
        assert!(
            text.contains(&format!("factory\\-mcp\\-{}", sub.replace('-', "\\-"))),
            "{sub}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["man", "--out", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    for sub in SUBCOMMANDS {
        assert!(
            dir.path().join(format!("factory-mcp-{sub}.1")).is_file(),
            "{sub}"
        );
    }
}

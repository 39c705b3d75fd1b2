//! `factory-mcp setup CLIENT` on fixtures, for the four clients: a fresh file, an existing one
//! with other servers and comments, a malformed one (refused, nothing changed), and a second
//! run (nothing changed). Each test runs the real binary with a temporary HOME.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use tempfile::TempDir;

struct Env {
    home: TempDir,
    project: TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            home: tempfile::tempdir().unwrap(),
            project: tempfile::tempdir().unwrap(),
        }
    }

    fn project(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    fn setup(&self, args: &[&str]) -> Output {
        std::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
            .arg("setup")
            .args(args)
            .args(["--command", "factory-mcp"])
            .current_dir(self.project.path())
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.home.path())
            .output()
            .expect("factory-mcp runs")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "setup failed:\n{stdout}\n{}",
        text(&out.stderr)
    );
    stdout
}

fn fixture(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/setup")
            .join(name),
    )
    .unwrap()
}

fn put(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, content).unwrap();
}

fn jsonc(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let opts = jsonc_parser::ParseOptions::default();
    let v: Option<Value> = jsonc_parser::parse_to_serde_value(&text, &opts).unwrap();
    v.unwrap()
}

fn toml_doc(path: &Path) -> toml::Table {
    toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn backups(path: &Path) -> Vec<PathBuf> {
    let dir = path.parent().unwrap();
    let name = path.file_name().unwrap().to_str().unwrap().to_string();
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_str().unwrap();
            n.starts_with(&format!("{name}.factory-mcp.bak"))
        })
        .collect();
    v.sort();
    v
}

/// One client: where its file goes (project scope unless said), the fixtures, and what the
/// added entry must be.
struct Case {
    client: &'static str,
    args: &'static [&'static str],
    file: fn(&Env) -> PathBuf,
    existing: &'static str,
    malformed: &'static str,
    /// The entry as read back (JSON, or the TOML table converted to JSON).
    read: fn(&Path, &str) -> Option<Value>,
    expected: fn(&Env) -> Value,
    /// What must still be there after the edit, as read back.
    kept: fn(&Path) -> Vec<Value>,
}

fn json_entry(key: &'static str) -> impl Fn(&Path, &str) -> Option<Value> {
    move |p, name| jsonc(p)[key].get(name).cloned()
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            client: "claude-code",
            args: &[],
            file: |e| e.project().join(".mcp.json"),
            existing: "claude-existing.json",
            malformed: "claude-malformed.json",
            read: |p, n| json_entry("mcpServers")(p, n),
            expected: |e| {
                json!({"type": "stdio", "command": "factory-mcp",
                       "args": ["serve", "--workspace", e.project().to_str().unwrap()]})
            },
            kept: |p| {
                let d = jsonc(p);
                vec![d["mcpServers"]["github"].clone(), d["numStartups"].clone()]
            },
        },
        Case {
            client: "cursor",
            args: &[],
            file: |e| e.project().join(".cursor/mcp.json"),
            existing: "cursor-existing.json",
            malformed: "cursor-malformed.json",
            read: |p, n| json_entry("mcpServers")(p, n),
            expected: |_| {
                json!({"command": "factory-mcp",
                       "args": ["serve", "--workspace", "${workspaceFolder}"]})
            },
            kept: |p| {
                let d = jsonc(p);
                vec![
                    d["mcpServers"]["linear"].clone(),
                    d["mcpServers"]["fs"].clone(),
                ]
            },
        },
        Case {
            client: "vscode",
            args: &[],
            file: |e| e.project().join(".vscode/mcp.json"),
            existing: "vscode-existing.jsonc",
            malformed: "vscode-malformed.jsonc",
            read: |p, n| json_entry("servers")(p, n),
            expected: |_| {
                json!({"type": "stdio", "command": "factory-mcp",
                       "args": ["serve", "--workspace", "${workspaceFolder}"],
                       "env": {"PRIME_API_KEY": "${input:prime-api-key}"}})
            },
            kept: |p| {
                let d = jsonc(p);
                vec![d["servers"]["wiki"].clone(), d["inputs"][0].clone()]
            },
        },
        Case {
            client: "codex",
            args: &[],
            file: |e| e.home.path().join(".codex/config.toml"),
            existing: "codex-existing.toml",
            malformed: "codex-malformed.toml",
            read: |p, n| {
                let t = toml_doc(p);
                let entry = t.get("mcp_servers")?.get(n)?;
                Some(serde_json::to_value(entry).unwrap())
            },
            expected: |e| {
                json!({"command": "factory-mcp",
                       "args": ["serve", "--workspace", e.project().to_str().unwrap()],
                       "env_vars": ["PRIME_API_KEY", "PRIME_TEAM_ID"],
                       "tool_timeout_sec": 300})
            },
            kept: |p| {
                let t = toml_doc(p);
                vec![
                    serde_json::to_value(&t["mcp_servers"]["docs"]).unwrap(),
                    serde_json::to_value(&t["profiles"]).unwrap(),
                    serde_json::to_value(&t["model"]).unwrap(),
                ]
            },
        },
    ]
}

#[test]
fn a_fresh_file_is_created_with_the_entry_and_a_second_run_changes_nothing() {
    for case in cases() {
        let env = Env::new();
        let mut args = vec![case.client];
        args.extend(case.args);
        let out = ok(&env.setup(&args));
        let file = (case.file)(&env);
        assert!(
            out.contains("added server \"factory\""),
            "{}: {out}",
            case.client
        );
        assert!(out.contains("(new file)"), "{out}");
        assert!(out.contains(&file.display().to_string()), "{out}");
        assert_eq!(
            (case.read)(&file, "factory"),
            Some((case.expected)(&env)),
            "{}",
            case.client
        );
        if case.client == "vscode" {
            assert_eq!(jsonc(&file)["inputs"][0]["id"], "prime-api-key");
            assert_eq!(jsonc(&file)["inputs"][0]["password"], true);
        }
        let before = std::fs::read(&file).unwrap();
        let again = ok(&env.setup(&args));
        assert!(
            again.contains("already configured: nothing to change"),
            "{again}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), before, "{}", case.client);
        assert!(
            backups(&file).is_empty(),
            "{}: {:?}",
            case.client,
            backups(&file)
        );
    }
}

#[test]
fn an_existing_file_keeps_its_servers_and_comments_and_is_backed_up() {
    for case in cases() {
        let env = Env::new();
        let file = (case.file)(&env);
        let original = fixture(case.existing);
        put(&file, &original);
        let kept_before = (case.kept)(&file);
        let out = ok(&env.setup(&[case.client]));
        assert!(out.contains("added server \"factory\""), "{out}");
        let after = std::fs::read_to_string(&file).unwrap();
        // Every comment line of the original is still there, word for word.
        for line in original
            .lines()
            .filter(|l| l.contains("//") || l.contains('#') || l.contains("/*"))
        {
            assert!(
                after.contains(line.trim()),
                "{}: lost {line:?}:\n{after}",
                case.client
            );
        }
        assert_eq!((case.kept)(&file), kept_before, "{}:\n{after}", case.client);
        assert_eq!(
            (case.read)(&file, "factory"),
            Some((case.expected)(&env)),
            "{after}"
        );
        let b = backups(&file);
        assert_eq!(b.len(), 1, "{}", case.client);
        assert_eq!(std::fs::read_to_string(&b[0]).unwrap(), original);
        assert!(
            out.contains(&format!("backup of the previous file: {}", b[0].display())),
            "{out}"
        );

        // Run twice: nothing changes, no second backup.
        let again = ok(&env.setup(&[case.client]));
        assert!(again.contains("already configured"), "{again}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), after);
        assert_eq!(backups(&file).len(), 1);
    }
}

#[test]
fn a_malformed_file_is_refused_and_left_untouched() {
    for case in cases() {
        let env = Env::new();
        let file = (case.file)(&env);
        let original = fixture(case.malformed);
        put(&file, &original);
        for extra in [&[][..], &["--dry-run"][..]] {
            let mut args = vec![case.client];
            args.extend(extra);
            let out = env.setup(&args);
            assert_eq!(out.status.code(), Some(1), "{}", case.client);
            let stderr = text(&out.stderr);
            let kind = if case.client == "codex" {
                "not valid TOML"
            } else {
                "not valid JSON"
            };
            assert!(stderr.contains(kind), "{}: {stderr}", case.client);
            assert!(stderr.contains("nothing was changed"), "{stderr}");
            assert!(stderr.contains(&file.display().to_string()), "{stderr}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
            assert!(backups(&file).is_empty());
        }
    }
}

#[test]
fn dry_run_shows_the_diff_and_writes_nothing() {
    for case in cases() {
        let env = Env::new();
        let file = (case.file)(&env);
        let original = fixture(case.existing);
        put(&file, &original);
        let out = ok(&env.setup(&[case.client, "--dry-run"]));
        assert!(
            out.contains("dry run: would add server \"factory\""),
            "{out}"
        );
        assert!(out.contains("nothing was written"), "{out}");
        assert!(out.contains(&format!("--- {}", file.display())), "{out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with('+') && l.contains("factory")),
            "{}: {out}",
            case.client
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
        assert!(backups(&file).is_empty());
        // A fresh file: the diff is all additions, and the file is still not created.
        let fresh = Env::new();
        let out = ok(&fresh.setup(&[case.client, "--dry-run"]));
        assert!(out.contains("would add"), "{out}");
        assert!(!(case.file)(&fresh).exists());
    }
}

#[test]
fn a_stale_entry_holding_a_key_is_replaced_and_the_key_goes() {
    let env = Env::new();
    let file = env.project().join(".mcp.json");
    let key = "pit_live_0123456789abcdefghijklmnop";
    put(
        &file,
        &format!(
            "{{\"mcpServers\": {{\"factory\": {{\"command\": \"/old/factory-mcp\", \"args\": [\"serve\"], \"env\": {{\"PRIME_API_KEY\": \"{key}\"}}}}, \"x\": {{\"command\": \"x\"}}}}}}\n"
        ),
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dry = ok(&env.setup(&["claude-code", "--dry-run"]));
    assert!(dry.contains("would replace server \"factory\""), "{dry}");
    assert!(!dry.contains(key), "the diff showed the key:\n{dry}");
    let out = ok(&env.setup(&["claude-code"]));
    assert!(out.contains("replaced server \"factory\""), "{out}");
    assert!(!out.contains(key));
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(!after.contains(key), "{after}");
    assert_eq!(jsonc(&file)["mcpServers"]["x"], json!({"command": "x"}));
    // The backup keeps the user's previous file as it was, with its permissions.
    assert!(
        std::fs::read_to_string(&backups(&file)[0])
            .unwrap()
            .contains(key)
    );
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&backups(&file)[0]), 0o600);
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn sandbox_and_user_scopes_write_where_each_client_reads() {
    let env = Env::new();
    // Claude Code, user scope: ~/.claude.json, with its other state kept.
    let claude = env.home.path().join(".claude.json");
    put(&claude, &fixture("claude-existing.json"));
    ok(&env.setup(&["claude-code", "--scope", "user", "--sandbox"]));
    let d = jsonc(&claude);
    assert_eq!(
        d["mcpServers"]["factory-sandbox"],
        json!({"type": "stdio", "command": "factory-mcp", "args": ["serve", "--sandbox"]})
    );
    assert_eq!(d["projects"], json!({"/somewhere": {"allowedTools": []}}));
    // Cursor, user scope.
    ok(&env.setup(&["cursor", "--scope", "user", "--sandbox"]));
    // A new user-scope file is owner-only.
    assert_eq!(
        std::fs::metadata(env.home.path().join(".cursor/mcp.json"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let c = jsonc(&env.home.path().join(".cursor/mcp.json"));
    let example: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("examples/clients/sandbox/cursor/.cursor/mcp.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(c, example, "the sandbox entry matches examples/clients");
    // VS Code sandbox: no key input.
    ok(&env.setup(&["vscode", "--sandbox"]));
    let v = jsonc(&env.project().join(".vscode/mcp.json"));
    assert!(v.get("inputs").is_none(), "{v}");
    assert_eq!(v["servers"]["factory-sandbox"]["args"][1], "--sandbox");
    // Codex, project scope, sandbox: the table of examples/clients/sandbox/codex.
    ok(&env.setup(&["codex", "--scope", "project", "--sandbox"]));
    let t = toml_doc(&env.project().join(".codex/config.toml"));
    assert_eq!(
        serde_json::to_value(&t["mcp_servers"]["factory-sandbox"]).unwrap(),
        json!({"command": "factory-mcp",
               "args": ["serve", "--sandbox", "--workspace", env.project().to_str().unwrap()]})
    );
    // Adding `factory` beside `factory-sandbox` keeps both.
    ok(&env.setup(&["codex", "--scope", "project"]));
    let t = toml_doc(&env.project().join(".codex/config.toml"));
    assert!(t["mcp_servers"].get("factory-sandbox").is_some());
    assert!(t["mcp_servers"].get("factory").is_some());
}

#[test]
fn an_unknown_client_is_a_usage_error() {
    let env = Env::new();
    let out = env.setup(&["emacs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("claude-code"),
        "{}",
        text(&out.stderr)
    );
}

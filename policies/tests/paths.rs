//! Path containment: files resolve inside the workspace or an allowed directory; traversal,
//! absolute paths elsewhere and symlinks pointing out are refused.

use std::fs;
use std::path::Path;

use factory_policies::paths::{PathError, Workspace};

struct Fixture {
    _tmp: tempfile::TempDir,
    ws: Workspace,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("ws");
    let outside = base.join("outside");
    fs::create_dir_all(root.join("configs")).expect("mkdir");
    fs::create_dir_all(&outside).expect("mkdir");
    fs::write(root.join("configs/rl.toml"), "x = 1").expect("write");
    fs::write(outside.join("secret.toml"), "x = 1").expect("write");
    let ws = Workspace::new(Some(root.clone()), vec![], Path::new("/"), None).expect("ws");
    Fixture {
        _tmp: tmp,
        ws,
        root,
        outside,
    }
}

#[test]
fn a_relative_path_inside_the_workspace_resolves() {
    let f = fixture();
    let p = f.ws.resolve_existing("configs/rl.toml").expect("inside");
    assert_eq!(p, f.root.join("configs/rl.toml"));
    let p =
        f.ws.resolve_existing("./configs/../configs/rl.toml")
            .expect("inside");
    assert_eq!(p, f.root.join("configs/rl.toml"));
}

#[test]
fn traversal_out_of_the_workspace_is_refused() {
    let f = fixture();
    let err =
        f.ws.resolve_existing("../outside/secret.toml")
            .expect_err("traversal");
    assert!(matches!(err, PathError::Traversal { .. }), "{err:?}");
    let err =
        f.ws.resolve_for_write("configs/../../outside/new")
            .expect_err("traversal");
    assert!(matches!(err, PathError::Traversal { .. }), "{err:?}");
}

#[test]
fn absolute_paths_outside_are_refused_and_inside_accepted() {
    let f = fixture();
    let outside = f.outside.join("secret.toml");
    let err =
        f.ws.resolve_existing(&outside.to_string_lossy())
            .expect_err("absolute escape");
    assert!(matches!(err, PathError::Outside { .. }), "{err:?}");
    assert!(err.to_string().contains("--allow-dir"));
    let err =
        f.ws.resolve_for_write("/etc/factory")
            .expect_err("absolute");
    assert!(matches!(err, PathError::Outside { .. }), "{err:?}");
    let inside = f.root.join("configs/rl.toml");
    f.ws.resolve_existing(&inside.to_string_lossy())
        .expect("absolute inside");
}

#[cfg(unix)]
#[test]
fn symlinks_pointing_out_are_refused() {
    let f = fixture();
    std::os::unix::fs::symlink(&f.outside, f.root.join("link_dir")).expect("symlink");
    std::os::unix::fs::symlink(f.outside.join("secret.toml"), f.root.join("link_file"))
        .expect("symlink");
    std::os::unix::fs::symlink(f.outside.join("nowhere"), f.root.join("dangling"))
        .expect("symlink");
    for arg in ["link_file", "link_dir/secret.toml"] {
        let err = f.ws.resolve_existing(arg).expect_err(arg);
        assert!(
            matches!(err, PathError::SymlinkEscape { .. }),
            "{arg}: {err:?}"
        );
    }
    for arg in ["link_dir", "link_dir/new/sub", "dangling"] {
        let err = f.ws.resolve_for_write(arg).expect_err(arg);
        assert!(
            matches!(err, PathError::SymlinkEscape { .. }),
            "{arg}: {err:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_staying_inside_is_fine() {
    let f = fixture();
    std::os::unix::fs::symlink(f.root.join("configs"), f.root.join("cfg")).expect("symlink");
    let p = f.ws.resolve_existing("cfg/rl.toml").expect("inside");
    assert_eq!(p, f.root.join("configs/rl.toml"));
}

#[test]
fn a_destination_that_does_not_exist_yet_resolves_inside() {
    let f = fixture();
    let p = f.ws.resolve_for_write("out/traces/run1").expect("new dir");
    assert_eq!(p, f.root.join("out/traces/run1"));
}

#[test]
fn allowed_directories_extend_the_workspace() {
    let f = fixture();
    let ws = Workspace::new(
        Some(f.root.clone()),
        vec![f.outside.clone()],
        Path::new("/"),
        None,
    )
    .expect("ws");
    let target = f.outside.join("secret.toml");
    assert_eq!(
        ws.resolve_existing(&target.to_string_lossy())
            .expect("allowed"),
        target
    );
    let err = Workspace::new(Some(f.root.clone()), vec!["/".into()], Path::new("/"), None)
        .expect_err("allow /");
    assert!(matches!(err, PathError::AllowRoot));
}

#[test]
fn working_from_root_or_home_needs_an_explicit_workspace() {
    let f = fixture();
    let err = Workspace::new(None, vec![], Path::new("/"), None).expect_err("cwd /");
    assert!(err.to_string().contains("pass --workspace DIR"), "{err}");
    let err = Workspace::new(None, vec![], &f.root, Some(&f.root)).expect_err("cwd = home");
    assert!(matches!(err, PathError::NoWorkspace { .. }));
    // With a workspace given, the cwd does not matter; a plain project dir is fine as cwd.
    Workspace::new(Some(f.root.clone()), vec![], Path::new("/"), Some(&f.root)).expect("given");
    let ws = Workspace::new(None, vec![], &f.root.join("configs"), Some(&f.root)).expect("cwd");
    assert_eq!(ws.root(), f.root.join("configs"));
}

#[test]
fn an_empty_or_missing_path_is_refused() {
    let f = fixture();
    assert!(matches!(f.ws.resolve_existing(""), Err(PathError::Empty)));
    assert!(matches!(
        f.ws.resolve_existing("configs/missing.toml"),
        Err(PathError::Io { .. })
    ));
}

#[test]
fn a_path_with_a_line_break_an_escape_or_bidi_text_is_refused() {
    let f = fixture();
    for arg in [
        "exports/a\nb",
        "exports/\u{1b}[2J",
        "exports/\u{202e}gol.txt",
        "exports/a\u{2028}b",
    ] {
        assert!(
            matches!(f.ws.resolve_for_write(arg), Err(PathError::NotPlain)),
            "{arg:?}"
        );
        assert!(matches!(
            f.ws.resolve_existing(arg),
            Err(PathError::NotPlain)
        ));
    }
    // Nothing was created for them, and plain names still resolve.
    assert!(!f.root.join("exports").exists());
    assert!(f.ws.resolve_for_write("exports/é-ok").is_ok());
}

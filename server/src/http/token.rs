//! The HTTP bearer token, the Jupyter way: with none configured, `serve --http` creates one in
//! `<state dir>/http-token` (owner-only from the moment it exists), reuses it across restarts,
//! and tells the operator where it is — never what it is.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rand::TryRngCore;
use rand::rngs::OsRng;
use secrecy::SecretString;

/// The token file's name inside the state directory.
pub const TOKEN_FILE: &str = "http-token";
/// Shortest token accepted from a file.
const MIN_TOKEN_LEN: usize = 16;
/// Largest token file read (a token is a line; anything bigger is not a token file).
const MAX_TOKEN_FILE_BYTES: u64 = 4096;
/// Random bytes in a generated token (hex-encoded: 64 characters).
const GENERATED_BYTES: usize = 32;

/// `$XDG_STATE_HOME/factory-mcp/http-token`, else `~/.local/state/factory-mcp/http-token`.
pub fn default_token_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    factory_policies::store::Store::default_dir(env).map(|dir| dir.join(TOKEN_FILE))
}

/// Read a bearer token from a file (surrounding whitespace ignored). Refused: a symlink, anything
/// but a regular file (opened without blocking, so a FIFO is refused at once), a file another user
/// owns, a file that group or others may read or write, an empty or short token.
pub fn read_token_file(path: &Path) -> Result<SecretString, String> {
    let cannot =
        |e: std::io::Error| format!("cannot read the auth token file {}: {e}", path.display());
    // Never through a symlink, and never blocking: a FIFO at the path must not hang startup.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => format!(
                "the auth token file {} is a symbolic link; point --auth-token-file at the file itself",
                path.display()
            ),
            _ => cannot(e),
        })?;
    // fstat on the open file: the checks apply to what is read, not to a name that may change.
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(format!(
            "the auth token file {} is not a regular file",
            path.display()
        ));
    }
    // SAFETY: geteuid takes no arguments and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid {
        return Err(format!(
            "the auth token file {} is owned by another user (uid {}); use a token file you own",
            path.display(),
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the auth token file {} is accessible to group or others (mode {mode:04o}); anyone \
             who can read it can call every tool: run `chmod 600 {}`",
            path.display(),
            path.display()
        ));
    }
    let mut text = String::new();
    file.take(MAX_TOKEN_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_TOKEN_FILE_BYTES {
        return Err(format!(
            "the auth token file {} is larger than {MAX_TOKEN_FILE_BYTES} bytes; it should hold one token",
            path.display()
        ));
    }
    let token = text.trim();
    if token.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "the auth token in {} is shorter than {MIN_TOKEN_LEN} characters; use a long random token (e.g. `openssl rand -hex 32`)",
            path.display()
        ));
    }
    if token.chars().any(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "the auth token in {} holds spaces or characters an HTTP header cannot carry",
            path.display()
        ));
    }
    Ok(SecretString::from(token.to_string()))
}

/// Read the token at `path`, creating it first when there is none. The boolean says whether
/// this call created it.
///
/// Creation writes a temporary file opened with `O_CREAT | O_EXCL` and mode 0600 (so it is
/// never readable by anyone else, not even for an instant), syncs it, and *hard-links* it to
/// the final name: `link` fails when the name exists, so two servers starting at once agree on
/// one token instead of the second overwriting the first's.
pub fn load_or_create(path: &Path) -> Result<(SecretString, bool), String> {
    match read_token_file(path) {
        Ok(token) => return Ok((token, false)),
        Err(_) if !path_exists(path) => {}
        Err(e) => return Err(e),
    }
    let dir = path.parent().ok_or_else(|| {
        format!(
            "cannot create the auth token file {}: no parent directory",
            path.display()
        )
    })?;
    let created = create(dir, path).map_err(|e| {
        format!(
            "cannot create the auth token file {}: {e} (or pass --auth-token-file FILE)",
            path.display()
        )
    })?;
    read_token_file(path).map(|t| (t, created))
}

fn path_exists(path: &Path) -> bool {
    !matches!(fs::symlink_metadata(path), Err(e) if e.kind() == ErrorKind::NotFound)
}

fn create(dir: &Path, path: &Path) -> std::io::Result<bool> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut bytes = [0u8; GENERATED_BYTES];
    OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let mut token = hex_encode(&bytes);
    bytes.fill(0);
    let mut tag = [0u8; 8];
    OsRng
        .try_fill_bytes(&mut tag)
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let tmp = dir.join(format!(
        ".{TOKEN_FILE}.{}.{}.tmp",
        std::process::id(),
        hex_encode(&tag)
    ));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        file.write_all(token.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    })();
    // Overwrite our copy; the SecretString read back from the file is what is kept.
    token.clear();
    token.shrink_to_fit();
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            File::open(dir)?.sync_all()?;
            Ok(true)
        }
        // Another server created it first: its token is the token.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

fn hex_encode(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn the_token_is_created_owner_only_and_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp
            .path()
            .join("state")
            .join("factory-mcp")
            .join(TOKEN_FILE);
        let (first, created) = load_or_create(&path).unwrap();
        assert!(created);
        assert_eq!(first.expose_secret().len(), 64);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        let (again, created) = load_or_create(&path).unwrap();
        assert!(!created);
        assert_eq!(again.expose_secret(), first.expose_secret());
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn a_token_file_others_can_read_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("token");
        fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
            let err = read_token_file(&path).unwrap_err();
            assert!(
                err.contains(&format!("chmod 600 {}", path.display())),
                "{mode:o}: {err}"
            );
            assert!(!err.contains("0123456789abcdef"), "{err}");
            // The default path is refused the same way, not silently replaced.
            assert!(load_or_create(&path).is_err());
        }
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_token_file(&path).is_ok());
    }

    #[test]
    fn short_or_odd_tokens_and_non_files_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("token");
        for body in ["short\n", "has a space in the middle of it\n", ""] {
            fs::write(&path, body).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
            assert!(read_token_file(&path).is_err(), "{body:?}");
        }
        let err = read_token_file(tmp.path()).unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        // A link to a good token file is refused: the file itself must be named.
        fs::write(&path, "0123456789abcdef0123456789abcdef\n").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(read_token_file(&path).is_ok());
        let err = read_token_file(&link).unwrap_err();
        assert!(err.contains("symbolic link"), "{err}");
    }

    #[test]
    fn a_fifo_at_the_token_path_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("http-token");
        let made = std::process::Command::new("mkfifo")
            .arg("-m")
            .arg("600")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        // Opening a FIFO for reading blocks until a writer appears unless O_NONBLOCK: run it on
        // a thread so a regression fails below instead of hanging the suite.
        let (tx, rx) = std::sync::mpsc::channel();
        let p = path.clone();
        std::thread::spawn(move || {
            let _ = tx.send(read_token_file(&p));
        });
        let result = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("reading a FIFO token path blocked");
        let err = result.unwrap_err();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(load_or_create(&path).is_err());
    }
}

//! The per-install request-state key: 32 random bytes in `<state dir>/request-state.key`,
//! readable by its owner only, created on first use.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rand::TryRngCore;
use rand::rngs::OsRng;
use secrecy::SecretSlice;

use super::StoreError;

/// The key file's name inside the state directory.
pub const KEY_FILE: &str = "request-state.key";
/// The key's length in bytes.
pub const KEY_LEN: usize = 32;

/// Read the key, creating it first when there is none.
///
/// Creation writes a private temporary file and then *hard-links* it to the final name:
/// unlike `rename`, `link` fails when the name exists, so when two processes race, exactly
/// one file wins and both read it back. (With `rename` the loser would overwrite the
/// winner's key after the winner had already started sealing with it.)
pub(crate) fn request_state_key(dir: &Path) -> Result<SecretSlice<u8>, StoreError> {
    let path = dir.join(KEY_FILE);
    match read_key(&path) {
        Ok(key) => return Ok(key),
        Err(StoreError::Io { ref source, .. }) if source.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    create_key(dir, &path)?;
    read_key(&path)
}

fn read_key(path: &Path) -> Result<SecretSlice<u8>, StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    let mode = file.metadata().map_err(io)?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(StoreError::KeyPermissions {
            path: path.to_path_buf(),
            mode: mode & 0o777,
        });
    }
    let mut bytes = Vec::with_capacity(KEY_LEN + 1);
    // Read one byte more than a key so that a longer file is caught, not truncated.
    (&mut file)
        .take(KEY_LEN as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() != KEY_LEN {
        return Err(StoreError::KeyCorrupt {
            path: path.to_path_buf(),
            len: bytes.len(),
        });
    }
    Ok(SecretSlice::from(bytes))
}

fn create_key(dir: &Path, path: &Path) -> Result<(), StoreError> {
    let mut key = [0u8; KEY_LEN];
    OsRng
        .try_fill_bytes(&mut key)
        .map_err(|e| StoreError::Random(e.to_string()))?;
    let tmp = temp_name(dir)?;
    let io = |p: &Path| {
        let p: PathBuf = p.to_path_buf();
        move |source| StoreError::Io { path: p, source }
    };
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(&key)?;
        file.sync_all()
    })();
    key.fill(0);
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(io(&tmp)(e));
    }
    let linked = fs::hard_link(&tmp, path);
    let _ = fs::remove_file(&tmp);
    match linked {
        Ok(()) => sync_dir(dir).map_err(io(dir)),
        // Another process won the race: its key is the key.
        Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io(path)(e)),
    }
}

fn temp_name(dir: &Path) -> Result<PathBuf, StoreError> {
    let mut tag = [0u8; 8];
    OsRng
        .try_fill_bytes(&mut tag)
        .map_err(|e| StoreError::Random(e.to_string()))?;
    Ok(dir.join(format!(
        ".{KEY_FILE}.{}.{}.tmp",
        std::process::id(),
        hex::encode(tag)
    )))
}

/// Make a new directory entry durable.
pub(crate) fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

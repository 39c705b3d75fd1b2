//! What `upload_to_volume` may send to a shared volume: every file is read race-free
//! ([`crate::files::walk_source`]), refused when its name is a well-known secret file (`.env*`,
//! `.netrc`, `id_*`, `*.pem`, `*credentials*`) unless the policy allows such names, and refused
//! when its content holds a secret value the server knows or a credential shape. A refusal
//! names the file and the kind, never the value. The checked bytes are copied into a private
//! staging directory, so what is uploaded is exactly what was checked.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::files::{FileError, ReadLimits, walk_source};
use crate::paths::Workspace;
use crate::secret_guard::SecretGuard;

/// Why a file name marks a secret file, if it does.
pub fn secret_file_name(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    if lower.starts_with(".env") || lower.ends_with(".env") {
        Some("an environment file (.env)")
    } else if lower == ".netrc" || lower == "_netrc" {
        Some("a .netrc credentials file")
    } else if lower.starts_with("id_") {
        Some("an SSH key file (id_*)")
    } else if lower.ends_with(".pem") || lower.ends_with(".key") || lower.ends_with(".p12") {
        Some("a key or certificate file (*.pem)")
    } else if lower.contains("credentials") {
        Some("a credentials file")
    } else {
        None
    }
}

/// The files to upload, checked and copied into a private directory that lives as long as
/// this value.
#[derive(Debug)]
pub struct StagedUpload {
    dir: tempfile::TempDir,
    /// `(staged copy, path relative to the destination, bytes)`, in name order.
    pub files: Vec<(PathBuf, String, u64)>,
}

impl StagedUpload {
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// Reads, checks and stages every file of the upload source `canonical`. Errors are messages
/// for the model (file and kind only).
pub fn stage(
    ws: &Workspace,
    canonical: &Path,
    guard: &SecretGuard,
    allow_secret_files: bool,
    max_file_bytes: u64,
    max_files: usize,
) -> Result<StagedUpload, String> {
    let dir = tempfile::Builder::new()
        .prefix("factory-mcp-upload-")
        .tempdir()
        .map_err(|e| format!("cannot create a staging directory: {e}"))?;
    let limits = ReadLimits {
        max_bytes: max_file_bytes,
        refuse_hard_links: true,
    };
    let mut files = Vec::new();
    let walked = walk_source(ws, canonical, limits, max_files, |f| {
        let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
        let shown: String = crate::untrusted::one_line(&f.rel, 200);
        if !allow_secret_files && let Some(kind) = secret_file_name(name) {
            return Err(FileError::Refused(format!(
                "Refused: {shown} is {kind}; such files are not uploaded to a shared volume. \
                 Remove it from local_path, or set `[upload] allow_secret_files = true` in the \
                 policy file if it really holds no secret."
            )));
        }
        let text = String::from_utf8_lossy(&f.bytes);
        if let Err(findings) = guard.check_text(&text, &shown) {
            let kinds: Vec<String> = findings
                .iter()
                .map(|x| format!("{}: {}", x.path, x.kind))
                .collect();
            return Err(FileError::Refused(format!(
                "Refused: a file to upload holds a secret, and volumes are shared.\n- {}\nRemove \
                 the secret from the file (runs receive WANDB_API_KEY / HF_TOKEN by name through \
                 plan_run's env), then upload again.",
                kinds.join("\n- ")
            )));
        }
        let staged = dir.path().join(format!("{:06}", files.len()));
        let mut out = std::fs::File::create(&staged).map_err(|e| FileError::Io {
            path: staged.clone(),
            source: e,
        })?;
        out.write_all(&f.bytes).map_err(|e| FileError::Io {
            path: staged.clone(),
            source: e,
        })?;
        files.push((staged, f.rel, f.bytes.len() as u64));
        Ok(())
    });
    match walked {
        Err(FileError::Refused(r)) => Err(r),
        Ok(_) => Ok(StagedUpload { dir, files }),
        Err(FileError::TooLarge { len, max, .. }) if len > max && max == max_files as u64 => {
            Err(format!(
                "{} holds more than {max_files} files and folders; upload a smaller folder.",
                canonical.display()
            ))
        }
        Err(e) => Err(format!("local_path: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret_guard::KnownSecrets;
    use secrecy::SecretString;

    #[test]
    fn secret_file_names_are_recognised() {
        for n in [
            ".env",
            ".env.local",
            "prod.env",
            ".netrc",
            "id_ed25519",
            "server.pem",
            "credentials.json",
            ".envrc",
            ".env-prod",
            ".env_local",
            ".ENV.Production",
            ".git-credentials",
            "aws_credentials",
            "gcp-credentials.json",
        ] {
            assert!(secret_file_name(n).is_some(), "{n}");
        }
        for n in [
            "train.jsonl",
            "environment.md",
            "data.parquet",
            "identity.txt",
        ] {
            assert!(secret_file_name(n).is_none(), "{n}");
        }
    }

    #[test]
    fn a_known_value_or_a_secret_file_is_refused_naming_the_file_not_the_value() {
        let tmp = tempfile::tempdir().unwrap();
        let ws =
            Workspace::new(Some(tmp.path().to_path_buf()), Vec::new(), tmp.path(), None).unwrap();
        let value = "wandbvalue0123456789abcdef0123456789abcd";
        let guard =
            SecretGuard::new(KnownSecrets::new().with("WANDB_API_KEY", &SecretString::from(value)));
        let src = ws.root().join("leak");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("notes.txt"), format!("key is {value}\n")).unwrap();
        let err = stage(&ws, &src, &guard, false, 1 << 20, 10).unwrap_err();
        assert!(
            err.contains("notes.txt") && err.contains("WANDB_API_KEY"),
            "{err}"
        );
        assert!(!err.contains(value));
        std::fs::remove_file(src.join("notes.txt")).unwrap();
        std::fs::write(src.join(".env"), "A=1\n").unwrap();
        let err = stage(&ws, &src, &guard, false, 1 << 20, 10).unwrap_err();
        assert!(
            err.contains(".env") && err.contains("allow_secret_files"),
            "{err}"
        );
        let ok = stage(&ws, &src, &guard, true, 1 << 20, 10).unwrap();
        assert_eq!(ok.files.len(), 1);
        assert_eq!(std::fs::read(&ok.files[0].0).unwrap(), b"A=1\n");
    }
}

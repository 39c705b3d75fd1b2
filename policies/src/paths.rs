//! Path containment for `config_path`, `dest_dir` and every file argument: a path must resolve
//! inside the workspace root or an allowed directory. `..` that climbs out, absolute paths
//! elsewhere and symlinks pointing out are refused; with no `--workspace`, working from `/` or
//! the home directory is refused.
//!
//! Containment is checked on canonical paths (symlinks resolved), so a link inside the
//! workspace that points out is caught. This is a check at the time of the call; it is no
//! sandbox against a process that swaps a directory for a symlink afterwards.

use std::io;
use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// Why a path (or the workspace itself) was refused.
#[derive(Debug, Error)]
pub enum PathError {
    #[error(
        "refusing to use {dir} as the workspace: pass --workspace DIR (the directory that \
         config_path and dest_dir must resolve inside)"
    )]
    NoWorkspace { dir: PathBuf },
    #[error("workspace or allowed directory {path} is unusable: {source}")]
    BadRoot {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("--allow-dir / would allow every file; name a narrower directory")]
    AllowRoot,
    #[error("the path is empty")]
    Empty,
    #[error(
        "the path holds a control, line-break or bidirectional-formatting character; name a \
         path without them"
    )]
    NotPlain,
    #[error("{arg}: `..` climbs out of the workspace root; give a path inside {root}")]
    Traversal { arg: String, root: PathBuf },
    #[error(
        "{arg} is outside the workspace root {root} and the allowed directories; use a path \
         inside it or start the server with --allow-dir"
    )]
    Outside { arg: String, root: PathBuf },
    #[error(
        "{arg}: a symlink points outside the workspace root {root} and the allowed directories"
    )]
    SymlinkEscape { arg: String, root: PathBuf },
    #[error("{arg}: {source}")]
    Io {
        arg: String,
        #[source]
        source: io::Error,
    },
}

/// The workspace root and the allowed directories, all canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
    allowed: Vec<PathBuf>,
}

fn canonical_dir(path: &Path) -> Result<PathBuf, PathError> {
    let canon = path.canonicalize().map_err(|source| PathError::BadRoot {
        path: path.to_path_buf(),
        source,
    })?;
    if !canon.is_dir() {
        return Err(PathError::NotADirectory { path: canon });
    }
    Ok(canon)
}

fn absolute(base: &Path, p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

impl Workspace {
    /// `root` is `--workspace` (relative to `cwd`); `allow_dirs` are `--allow-dir` (relative
    /// to `cwd`). With no root, `cwd` is the root, unless it is `/` or `home`: then the
    /// workspace refuses to exist and file tools say "pass --workspace DIR".
    pub fn new(
        root: Option<PathBuf>,
        allow_dirs: Vec<PathBuf>,
        cwd: &Path,
        home: Option<&Path>,
    ) -> Result<Workspace, PathError> {
        let root = match root {
            Some(r) => canonical_dir(&absolute(cwd, &r))?,
            None => {
                let canon = canonical_dir(cwd)?;
                let home = home.and_then(|h| h.canonicalize().ok());
                if canon.parent().is_none() || home.as_deref() == Some(canon.as_path()) {
                    return Err(PathError::NoWorkspace { dir: canon });
                }
                canon
            }
        };
        let mut allowed = Vec::new();
        for dir in allow_dirs {
            let canon = canonical_dir(&absolute(cwd, &dir))?;
            if canon.parent().is_none() {
                return Err(PathError::AllowRoot);
            }
            allowed.push(canon);
        }
        Ok(Workspace { root, allowed })
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The canonical allowed directories.
    pub fn allowed_dirs(&self) -> &[PathBuf] {
        &self.allowed
    }

    /// Whether a canonical path lies inside the root or an allowed directory.
    pub fn contains(&self, canonical: &Path) -> bool {
        canonical.starts_with(&self.root) || self.allowed.iter().any(|d| canonical.starts_with(d))
    }

    /// Resolves a path that must exist (`config_path`, a file to upload): relative paths
    /// against the root; the canonical result must lie inside.
    pub fn resolve_existing(&self, arg: &str) -> Result<PathBuf, PathError> {
        let lexical = self.lexical(arg)?;
        let canon = lexical.canonicalize().map_err(|source| PathError::Io {
            arg: arg.to_string(),
            source,
        })?;
        self.check(arg, &lexical, canon)
    }

    /// Resolves a path that may not exist yet (`dest_dir`): the nearest existing ancestor is
    /// canonicalized and must lie inside; a final component that is a symlink must point
    /// inside. The returned path is the canonical ancestor joined with the missing components.
    pub fn resolve_for_write(&self, arg: &str) -> Result<PathBuf, PathError> {
        let lexical = self.lexical(arg)?;
        let mut existing = lexical.as_path();
        let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
        loop {
            match existing.symlink_metadata() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let (Some(parent), Some(name)) = (existing.parent(), existing.file_name())
                    else {
                        return Err(PathError::Io {
                            arg: arg.to_string(),
                            source: e,
                        });
                    };
                    missing.push(name);
                    existing = parent;
                }
                Err(source) => {
                    return Err(PathError::Io {
                        arg: arg.to_string(),
                        source,
                    });
                }
            }
        }
        // A dangling symlink has metadata but no canonical form: refuse it, since writing
        // through it would create its target wherever it points.
        let canon = existing
            .canonicalize()
            .map_err(|_| PathError::SymlinkEscape {
                arg: arg.to_string(),
                root: self.root.clone(),
            })?;
        let mut resolved = self.check(arg, existing, canon)?;
        for name in missing.into_iter().rev() {
            resolved.push(name);
        }
        Ok(resolved)
    }

    /// The argument made absolute against the root, with `.` and `..` folded lexically;
    /// a relative path whose `..` climbs above the root is refused here.
    fn lexical(&self, arg: &str) -> Result<PathBuf, PathError> {
        if arg.trim().is_empty() {
            return Err(PathError::Empty);
        }
        // A path the model names may end up on a person's screen (summaries, the approval
        // page): nothing in it may start a new line, steer the terminal or reorder the text.
        if !crate::untrusted::is_plain(arg) {
            return Err(PathError::NotPlain);
        }
        let path = Path::new(arg);
        let relative = !path.is_absolute();
        let mut out = if relative {
            self.root.clone()
        } else {
            PathBuf::new()
        };
        let mut depth: usize = 0;
        for comp in path.components() {
            match comp {
                Component::Prefix(p) => out.push(p.as_os_str()),
                Component::RootDir => out.push(Component::RootDir.as_os_str()),
                Component::CurDir => {}
                Component::ParentDir => {
                    if relative {
                        if depth == 0 {
                            return Err(PathError::Traversal {
                                arg: arg.to_string(),
                                root: self.root.clone(),
                            });
                        }
                        depth -= 1;
                    }
                    out.pop();
                }
                Component::Normal(name) => {
                    depth += 1;
                    out.push(name);
                }
            }
        }
        Ok(out)
    }

    fn check(&self, arg: &str, lexical: &Path, canon: PathBuf) -> Result<PathBuf, PathError> {
        if self.contains(&canon) {
            return Ok(canon);
        }
        let lexically_inside =
            lexical.starts_with(&self.root) || self.allowed.iter().any(|d| lexical.starts_with(d));
        Err(if lexically_inside {
            PathError::SymlinkEscape {
                arg: arg.to_string(),
                root: self.root.clone(),
            }
        } else {
            PathError::Outside {
                arg: arg.to_string(),
                root: self.root.clone(),
            }
        })
    }
}

//! Race-free access to the files tools read and write, beside path containment (`paths.rs`):
//! containment says whether a path may be used; this module makes sure the file actually
//! opened or created is the one that was checked, even when the tree changes during the call.
//!
//! - Every directory is reached from the workspace root (or the allowed directory holding it),
//!   one component at a time, with `openat(…, O_DIRECTORY | O_NOFOLLOW)`: a component swapped
//!   for a symlink after the check makes the call fail instead of being followed.
//! - A file read ([`read_file`]) is opened with `O_NONBLOCK | O_NOFOLLOW`, `fstat`ed first,
//!   refused unless regular (a FIFO cannot hang the call), refused with more than one hard link,
//!   and read only up to its cap.
//! - A file written ([`DestDir::publish`]) is created relative to the destination's directory
//!   handle, under a temporary name with `O_CREAT | O_EXCL | O_NOFOLLOW`, synced, then renamed
//!   relative to the same handle; or moved there from a private staging directory with one
//!   `renameat`. Downloads land in that staging directory first ([`Staging`]): it lives in the
//!   server's state directory, where no file tool writes, so the platform client's own
//!   path-based writes cannot be redirected.
//!
//! The system calls come from `rustix`; nothing here compares paths to detect races.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};
use rustix::io::Errno;
use thiserror::Error;

use crate::paths::Workspace;

/// The largest config file a tool reads (`validate_config`, `plan_run`).
pub const CONFIG_MAX_BYTES: u64 = 1 << 20;

/// Why a file was not read or written.
#[derive(Debug, Error)]
pub enum FileError {
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} is {len} bytes; the limit is {max} bytes")]
    TooLarge { path: PathBuf, len: u64, max: u64 },
    #[error(
        "{path} has {links} hard links; a hard-linked file is refused (another name could change \
         it): copy it instead"
    )]
    HardLinked { path: PathBuf, links: u64 },
    #[error(
        "{path}: a symlink (or a non-directory) was met on the way; the path changed after it \
         was checked, so nothing was read or written"
    )]
    Symlink { path: PathBuf },
    #[error("{path} is outside the workspace root and the allowed directories")]
    Outside { path: PathBuf },
    /// A caller's own refusal, stopping a walk ([`walk_source`]).
    #[error("{0}")]
    Refused(String),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path, e: impl Into<io::Error>) -> FileError {
    FileError::Io {
        path: path.to_path_buf(),
        source: e.into(),
    }
}

fn kind_of(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symlink",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of unknown type",
    }
}

/// The root (workspace root or allowed directory) holding `canonical`, and the rest of it.
fn split_base<'a>(
    ws: &'a Workspace,
    canonical: &'a Path,
) -> Result<(&'a Path, &'a Path), FileError> {
    std::iter::once(ws.root())
        .chain(ws.allowed_dirs().iter().map(PathBuf::as_path))
        .filter_map(|base| canonical.strip_prefix(base).ok().map(|rest| (base, rest)))
        // The deepest base wins (an allowed directory inside the root, or the other way).
        .max_by_key(|(base, _)| base.as_os_str().len())
        .ok_or_else(|| FileError::Outside {
            path: canonical.to_path_buf(),
        })
}

fn open_dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// Opens the directory `rel` beneath the open directory `dir`, component by component, never
/// following a symlink; with `create`, missing components are made (mode 0755).
fn open_beneath(
    dir: OwnedFd,
    rel: &Path,
    create: bool,
    shown: &Path,
) -> Result<OwnedFd, FileError> {
    let mut fd = dir;
    for comp in rel.components() {
        let name = match comp {
            Component::Normal(n) => n,
            Component::CurDir => continue,
            _ => {
                return Err(FileError::Symlink {
                    path: shown.to_path_buf(),
                });
            }
        };
        let next = match rustix::fs::openat(&fd, name, open_dir_flags(), Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_err(shown, e)),
                }
                rustix::fs::openat(&fd, name, open_dir_flags(), Mode::empty())
            }
            other => other,
        };
        fd = match next {
            Ok(f) => f,
            Err(Errno::LOOP | Errno::NOTDIR) => {
                return Err(FileError::Symlink {
                    path: shown.to_path_buf(),
                });
            }
            Err(e) => return Err(io_err(shown, e)),
        };
    }
    Ok(fd)
}

/// Opens a trusted base directory (the workspace root or an allowed directory, fixed at start).
fn open_base(base: &Path) -> Result<OwnedFd, FileError> {
    rustix::fs::openat(
        CWD,
        base,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io_err(base, e))
}

/// Limits on a file read.
#[derive(Debug, Clone, Copy)]
pub struct ReadLimits {
    /// The most bytes read; a larger file is refused before reading.
    pub max_bytes: u64,
    /// Refuse a file with more than one hard link.
    pub refuse_hard_links: bool,
}

impl ReadLimits {
    /// A config file: 1 MiB, no hard links.
    pub const CONFIG: ReadLimits = ReadLimits {
        max_bytes: CONFIG_MAX_BYTES,
        refuse_hard_links: true,
    };
}

/// Opens a regular file `name` in the directory `dir`: `O_NONBLOCK | O_NOFOLLOW`, `fstat`
/// first. Returns the file and its size.
fn open_regular_in(
    dir: &OwnedFd,
    name: &OsStr,
    limits: ReadLimits,
    shown: &Path,
) -> Result<(File, u64), FileError> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::LOOP => FileError::NotRegular {
            path: shown.to_path_buf(),
            kind: "a symlink",
        },
        e => io_err(shown, e),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(shown, e))?;
    let ft = FileType::from_raw_mode(st.st_mode);
    if ft != FileType::RegularFile {
        return Err(FileError::NotRegular {
            path: shown.to_path_buf(),
            kind: kind_of(ft),
        });
    }
    #[allow(clippy::useless_conversion)]
    let links = u64::from(st.st_nlink);
    if limits.refuse_hard_links && links > 1 {
        return Err(FileError::HardLinked {
            path: shown.to_path_buf(),
            links,
        });
    }
    let len = u64::try_from(st.st_size).unwrap_or(0);
    if len > limits.max_bytes {
        return Err(FileError::TooLarge {
            path: shown.to_path_buf(),
            len,
            max: limits.max_bytes,
        });
    }
    Ok((File::from(fd), len))
}

fn read_capped(mut file: File, limits: ReadLimits, shown: &Path) -> Result<Vec<u8>, FileError> {
    let mut buf = Vec::new();
    (&mut file)
        .take(limits.max_bytes.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| io_err(shown, e))?;
    // The file grew after fstat: still refused, never read past the cap.
    if buf.len() as u64 > limits.max_bytes {
        return Err(FileError::TooLarge {
            path: shown.to_path_buf(),
            len: buf.len() as u64,
            max: limits.max_bytes,
        });
    }
    Ok(buf)
}

/// Reads the file at `canonical` (a path `Workspace::resolve_existing` returned) race-free:
/// reached from its root without following links, regular, within `limits`.
pub fn read_file(
    ws: &Workspace,
    canonical: &Path,
    limits: ReadLimits,
) -> Result<Vec<u8>, FileError> {
    let (base, rel) = split_base(ws, canonical)?;
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return Err(FileError::NotRegular {
            path: canonical.to_path_buf(),
            kind: "a directory",
        });
    };
    let dir = open_beneath(open_base(base)?, parent, false, canonical)?;
    let (file, _) = open_regular_in(&dir, name, limits, canonical)?;
    read_capped(file, limits, canonical)
}

/// One regular file found under an upload source, read in full.
#[derive(Debug)]
pub struct SourceFile {
    /// Path relative to the source (`/`-separated); the file name for a single file.
    pub rel: String,
    pub bytes: Vec<u8>,
}

/// Walks an upload source (`canonical`: a file or a folder) without following links and calls
/// `each` with every regular file's bytes, in name order. Symlinks and special files inside a
/// folder are skipped, as before; hard-linked files are refused; more than `max_files` files is
/// refused before any is read.
pub fn walk_source(
    ws: &Workspace,
    canonical: &Path,
    limits: ReadLimits,
    max_files: usize,
    mut each: impl FnMut(SourceFile) -> Result<(), FileError>,
) -> Result<usize, FileError> {
    let (base, rel) = split_base(ws, canonical)?;
    let base_fd = open_base(base)?;
    // A single file?
    if let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) {
        let dir = open_beneath(base_fd, parent, false, canonical)?;
        let st = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| io_err(canonical, e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
            let (file, _) = open_regular_in(&dir, name, limits, canonical)?;
            let bytes = read_capped(file, limits, canonical)?;
            each(SourceFile {
                rel: name.to_string_lossy().into_owned(),
                bytes,
            })?;
            return Ok(1);
        }
        let top = open_beneath(dir, Path::new(name), false, canonical)?;
        return walk_dir(top, canonical, limits, max_files, each);
    }
    walk_dir(base_fd, canonical, limits, max_files, each)
}

fn walk_dir(
    top: OwnedFd,
    shown: &Path,
    limits: ReadLimits,
    max_files: usize,
    mut each: impl FnMut(SourceFile) -> Result<(), FileError>,
) -> Result<usize, FileError> {
    // First the listing (bounded), then the reads, so a folder that is too large reads nothing.
    // Folders count against `max_files` too, and only one listing descriptor is open at a time:
    // a folder is reopened beneath `top` (never through a link) when it is listed and again when
    // its files are read, so no tree can exhaust the process's descriptors.
    // Names are kept raw (`OsString`) for opening; the lossy text is only for display and the
    // remote key.
    struct Listed {
        rel: String,
        dir: PathBuf,
        name: std::ffi::OsString,
    }
    let dup = |fd: &OwnedFd| rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| io_err(shown, e));
    let mut files: Vec<Listed> = Vec::new();
    let mut entries = 0usize;
    let mut stack: Vec<(PathBuf, String)> = vec![(PathBuf::new(), String::new())];
    while let Some((dir_path, prefix)) = stack.pop() {
        let fd = open_beneath(dup(&top)?, &dir_path, false, &shown.join(&prefix))?;
        let dir = rustix::fs::Dir::read_from(&fd).map_err(|e| io_err(shown, e))?;
        for entry in dir {
            let entry = entry.map_err(|e| io_err(shown, e))?;
            let raw = entry.file_name().to_bytes();
            if raw == b"." || raw == b".." {
                continue;
            }
            let name = OsStr::from_bytes(raw);
            let rel = format!("{prefix}{}", name.to_string_lossy());
            let st = rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| io_err(&shown.join(&rel), e))?;
            let kind = FileType::from_raw_mode(st.st_mode);
            if matches!(kind, FileType::Directory | FileType::RegularFile) {
                entries += 1;
                if entries > max_files {
                    return Err(FileError::TooLarge {
                        path: shown.to_path_buf(),
                        len: entries as u64,
                        max: max_files as u64,
                    });
                }
            }
            match kind {
                FileType::Directory => stack.push((dir_path.join(name), format!("{rel}/"))),
                FileType::RegularFile => files.push(Listed {
                    rel,
                    dir: dir_path.clone(),
                    name: name.to_os_string(),
                }),
                // Symlinks and special files are not uploaded (links are never followed).
                _ => {}
            }
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    let count = files.len();
    let mut open: Option<(PathBuf, OwnedFd)> = None;
    for f in files {
        let shown_file = shown.join(&f.rel);
        let dir = match open.take() {
            Some((p, fd)) if p == f.dir => fd,
            // The previous folder's descriptor is dropped here.
            _ => open_beneath(dup(&top)?, &f.dir, false, &shown_file)?,
        };
        let (file, _) = open_regular_in(&dir, &f.name, limits, &shown_file)?;
        open = Some((f.dir, dir));
        let bytes = read_capped(file, limits, &shown_file)?;
        each(SourceFile { rel: f.rel, bytes })?;
    }
    Ok(count)
}

/// A destination directory held open: files are created and renamed relative to it, so
/// swapping any component of its path for a symlink afterwards changes nothing.
#[derive(Debug)]
pub struct DestDir {
    fd: OwnedFd,
    path: PathBuf,
}

impl DestDir {
    /// Opens (creating what is missing) `canonical`, a path `Workspace::resolve_for_write`
    /// returned, from its root without following links.
    pub fn open(ws: &Workspace, canonical: &Path) -> Result<DestDir, FileError> {
        let (base, rel) = split_base(ws, canonical)?;
        let fd = open_beneath(open_base(base)?, rel, true, canonical)?;
        Ok(DestDir {
            fd,
            path: canonical.to_path_buf(),
        })
    }

    /// The directory's path as it was opened (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The subdirectory `rel` (relative, no `..`), created if missing, without following links.
    pub fn sub(&self, rel: &Path) -> Result<DestDir, FileError> {
        let path = self.path.join(rel);
        let dup = rustix::io::fcntl_dupfd_cloexec(&self.fd, 0).map_err(|e| io_err(&path, e))?;
        let fd = open_beneath(dup, rel, true, &path)?;
        Ok(DestDir { fd, path })
    }

    /// Syncs the directory itself, making the renames into it durable: with each file's data
    /// synced before its rename, one call after a batch of them makes the whole batch durable.
    pub fn sync(&self) -> io::Result<()> {
        rustix::fs::fsync(&self.fd).map_err(io::Error::from)
    }

    /// The size of `name` when it is a regular file (not a symlink) in this directory.
    pub fn regular_len(&self, name: &OsStr) -> Option<u64> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        (FileType::from_raw_mode(st.st_mode) == FileType::RegularFile)
            .then(|| u64::try_from(st.st_size).unwrap_or(0))
    }

    /// Moves the finished file `staged` (in a [`Staging`] directory) to `name` in this
    /// directory: one `renameat` when both are on one file system, else a copy into a
    /// temporary file created here (`O_EXCL | O_NOFOLLOW`), synced and renamed over `name`.
    /// A symlink already at `name` is replaced, never followed. Returns the bytes.
    pub fn publish(&self, staged: &Path, name: &OsStr) -> Result<u64, FileError> {
        let shown = self.path.join(name);
        let len = std::fs::symlink_metadata(staged)
            .map_err(|e| io_err(staged, e))?
            .len();
        match rustix::fs::renameat(CWD, staged, &self.fd, name) {
            Ok(()) => return Ok(len),
            Err(Errno::XDEV) => {}
            Err(e) => return Err(io_err(&shown, e)),
        }
        let mut src = File::open(staged).map_err(|e| io_err(staged, e))?;
        let result = self.replace_with(name, |out| io::copy(&mut src, out));
        if result.is_ok() {
            let _ = std::fs::remove_file(staged);
        }
        result
    }

    /// Writes `bytes` as `name` in this directory, atomically: a temporary file created here
    /// (`O_EXCL | O_NOFOLLOW`), synced and renamed over `name` — a reader sees the old file or
    /// the whole new one, and a symlink already at `name` is replaced, never followed. For
    /// exports (logs, metric series) the tools write from memory. Returns the bytes.
    pub fn write_bytes(&self, name: &OsStr, bytes: &[u8]) -> Result<u64, FileError> {
        self.replace_with(name, |out| {
            out.write_all(bytes)?;
            Ok(bytes.len() as u64)
        })
    }

    /// The temporary-file-and-rename step shared by [`Self::publish`] and [`Self::write_bytes`].
    fn replace_with(
        &self,
        name: &OsStr,
        fill: impl FnOnce(&mut File) -> io::Result<u64>,
    ) -> Result<u64, FileError> {
        let shown = self.path.join(name);
        let tmp = format!(
            ".{}.{:016x}.tmp",
            name.to_string_lossy(),
            rand::random::<u64>()
        );
        let fd = rustix::fs::openat(
            &self.fd,
            tmp.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .map_err(|e| io_err(&shown, e))?;
        let mut out = File::from(fd);
        let written = fill(&mut out).and_then(|n| out.sync_all().map(|()| n));
        let result = written.map_err(|e| io_err(&shown, e)).and_then(|n| {
            rustix::fs::renameat(&self.fd, tmp.as_str(), &self.fd, name)
                .map(|()| n)
                .map_err(|e| io_err(&shown, e))
        });
        if result.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp.as_str(), AtFlags::empty());
        }
        result
    }
}

/// A private directory downloads are written into before [`DestDir::publish`] moves them: in
/// the state directory (`downloads/<digest of the destination>`, mode 0700, kept between calls
/// so an interrupted download resumes), or a temporary directory when there is none.
#[derive(Debug)]
pub struct Staging {
    path: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Staging {
    /// The staging directory for downloads into `dest` (a canonical path).
    pub fn for_dest(state_dir: Option<&Path>, dest: &Path) -> io::Result<Staging> {
        use sha2::Digest as _;
        use std::os::unix::fs::DirBuilderExt;
        if let Some(dir) = state_dir {
            let digest = sha2::Sha256::digest(dest.as_os_str().as_bytes());
            let path = dir.join("downloads").join(hex::encode(&digest[..12]));
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&path)?;
            return Ok(Staging { path, _temp: None });
        }
        let temp = tempfile::Builder::new()
            .prefix("factory-mcp-download-")
            .tempdir()?;
        Ok(Staging {
            path: temp.path().to_path_buf(),
            _temp: Some(temp),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(dir: &Path) -> Workspace {
        Workspace::new(Some(dir.to_path_buf()), Vec::new(), dir, None).expect("workspace")
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let fifo = w.root().join("pipe.toml");
        rustix::fs::mkfifoat(CWD, &fifo, Mode::from_raw_mode(0o600)).unwrap();
        let err = read_file(&w, &fifo, ReadLimits::CONFIG).unwrap_err();
        assert!(
            matches!(err, FileError::NotRegular { kind, .. } if kind.contains("FIFO")),
            "{err}"
        );
    }

    #[test]
    fn a_large_file_is_refused_before_it_is_read_and_a_small_one_is_read() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let big = w.root().join("big.toml");
        let f = File::create(&big).unwrap();
        f.set_len(CONFIG_MAX_BYTES + 1).unwrap();
        assert!(matches!(
            read_file(&w, &big, ReadLimits::CONFIG),
            Err(FileError::TooLarge { .. })
        ));
        std::fs::write(w.root().join("ok.toml"), "a = 1\n").unwrap();
        assert_eq!(
            read_file(&w, &w.root().join("ok.toml"), ReadLimits::CONFIG).unwrap(),
            b"a = 1\n"
        );
    }

    #[test]
    fn hard_links_and_symlinks_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let target = outside.path().join("secret");
        std::fs::write(&target, "x").unwrap();
        let linked = w.root().join("linked.toml");
        if std::fs::hard_link(&target, &linked).is_ok() {
            assert!(matches!(
                read_file(&w, &linked, ReadLimits::CONFIG),
                Err(FileError::HardLinked { links: 2, .. })
            ));
        }
        std::os::unix::fs::symlink(&target, w.root().join("sym.toml")).unwrap();
        assert!(read_file(&w, &w.root().join("sym.toml"), ReadLimits::CONFIG).is_err());
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_is_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let sub = w.root().join("tt").join("sub");
        let d = DestDir::open(&w, &sub).unwrap();
        let staging = Staging::for_dest(None, &sub).unwrap();
        std::fs::write(staging.path().join("a.json"), "1").unwrap();
        d.publish(&staging.path().join("a.json"), OsStr::new("a.json"))
            .unwrap();
        // The path now points outside; the open handle still means the original directory.
        std::fs::rename(&sub, w.root().join("tt").join("old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), &sub).unwrap();
        std::fs::write(staging.path().join("b.json"), "2").unwrap();
        d.publish(&staging.path().join("b.json"), OsStr::new("b.json"))
            .unwrap();
        assert!(w.root().join("tt/old/b.json").is_file());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // Opening it again refuses the symlink.
        assert!(matches!(
            DestDir::open(&w, &sub),
            Err(FileError::Symlink { .. })
        ));
    }

    #[test]
    fn written_bytes_replace_a_symlink_instead_of_following_it() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let sub = w.root().join("exports");
        let d = DestDir::open(&w, &sub).unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, sub.join("a.log")).unwrap();
        assert_eq!(d.write_bytes(OsStr::new("a.log"), b"new\n").unwrap(), 4);
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::read_to_string(sub.join("a.log")).unwrap(), "new\n");
        assert!(
            !std::fs::symlink_metadata(sub.join("a.log"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 1);
    }

    #[test]
    fn an_upload_walk_skips_links_and_reads_files_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let src = w.root().join("data");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        std::fs::write(src.join("b.jsonl"), "b").unwrap();
        std::fs::write(src.join("sub/a.jsonl"), "a").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", src.join("link")).unwrap();
        let mut seen = Vec::new();
        let n = walk_source(&w, &src, ReadLimits::CONFIG, 10, |f| {
            seen.push((f.rel, f.bytes));
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            vec![
                ("b.jsonl".to_string(), b"b".to_vec()),
                ("sub/a.jsonl".to_string(), b"a".to_vec())
            ]
        );
        assert!(walk_source(&w, &src, ReadLimits::CONFIG, 1, |_| Ok(())).is_err());
    }

    #[test]
    fn folders_count_against_the_cap_and_hold_no_descriptor_each() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let src = w.root().join("tree");
        // 1,200 sibling folders and a 300-deep chain, each holding one file.
        for i in 0..1200 {
            let d = src.join(format!("d{i:04}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("f"), "x").unwrap();
        }
        let mut deep = src.join("deep");
        for _ in 0..300 {
            deep = deep.join("n");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "y").unwrap();
        // A low cap: a clear refusal before anything is read, not EMFILE.
        let mut read = 0;
        let err = walk_source(&w, &src, ReadLimits::CONFIG, 100, |_| {
            read += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(
            matches!(err, FileError::TooLarge { max: 100, .. }),
            "{err:?}"
        );
        assert_eq!(read, 0);
        // A cap above the tree's 2,702 entries: every file is read, one folder open at a time.
        let mut seen = Vec::new();
        let n = walk_source(&w, &src, ReadLimits::CONFIG, 5000, |f| {
            seen.push(f.rel);
            Ok(())
        })
        .unwrap();
        assert_eq!(n, 1201);
        assert_eq!(seen.len(), 1201);
        assert!(seen.iter().any(|r| r.ends_with("/n/f") && r.len() > 600));
    }

    #[test]
    fn a_file_name_that_is_not_utf8_is_opened_by_its_raw_name() {
        let tmp = tempfile::tempdir().unwrap();
        let w = ws(tmp.path());
        let src = w.root().join("raw");
        let dir = src.join(OsStr::from_bytes(b"d\xff"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(OsStr::from_bytes(b"caf\xe9.txt")), "raw").unwrap();
        let mut seen = Vec::new();
        walk_source(&w, &src, ReadLimits::CONFIG, 10, |f| {
            seen.push((f.rel, f.bytes));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            vec![("d\u{fffd}/caf\u{fffd}.txt".to_string(), b"raw".to_vec())]
        );
    }
}

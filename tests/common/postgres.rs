//! A real PostgreSQL for the tests, in a temporary directory: `initdb` and `pg_ctl` from the
//! Debian packages (found with `pg_config --bindir`), listening on 127.0.0.1 at a free port
//! and on a socket in the same directory (`-k`), stopped (`pg_ctl stop -m immediate`) and
//! removed when the handle drops. PostgreSQL refuses to run as root, and CI runs as root: then
//! the server runs as the `postgres` user (`runuser -u postgres --`) on a directory that user
//! owns. A missing PostgreSQL fails the test with the install command; it never skips.
//!
//! Each test gets its own database (`Postgres::database`), so tests share one server per
//! test binary and still never see each other's rows.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The install hint a missing PostgreSQL fails with.
pub const INSTALL_HINT: &str = "PostgreSQL is needed by this test (initdb and pg_ctl, found with \
     `pg_config --bindir`): install it with `apt-get install -y postgresql` (scripts/setup-system.sh does)";

pub struct Postgres {
    dir: tempfile::TempDir,
    bindir: PathBuf,
    pub port: u16,
    /// The OS user the server runs as (`None`: this process's user).
    run_as: Option<&'static str>,
    /// The role tests connect as (superuser, trust authentication on loopback).
    pub user: String,
    next_db: AtomicU32,
}

fn is_root() -> bool {
    // `id -u`: no unsafe call needed for the effective user id.
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn bindir() -> PathBuf {
    let out = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .unwrap_or_else(|e| panic!("pg_config did not run ({e}). {INSTALL_HINT}"));
    assert!(
        out.status.success(),
        "pg_config --bindir failed. {INSTALL_HINT}"
    );
    let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    for tool in ["initdb", "pg_ctl", "postgres"] {
        assert!(
            dir.join(tool).exists(),
            "{} is missing. {INSTALL_HINT}",
            dir.join(tool).display()
        );
    }
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl Postgres {
    /// Start a fresh server. Panics with what to do when PostgreSQL is missing or fails.
    pub fn start() -> Postgres {
        let bindir = bindir();
        let run_as = is_root().then_some("postgres");
        // Under /tmp (not the cargo target dir): the postgres user must reach it, and the
        // socket path must stay short.
        let dir = tempfile::Builder::new()
            .prefix("fmcp-pg")
            .tempdir_in("/tmp")
            .expect("temp dir");
        let data = dir.path().join("data");
        if let Some(user) = run_as {
            let st = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(dir.path())
                .status()
                .expect("chown");
            assert!(st.success(), "chown {user} {}", dir.path().display());
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
                .expect("chmod");
        }
        let user = run_as.unwrap_or("factory").to_string();
        let run = |args: &[&str]| -> std::process::Output {
            let mut cmd = match run_as {
                Some(u) => {
                    let mut c = Command::new("runuser");
                    c.args(["-u", u, "--"]);
                    c.arg(args[0]);
                    c.args(&args[1..]);
                    c
                }
                None => {
                    let mut c = Command::new(args[0]);
                    c.args(&args[1..]);
                    c
                }
            };
            cmd.stdin(Stdio::null())
                .current_dir("/")
                .output()
                .unwrap_or_else(|e| panic!("{} did not run ({e}). {INSTALL_HINT}", args[0]))
        };
        let initdb = bindir.join("initdb").display().to_string();
        let data_s = data.display().to_string();
        let out = run(&[
            &initdb,
            "-D",
            &data_s,
            "-U",
            &user,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
        ]);
        assert!(
            out.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let port = free_port();
        let pg_ctl = bindir.join("pg_ctl").display().to_string();
        let log = dir.path().join("postgres.log").display().to_string();
        let opts = format!(
            "-k {} -c listen_addresses=127.0.0.1 -p {port} -c fsync=off -c max_connections=200",
            dir.path().display()
        );
        let out = run(&[
            &pg_ctl, "-D", &data_s, "-l", &log, "-o", &opts, "-w", "start",
        ]);
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}{}\nlog: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        Postgres {
            dir,
            bindir,
            port,
            run_as,
            user,
            next_db: AtomicU32::new(0),
        }
    }

    /// The server's URL for `database` (no password: trust authentication on loopback).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://{}@127.0.0.1:{}/{database}?sslmode=disable",
            self.user, self.port
        )
    }

    /// A new, empty database; its URL.
    pub fn database(&self) -> String {
        let name = format!(
            "t{}_{}",
            std::process::id(),
            self.next_db.fetch_add(1, Ordering::SeqCst)
        );
        let psql = self.bindir.join("psql");
        let out = Command::new(&psql)
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                &self.user,
            ])
            .args(["-d", "postgres", "-v", "ON_ERROR_STOP=1", "-c"])
            .arg(format!("CREATE DATABASE {name}"))
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("psql did not run ({e}). {INSTALL_HINT}"));
        assert!(
            out.status.success(),
            "CREATE DATABASE failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.url(&name)
    }

    /// Run SQL in `database` with psql (for tests that look under the store).
    pub fn psql(&self, database_url: &str, sql: &str) -> String {
        let db = database_url
            .rsplit('/')
            .next()
            .and_then(|s| s.split('?').next())
            .unwrap_or("postgres");
        let out = Command::new(self.bindir.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                &self.user,
            ])
            .args(["-d", db, "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .stdin(Stdio::null())
            .output()
            .expect("psql");
        assert!(
            out.status.success(),
            "psql failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let pg_ctl = self.bindir.join("pg_ctl");
        let data = self.dir.path().join("data");
        let mut cmd = match self.run_as {
            Some(u) => {
                let mut c = Command::new("runuser");
                c.args(["-u", u, "--"]).arg(&pg_ctl);
                c
            }
            None => Command::new(&pg_ctl),
        };
        let _ = cmd
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .status();
    }
}

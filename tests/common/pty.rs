//! A person at a terminal, for `factory-mcp approve`: the child runs in a new session
//! (`setsid`) whose controlling terminal is a fresh pseudo-terminal (`openpty` + `TIOCSCTTY`);
//! the test reads what the child shows there and types into it. Standard input, output and
//! error stay whatever the test gives (pipes), so a test can also show that a pipe is never
//! read. `detached` runs a child in a new session with no terminal at all, so that a test run
//! from a developer's terminal cannot answer for it either.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::Duration;

/// Longest wait for the child to show something: a guard against a hung test, never a timing
/// assertion (a correct run answers in milliseconds).
const HANG_GUARD: Duration = Duration::from_secs(60);

/// A child on its own pseudo-terminal.
pub struct OnPty {
    child: Child,
    master: File,
    /// The slave side, kept open until the child ends so the master reads no early EOF.
    slave: Option<OwnedFd>,
    rx: Receiver<Vec<u8>>,
    /// Everything the child showed on the terminal so far (CR LF folded to LF).
    pub shown: String,
}

fn check(rc: libc::c_int, what: &str) {
    assert!(rc >= 0, "{what}: {}", std::io::Error::last_os_error());
}

/// Start `cmd` in a new session whose controlling terminal is a new pseudo-terminal.
pub fn spawn(cmd: &mut Command) -> OnPty {
    let (mut master, mut slave) = (-1, -1);
    // SAFETY: openpty writes two descriptors into the provided integers; the other pointers
    // may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    check(rc, "openpty");
    // SAFETY: both descriptors were just returned by openpty and are owned here only.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    for fd in [master.as_raw_fd(), slave.as_raw_fd()] {
        // SAFETY: fcntl on a descriptor we own.
        check(
            unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) },
            "FD_CLOEXEC",
        );
    }
    let slave_fd = slave.as_raw_fd();
    // SAFETY: the closure runs in the forked child before exec and calls only async-signal-safe
    // functions (signal, setsid, ioctl).
    unsafe {
        cmd.pre_exec(move || {
            // As a person's terminal would have it: Ctrl-C interrupts. A test run started in
            // the background by a non-interactive shell (nohup, `&` without job control)
            // inherits SIGINT and SIGQUIT ignored, and an ignored signal stays ignored across
            // exec — the Ctrl-C test would then wait for ever.
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::ioctl(slave_fd, libc::TIOCSCTTY as _, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().expect("spawn on a pseudo-terminal");
    let master = File::from(master);
    let mut reader = master.try_clone().expect("clone the master");
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Ends with EIO once the child is gone and the slave closed.
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    OnPty {
        child,
        master,
        slave: Some(slave),
        rx,
        shown: String::new(),
    }
}

/// `factory-mcp approve ARGS…` with a clean environment, standard input a pipe holding
/// `stdin` (never read by approve), on its own pseudo-terminal.
pub fn approve(args: &[&str], home: &std::path::Path, stdin: &str) -> OnPty {
    let mut cmd = approve_command(args, home);
    cmd.stdin(Stdio::piped());
    let mut p = spawn(&mut cmd);
    let mut pipe = p.child.stdin.take().expect("stdin pipe");
    // Ignore a broken pipe: approve does not read its standard input.
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    p
}

/// The `approve` command line with a clean environment and piped output.
pub fn approve_command(args: &[&str], home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_factory-mcp"));
    cmd.arg("approve")
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Run `cmd` in a new session with no controlling terminal, `stdin` piped in; its output.
pub fn detached(cmd: &mut Command, stdin: &str) -> std::process::Output {
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .spawn()
        .expect("spawn without a terminal");
    let mut pipe = child.stdin.take().expect("stdin pipe");
    let _ = pipe.write_all(stdin.as_bytes());
    drop(pipe);
    child.wait_with_output().expect("wait")
}

/// What a finished child left.
pub struct Finished {
    pub status: ExitStatus,
    /// What it showed on the terminal (CR LF folded to LF).
    pub shown: String,
    pub stdout: String,
    pub stderr: String,
}

impl OnPty {
    fn take(&mut self, chunk: Vec<u8>) {
        self.shown
            .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
    }

    /// Read until the terminal shows `needle`; everything shown so far.
    pub fn expect(&mut self, needle: &str) -> &str {
        while !self.shown.contains(needle) {
            match self.rx.recv_timeout(HANG_GUARD) {
                Ok(chunk) => self.take(chunk),
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "the terminal never showed {needle:?}; it showed:\n{}",
                        self.shown
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    panic!("the child ended before showing {needle:?}:\n{}", self.shown)
                }
            }
        }
        &self.shown
    }

    /// The approval code the terminal shows.
    pub fn code(&mut self) -> String {
        let shown = self.expect("Code: ").to_string();
        let after = shown
            .split("type this code: ")
            .nth(1)
            .unwrap_or_else(|| panic!("no code shown:\n{shown}"));
        after
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect()
    }

    /// Type `text` on the terminal.
    pub fn type_in(&mut self, text: &str) {
        self.master
            .write_all(text.as_bytes())
            .expect("write to the terminal");
    }

    /// Wait for the child, then collect everything it showed.
    pub fn finish(mut self) -> Finished {
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut stdout);
        }
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut stderr);
        }
        let status = self.child.wait().expect("wait");
        // With the child gone and our slave closed, the reader sees EOF after the last byte.
        self.slave.take();
        while let Ok(chunk) = self.rx.recv_timeout(HANG_GUARD) {
            self.take(chunk);
        }
        Finished {
            status,
            shown: self.shown,
            stdout,
            stderr,
        }
    }
}

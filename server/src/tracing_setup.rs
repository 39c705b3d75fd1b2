//! Tracing to stderr only (stdout is the stdio protocol channel), through a writer that
//! redacts every formatted event: each event is buffered whole, passed through the
//! [`Redactor`], then written. ANSI colours are off so that no escape code can split a secret
//! and hide it from redaction. A tool call runs in a `tool` span that carries the tool's name
//! (`factory_tools::server`), so that what the call logs names its tool; no span carries an
//! argument value.
//!
//! Filter: `FACTORY_MCP_LOG`, else `RUST_LOG`, else a level from the verbosity.

use std::io::{self, Write};
use std::sync::Arc;

use factory_policies::redact::Redactor;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::{SubscriberInitExt as _, TryInitError};

/// The environment variable read first for the filter directives.
pub const LOG_ENV: &str = "FACTORY_MCP_LOG";

/// The default filter for a verbosity (number of `-v`): info, debug, trace. At info, rmcp's own
/// lines are left out but for warnings and errors: it logs every session's and, in the
/// stateless era, every request's start and end ("Service initialized as server" with the
/// client's whole description, "input stream terminated", "serve finished"), which made three
/// lines — formatted and redacted — per HTTP request. `FACTORY_MCP_LOG=info` brings them back.
pub fn default_directive(verbosity: u8) -> &'static str {
    match verbosity {
        0 => "info,rmcp=warn",
        1 => "debug",
        _ => "trace",
    }
}

/// `FACTORY_MCP_LOG`, else `RUST_LOG`, else the verbosity's default. An unparsable directive
/// falls back to the default rather than silencing the log.
pub fn env_filter(verbosity: u8, env: &dyn Fn(&str) -> Option<String>) -> EnvFilter {
    let fallback = default_directive(verbosity);
    let directive = env(LOG_ENV)
        .filter(|v| !v.trim().is_empty())
        .or_else(|| env("RUST_LOG").filter(|v| !v.trim().is_empty()));
    directive
        .and_then(|d| EnvFilter::try_new(d).ok())
        .unwrap_or_else(|| EnvFilter::new(fallback))
}

/// A [`MakeWriter`] whose writers redact what they are given before passing it on.
#[derive(Debug, Clone)]
pub struct RedactingMakeWriter<M> {
    inner: M,
    redactor: Arc<Redactor>,
}

impl<M> RedactingMakeWriter<M> {
    pub fn new(inner: M, redactor: Arc<Redactor>) -> Self {
        RedactingMakeWriter { inner, redactor }
    }
}

impl<'a, M: MakeWriter<'a>> MakeWriter<'a> for RedactingMakeWriter<M> {
    type Writer = RedactingWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        RedactingWriter {
            inner: self.inner.make_writer(),
            redactor: Arc::clone(&self.redactor),
            buf: Vec::new(),
        }
    }
}

/// Buffers one event; on drop, writes it redacted.
pub struct RedactingWriter<W: Write> {
    inner: W,
    redactor: Arc<Redactor>,
    buf: Vec<u8>,
}

impl<W: Write> Write for RedactingWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        // Flushed on drop, once the whole event is in: a secret split across two writes
        // must still be seen whole.
        Ok(())
    }
}

impl<W: Write> Drop for RedactingWriter<W> {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.buf);
        let redacted = self.redactor.redact(&text);
        // Nowhere to report a failure to write the log.
        let _ = self.inner.write_all(redacted.as_bytes());
        let _ = self.inner.flush();
    }
}

/// The subscriber: the filter and a redacting fmt layer writing to `make_writer`.
pub fn subscriber<M>(
    filter: EnvFilter,
    redactor: Arc<Redactor>,
    make_writer: M,
) -> impl tracing::Subscriber + Send + Sync
where
    M: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let layer = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(RedactingMakeWriter::new(make_writer, redactor));
    tracing_subscriber::registry().with(filter).with(layer)
}

/// Installs the global subscriber: stderr, redacted, filtered by `FACTORY_MCP_LOG` /
/// `RUST_LOG` / `verbosity`.
pub fn init(verbosity: u8, redactor: Arc<Redactor>) -> Result<(), TryInitError> {
    let filter = env_filter(verbosity, &|k| std::env::var(k).ok());
    subscriber(filter, redactor, io::stderr).try_init()
}

#[cfg(test)]
mod tests {
    use super::*;
    use factory_policies::secret_guard::KnownSecrets;
    use secrecy::SecretString;
    use std::sync::Mutex;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    struct CaptureWriter(Arc<Mutex<Vec<u8>>>);

    impl Write for CaptureWriter {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            if let Ok(mut buf) = self.0.lock() {
                buf.extend_from_slice(data);
            }
            Ok(data.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Capture {
        type Writer = CaptureWriter;
        fn make_writer(&'a self) -> Self::Writer {
            CaptureWriter(Arc::clone(&self.0))
        }
    }

    impl Capture {
        fn text(&self) -> String {
            self.0
                .lock()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default()
        }
    }

    const KEY: &str = "pit_TestKeyValue0123456789abcdef";

    fn run_logged(f: impl FnOnce()) -> String {
        run_filtered(EnvFilter::new("trace"), f)
    }

    /// What `f` logs through the subscriber with `filter`, redacted (the platform key known).
    fn run_filtered(filter: EnvFilter, f: impl FnOnce()) -> String {
        let known = KnownSecrets::new().with("PRIME_API_KEY", &SecretString::from(KEY));
        let capture = Capture::default();
        let sub = subscriber(filter, Arc::new(Redactor::new(known)), capture.clone());
        tracing::subscriber::with_default(sub, f);
        capture.text()
    }

    #[test]
    fn a_secret_in_a_field_or_message_comes_out_redacted() {
        let hf = format!("hf_{}", "AbCdEfGh12".repeat(3) + "XyZw");
        let out = run_logged(|| {
            tracing::info!(api_key = %KEY, "calling the platform with {KEY}");
            tracing::warn!(header = ?format!("Bearer {KEY}"), "retrying");
            tracing::error!("upstream said: token {hf} rejected");
        });
        assert!(!out.contains("TestKeyValue"), "{out}");
        assert!(!out.contains("AbCdEfGh12"), "{out}");
        assert_eq!(out.lines().count(), 3, "{out}");
        assert!(out.contains("[REDACTED]"));
        assert!(out.contains("retrying"));
    }

    #[test]
    fn the_filter_prefers_factory_mcp_log_then_rust_log() {
        let env = |k: &str| match k {
            "FACTORY_MCP_LOG" => Some("warn".to_string()),
            "RUST_LOG" => Some("trace".to_string()),
            _ => None,
        };
        assert_eq!(env_filter(0, &env).to_string(), "warn");
        let env = |k: &str| (k == "RUST_LOG").then(|| "debug".to_string());
        assert_eq!(env_filter(0, &env).to_string(), "debug");
        assert_eq!(env_filter(2, &|_| None).to_string(), "trace");
    }

    /// At the default level our own info lines are kept and rmcp's are not, but for its
    /// warnings; `FACTORY_MCP_LOG=info` keeps them all.
    #[test]
    fn the_default_filter_leaves_out_rmcp_info_lines() {
        let logged = |filter: EnvFilter| {
            run_filtered(filter, || {
                tracing::info!(target: "rmcp::service", "Service initialized as server");
                tracing::warn!(target: "rmcp::service", "a warning of rmcp");
                tracing::info!(target: "factory_tools::server", "a line of ours");
            })
        };
        let out = logged(env_filter(0, &|_| None));
        assert!(!out.contains("Service initialized"), "{out}");
        assert!(out.contains("a warning of rmcp"), "{out}");
        assert!(out.contains("a line of ours"), "{out}");
        let env = |k: &str| (k == "FACTORY_MCP_LOG").then(|| "info".to_string());
        assert!(logged(env_filter(0, &env)).contains("Service initialized"));
    }
}

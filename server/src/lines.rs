//! The line transport of `serve` over stdio (and of the bench's server in process): one JSON-RPC
//! message per line, framed, bounded and answered as rmcp's `AsyncRwTransport` frames them, with
//! one difference in how a line is read.
//!
//! rmcp reads every line as "any message": the whole message is first copied into a buffer of
//! its own, its shape checked, and a request then tried as each of the client's request types in
//! turn — `tools/call` is the fourteenth — each time from that buffer. In a profile of a small
//! call (`--spin "raw:get run"` and `"raw:progress"`, perf) that read was 5 % of the server's
//! thread; reading it directly saves 5–8 µs a call (`docs/BENCHMARKS.md`, fourteenth pass).
//! Nearly every line a client sends after the handshake is a `tools/call` request, so
//! [`tool_call`] reads that one shape directly: the envelope's four members, then `params`
//! holding a name, arguments and `_meta` (each at most once, nothing else) straight into the
//! request as rmcp makes it; any other `params` by rmcp's own `Deserialize` of
//! [`CallToolRequest`]. Anything it does not take whole (another method, another member, a
//! member sent twice, a `params` rmcp's type refuses, a byte-order mark) is read by rmcp's
//! codec, so its outcome — the message, rmcp's `Invalid request` answer, or the line ignored —
//! is rmcp's. A property test holds the two readers to the same message on generated lines near
//! a tool call; another holds this transport to rmcp's on a stream of edge cases. Its log lines
//! keep rmcp's target, so a log filter on `rmcp` applies to them as before.

use std::sync::Arc;

use futures::SinkExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestMethod, CallToolRequestParams, ClientRequest, ErrorData,
    JsonObject, JsonRpcMessage, JsonRpcRequest, JsonRpcVersion2_0, RequestId, RequestMetaObject,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{
    DEFAULT_MAX_LINE_LENGTH, JsonRpcMessageCodec, JsonRpcMessageCodecError,
};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, BufReader};
use tokio_util::bytes::{BufMut, BytesMut};
use tokio_util::codec::{Decoder, FramedWrite};

/// The target rmcp's transport logs under: these lines are its lines.
const RMCP_TARGET: &str = "rmcp::transport::async_rw";

type Writer<W> = FramedWrite<W, JsonRpcMessageCodec<TxJsonRpcMessage<RoleServer>>>;

/// The server's side of a line-delimited JSON-RPC stream (see the module's note).
pub struct LineTransport<R, W> {
    read: BufReader<R>,
    /// The line being read; kept across a cancelled [`Transport::receive`] (the service polls
    /// it beside its other work), so a line is never lost half read.
    line: Vec<u8>,
    max_line_length: usize,
    /// Dropping the rest of a line over `max_line_length`, until its newline.
    discarding: bool,
    write: Arc<tokio::sync::Mutex<Option<Writer<W>>>>,
    /// rmcp's reader, for every line [`tool_call`] does not take.
    codec: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    /// An `Invalid request` answer owed for a line that was JSON but no message, written before
    /// the next line is read (in two steps, so a cancelled receive resumes where it stopped).
    owed: Option<Owed>,
}

enum Owed {
    Queue,
    Flush,
}

enum LineRead {
    Line,
    Oversized,
    Eof,
    Io(std::io::Error),
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub fn new(read: R, write: W) -> Self {
        LineTransport {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line_length: DEFAULT_MAX_LINE_LENGTH,
            discarding: false,
            write: Arc::new(tokio::sync::Mutex::new(Some(FramedWrite::new(
                write,
                JsonRpcMessageCodec::default(),
            )))),
            codec: JsonRpcMessageCodec::default(),
            owed: None,
        }
    }

    /// Lines longer than this are dropped (and logged), the stream kept (rmcp's default: 16 MiB).
    pub fn with_max_line_length(mut self, max: usize) -> Self {
        self.max_line_length = max;
        self
    }

    /// One newline-terminated line into `self.line`, never letting it grow past the bound: what
    /// `fill_buf` gives is looked at before it is kept, and kept and consumed with no await
    /// between, so a cancelled read leaves the partial line for the next call.
    async fn read_line(&mut self) -> LineRead {
        loop {
            let (consumed, done) = {
                let available = match self.read.fill_buf().await {
                    Ok(available) => available,
                    Err(e) => return LineRead::Io(e),
                };
                if available.is_empty() {
                    return LineRead::Eof;
                }
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.map_or(available.len(), |i| i + 1);
                if self.discarding {
                    if newline.is_some() {
                        self.discarding = false;
                    }
                    (take, None)
                } else if self.line.len().saturating_add(take) > self.max_line_length {
                    self.line.clear();
                    self.discarding = newline.is_none();
                    (take, Some(LineRead::Oversized))
                } else {
                    self.line.extend_from_slice(&available[..take]);
                    (take, newline.map(|_| LineRead::Line))
                }
            };
            self.read.consume(consumed);
            if let Some(done) = done {
                return done;
            }
        }
    }

    /// Write the `Invalid request` answer owed, if any; `false` when the stream is closed.
    async fn pay_owed(&mut self) -> bool {
        let Some(owed) = self.owed.as_mut() else {
            return true;
        };
        let write = self.write.clone();
        let mut write = write.lock().await;
        let Some(framed) = write.as_mut() else {
            return false;
        };
        if matches!(owed, Owed::Queue) {
            let answer = TxJsonRpcMessage::<RoleServer>::error(
                ErrorData::invalid_request("Invalid request", None),
                None,
            );
            if framed.feed(answer).await.is_err() {
                return false;
            }
            *owed = Owed::Flush;
        }
        if framed.flush().await.is_err() {
            return false;
        }
        self.owed = None;
        true
    }
}

/// The envelope of a `tools/call` request, nothing else in it: `params` read as [`CallParams`],
/// or kept as sent (`&RawValue`) for rmcp's reader of the request.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallLine<P> {
    #[allow(dead_code)] // checked ("2.0"), not used
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[allow(dead_code)] // checked ("tools/call"), not used
    method: CallToolRequestMethod,
    params: P,
}

/// The `params` of a `tools/call` request holding a name, arguments and `_meta`, nothing else
/// in it, each at most once: read straight into their types, in the same pass as the envelope
/// (so serde_json's nesting limit counts from the line's top, as in rmcp's reader). rmcp reads
/// `params` as `_meta` beside the rest of `params` flattened into [`CallToolRequestParams`],
/// which first copies every member into a buffer of serde's own and then reads them from it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<JsonObject>,
    #[serde(default, rename = "_meta")]
    meta: Option<JsonObject>,
}

/// A `tools/call` request read directly, as rmcp's reader reads it; `None` for any line not of
/// exactly that shape (see the module's note), which rmcp's reader then reads.
pub fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let (id, request) = match serde_json::from_slice::<CallLine<CallParams>>(line) {
        // As rmcp makes it: the name and arguments in the request's parameters, `_meta` in its
        // extensions (the parameters' own `meta` left empty: rmcp's reader takes `_meta` out
        // before it reads the rest).
        Ok(CallLine {
            id,
            params:
                CallParams {
                    name,
                    arguments,
                    meta,
                },
            ..
        }) => {
            let mut params = CallToolRequestParams::new(name);
            params.arguments = arguments;
            let mut request = CallToolRequest::new(params);
            if let Some(meta) = meta {
                request.extensions.insert(RequestMetaObject::from(meta));
            }
            (id, request)
        }
        // Any other `params` (another member, one sent twice, a value of another type) by
        // rmcp's own reader of the request, from its two members: the method, and `params` as
        // sent (one level down from the top, as in the line).
        Err(_) => {
            let call: CallLine<&RawValue> = serde_json::from_slice(line).ok()?;
            let params = call.params.get();
            let mut request = String::with_capacity(params.len() + 33);
            request.push_str(r#"{"method":"tools/call","params":"#);
            request.push_str(params);
            request.push('}');
            (call.id, serde_json::from_str(&request).ok()?)
        }
    };
    Some(JsonRpcMessage::Request(JsonRpcRequest::new(
        id,
        ClientRequest::CallToolRequest(request),
    )))
}

/// rmcp's reading of one line (without its newline): the message, `Ok(None)` for one it
/// ignores, or its error.
fn rmcp_read(
    codec: &mut JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
    line: &[u8],
) -> Result<Option<RxJsonRpcMessage<RoleServer>>, JsonRpcMessageCodecError> {
    let mut framed = BytesMut::with_capacity(line.len() + 1);
    framed.extend_from_slice(line);
    framed.put_u8(b'\n');
    codec.decode(&mut framed)
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            match write.lock().await.as_mut() {
                Some(framed) => framed.send(item).await.map_err(Into::into),
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "Transport is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.pay_owed().await {
                return None;
            }
            match self.read_line().await {
                LineRead::Line => {}
                LineRead::Oversized => {
                    tracing::error!(
                        target: RMCP_TARGET,
                        max_line_length = self.max_line_length,
                        "Incoming message exceeded the maximum line length, discarding it"
                    );
                    continue;
                }
                LineRead::Eof => return None,
                LineRead::Io(e) => {
                    tracing::error!(target: RMCP_TARGET, "Error reading from stream: {e}");
                    return None;
                }
            }
            let parsed = {
                let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
                if line.strip_suffix(b"\r").unwrap_or(line).is_empty() {
                    None
                } else {
                    Some(match tool_call(line) {
                        Some(message) => Ok(Some(message)),
                        None => rmcp_read(&mut self.codec, line),
                    })
                }
            };
            self.line.clear();
            match parsed {
                None | Some(Ok(None)) => {}
                Some(Ok(Some(message))) => return Some(message),
                Some(Err(JsonRpcMessageCodecError::Serde(e))) => match e.classify() {
                    // Not JSON: nothing to answer (no id), and an answer could start an echo
                    // storm with a peer that sends it back; ignored, as rmcp ignores it.
                    serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                        tracing::debug!(
                            target: RMCP_TARGET,
                            "Ignoring unparsable incoming message: {e}"
                        );
                    }
                    serde_json::error::Category::Data | serde_json::error::Category::Io => {
                        tracing::debug!(
                            target: RMCP_TARGET,
                            "Protocol error on incoming message: {e}"
                        );
                        self.owed = Some(Owed::Queue);
                    }
                },
                Some(Err(e)) => {
                    tracing::error!(target: RMCP_TARGET, "Error reading from stream: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        drop(self.write.lock().await.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};
    use tokio::io::AsyncWriteExt as _;

    /// Both readers of `line`: the direct one's message, if it took the line, must be the very
    /// message rmcp's reader makes of it (as sent again, and as Rust sees it).
    fn agree(line: &str) -> bool {
        let mut codec = JsonRpcMessageCodec::default();
        let rmcp = rmcp_read(&mut codec, line.as_bytes());
        let Some(direct) = tool_call(line.as_bytes()) else {
            return false;
        };
        let Ok(Some(rmcp)) = rmcp else {
            panic!("taken directly, but rmcp's reader says {rmcp:?}: {line}");
        };
        assert_eq!(
            serde_json::to_string(&direct).unwrap(),
            serde_json::to_string(&rmcp).unwrap(),
            "{line}"
        );
        assert_eq!(format!("{direct:?}"), format!("{rmcp:?}"), "{line}");
        // `Debug` shows no extensions, where rmcp keeps the request's `_meta`.
        assert_eq!(meta_of(&direct), meta_of(&rmcp), "{line}");
        true
    }

    /// The `_meta` rmcp keeps in a tool call's extensions.
    fn meta_of(m: &RxJsonRpcMessage<RoleServer>) -> Option<rmcp::model::RequestMetaObject> {
        match m {
            JsonRpcMessage::Request(JsonRpcRequest {
                request: ClientRequest::CallToolRequest(call),
                ..
            }) => call
                .extensions
                .get::<rmcp::model::RequestMetaObject>()
                .cloned(),
            other => panic!("not a tool call: {other:?}"),
        }
    }

    #[test]
    fn a_tool_call_is_read_directly_as_rmcp_reads_it() {
        // Each line, and whether its `params` are read straight into their type (only a name,
        // arguments and `_meta`) or by rmcp's reader of the request.
        for (line, straight) in [
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_run","arguments":{"run_id":"r1"}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"list_runs"}}"#,
                true,
            ),
            (
                r#"{"params":{"arguments":{"limit":20},"name":"list_runs"},"method":"tools/call","id":-3,"jsonrpc":"2.0"}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":9223372036854775807,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":"p1","io.example/k":[1,2]}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"n\u00e9","arguments":{"a":{"b":[null,true,1.5e3,-0.0]}},"requestState":"s"}}"#,
                false,
            ),
            (
                "  {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}\t\r",
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"k":1,"k":2}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","unknown":{"deep":[1]}}}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null,"_meta":null}}"#,
                true,
            ),
            // names spelled with escapes, ids written as exponents
            (
                r#"{"jsonrpc":"2\u002e0","\u0069d":1e2,"\u006d\u0065thod":"tools/call","par\u0061ms":{"name":"x","\u005fmeta":{"progressToken":1}}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"x","_meta":{}}}"#,
                true,
            ),
        ] {
            assert!(agree(line), "not taken directly: {line}");
            let line = line.trim_matches([' ', '\t', '\r']);
            assert_eq!(
                serde_json::from_str::<CallLine<CallParams>>(line).is_ok(),
                straight,
                "{line}"
            );
        }
    }

    /// serde_json stops reading past 128 levels of nesting. Counted from the line's top, as rmcp's
    /// reader counts them, whichever way `params` is read: a line rmcp refuses is never taken.
    #[test]
    fn nesting_is_limited_as_rmcp_limits_it() {
        for depth in 120..=130 {
            let deep = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            for params in [
                format!(r#"{{"name":"x","arguments":{{"a":{deep}}}}}"#),
                format!(r#"{{"name":"x","_meta":{{"a":{deep}}}}}"#),
                format!(r#"{{"name":"x","requestState":"s","arguments":{{"a":{deep}}}}}"#),
            ] {
                let line = format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#
                );
                let rmcp = matches!(
                    rmcp_read(&mut JsonRpcMessageCodec::default(), line.as_bytes()),
                    Ok(Some(_))
                );
                assert_eq!(agree(&line), rmcp, "depth {depth}: {params}");
            }
        }
    }

    #[test]
    fn any_other_line_is_left_to_rmcps_reader() {
        for line in [
            // other methods and kinds of message
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            // another member, or one sent twice
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"x":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#,
            // no id, a bad id or version, params rmcp's type refuses
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":null}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            // a byte-order mark, not JSON, not an object
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"x\"}}",
            "hello",
            "[1,2]",
        ] {
            assert!(
                tool_call(line.as_bytes()).is_none(),
                "taken directly: {line}"
            );
        }
    }

    /// Any JSON value, a few levels deep.
    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(|f| json!(f)),
            "[a-z_/\\\\\"é\u{1F600}\u{0}-\u{1f}]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec(("[a-z_]{0,4}", inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Mostly absent or an object (as `arguments` and `_meta` are sent), now and then anything.
    fn maybe_object() -> impl Strategy<Value = Option<Value>> {
        prop_oneof![
            3 => Just(None),
            6 => prop::collection::vec(("[a-z_/.]{0,6}", any_json()), 0..4)
                .prop_map(|kv| Some(Value::Object(kv.into_iter().collect()))),
            1 => any_json().prop_map(Some),
        ]
    }

    /// A member as sent: `"name":value`, the value's text given (so a line can send a member
    /// twice, or a value no `Value` would print).
    fn member(name: &str, value: &str) -> String {
        format!("{}:{value}", Value::from(name))
    }

    prop_compose! {
        /// A line that is, or is close to, a `tools/call` request: each member present or not,
        /// right or wrong, in any order, some sent twice, others added.
        fn call_like()(
            version in prop_oneof![12 => Just("\"2.0\""), 1 => Just("\"1.0\""), 1 => Just("2")],
            id in prop_oneof![
                6 => any::<i64>().prop_map(|i| i.to_string()),
                1 => any::<u64>().prop_map(|u| u.to_string()),
                2 => "[a-z0-9-]{0,8}".prop_map(|s| Value::from(s).to_string()),
                1 => Just("null".to_string()),
                1 => Just("1.5".to_string()),
            ],
            method in prop_oneof![
                16 => Just("\"tools/call\""),
                1 => Just("\"tools\\/call\""),
                1 => Just("\"tools/list\""),
                1 => Just("\"ping\""),
            ],
            name in prop_oneof![
                12 => "[a-z_]{1,12}".prop_map(|s| Some(Value::from(s))),
                1 => Just(None),
                1 => any_json().prop_map(Some),
            ],
            arguments in maybe_object(),
            meta in maybe_object(),
            other in prop::option::weighted(
                0.2,
                (
                    prop_oneof![
                        Just("task".to_string()),
                        Just("inputResponses".to_string()),
                        Just("requestState".to_string()),
                        "[a-z_]{1,6}",
                    ],
                    prop_oneof![any_json(), "[a-z]{0,6}".prop_map(Value::from)],
                ),
            ),
            params_twice in prop::option::weighted(0.05, 0usize..3),
            params_null in prop::bool::weighted(0.05),
            drop_member in prop::option::weighted(0.05, 0usize..4),
            twice in prop::option::weighted(0.05, 0usize..4),
            extra in prop::option::weighted(
                0.05,
                (prop_oneof!["[a-z_]{1,6}", Just("result".to_string()), Just("error".to_string())], any_json()),
            ),
            order in Just(()).prop_perturb(|_, mut rng| {
                let mut o = vec![0usize, 1, 2, 3];
                for i in (1..4).rev() {
                    o.swap(i, (rng.next_u32() as usize) % (i + 1));
                }
                o
            }),
            space in prop_oneof![Just(""), Just(" "), Just("\r")],
        ) -> String {
            // `params` as sent: its members' text, one of them now and then sent twice.
            let mut params: Vec<String> = Vec::new();
            if let Some(name) = name {
                params.push(member("name", &name.to_string()));
            }
            if let Some(a) = arguments {
                params.push(member("arguments", &a.to_string()));
            }
            if let Some(m) = meta {
                params.push(member("_meta", &m.to_string()));
            }
            if let Some((k, v)) = other {
                params.push(member(&k, &v.to_string()));
            }
            if let Some(again) = params_twice.and_then(|i| params.get(i).cloned()) {
                params.push(again);
            }
            let params = if params_null { "null".to_string() } else { format!("{{{}}}", params.join(",")) };
            let members = [
                member("jsonrpc", version),
                member("id", &id),
                member("method", method),
                member("params", &params),
            ];
            let mut out: Vec<String> = order
                .iter()
                .filter(|&&i| Some(i) != drop_member)
                .map(|&i| members[i].clone())
                .collect();
            if let Some(i) = twice {
                out.push(members[i].clone());
            }
            if let Some((k, v)) = extra {
                out.push(member(&k, &v.to_string()));
            }
            format!("{space}{{{}}}{space}", out.join(&format!(",{space}")))
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// On any line near a tool call, the direct reader takes it only as rmcp's reads it.
        #[test]
        fn the_direct_reader_never_disagrees_with_rmcps(line in call_like()) {
            agree(&line);
        }
    }

    /// The property above would hold vacuously if the direct reader took no generated line.
    #[test]
    fn a_good_share_of_the_generated_lines_are_taken_directly() {
        use proptest::strategy::ValueTree as _;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let lines = call_like();
        let taken = (0..1000)
            .filter(|_| {
                let line = lines.new_tree(&mut runner).unwrap().current();
                tool_call(line.as_bytes()).is_some()
            })
            .count();
        eprintln!("{taken} of 1000 generated lines taken directly");
        assert!((250..1000).contains(&taken), "{taken} of 1000");
    }

    /// What a peer wrote, read back line by line.
    async fn lines_from(peer: impl tokio::io::AsyncRead + Unpin) -> Vec<Value> {
        let mut out = Vec::new();
        let mut lines = tokio::io::BufReader::new(peer).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            out.push(serde_json::from_str(&line).unwrap());
        }
        out
    }

    fn call(id: i64) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"get_run"}}}}"#
        )
    }

    fn id_of(m: &RxJsonRpcMessage<RoleServer>) -> Value {
        serde_json::to_value(m).unwrap()["id"].clone()
    }

    /// Every message `t` reads from `input` until the stream ends (as sent again), and every
    /// line it wrote back. The input is written `chunk` bytes at a time into a pipe of `pipe`
    /// bytes, beside the reading, so that a line can arrive over several reads.
    async fn run<T: Transport<RoleServer>>(
        make: impl FnOnce(
            tokio::io::ReadHalf<tokio::io::DuplexStream>,
            tokio::io::WriteHalf<tokio::io::DuplexStream>,
        ) -> T,
        input: &str,
        chunk: usize,
        pipe: usize,
    ) -> (Vec<Value>, Vec<Value>) {
        let (client, server) = tokio::io::duplex(pipe);
        let (read, write) = tokio::io::split(server);
        let (answers, mut requests) = tokio::io::split(client);
        let mut t = make(read, write);
        let input = input.as_bytes().to_vec();
        // The writer stops when the transport is gone: a transport that ends the stream early
        // then fails the comparison instead of leaving the writer blocked on a full pipe.
        let writer = tokio::spawn(async move {
            for part in input.chunks(chunk) {
                if requests.write_all(part).await.is_err() {
                    return;
                }
            }
            let _ = requests.shutdown().await;
        });
        let written = tokio::spawn(lines_from(answers));
        let mut read = Vec::new();
        while let Some(m) = t.receive().await {
            read.push(serde_json::to_value(&m).unwrap());
        }
        t.close().await.unwrap();
        drop(t);
        writer.await.unwrap();
        (read, written.await.unwrap())
    }

    /// [`run`] on this transport and on rmcp's, both with lines bounded to `max` bytes.
    async fn both(input: &str, max: usize, chunk: usize, pipe: usize) -> (Vec<Value>, Vec<Value>) {
        let ours = run(
            |r, w| LineTransport::new(r, w).with_max_line_length(max),
            input,
            chunk,
            pipe,
        )
        .await;
        let rmcps = run(
            |r, w| {
                rmcp::transport::async_rw::AsyncRwTransport::<RoleServer, _, _>::new(r, w)
                    .with_max_line_length(max)
            },
            input,
            chunk,
            pipe,
        )
        .await;
        assert_eq!(ours, rmcps, "chunks of {chunk}, a pipe of {pipe}");
        ours
    }

    #[tokio::test]
    async fn the_stream_is_framed_and_answered_as_rmcps_transport_frames_it() {
        let too_long = call(4).replace("get_run", &"x".repeat(300));
        let sent = [
            call(1),
            String::new(),
            "not json".to_string(),
            // JSON but no message: rmcp answers `Invalid request` (no id) and reads on
            r#"{"a":1}"#.to_string(),
            format!("{}\r", call(2)),
            // a byte-order mark: not taken directly, read by rmcp's codec
            format!("\u{feff}{}", call(3)),
            too_long,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
            r#"{"jsonrpc":"2.0","method":"$/lsp"}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"x"}}"#
                .to_string(),
            call(5),
            // the last line without its newline
            call(6),
        ];
        let input = sent.join("\n");
        let (read, written) = both(&input, 256, 1 << 16, 1 << 16).await;
        let ids: Vec<&Value> = read.iter().map(|m| &m["id"]).collect();
        assert_eq!(
            ids,
            [
                &json!(1),
                &json!(2),
                &json!(3),
                &Value::Null,
                &Value::Null,
                &json!(5)
            ]
        );
        assert_eq!(written.len(), 2, "{written:?}");
        for w in &written {
            assert_eq!(w["error"]["code"], -32600, "{written:?}");
        }
    }

    #[tokio::test]
    async fn lines_over_the_bound_are_dropped_across_reads_as_rmcp_drops_them() {
        let at_limit = call(2);
        let max = at_limit.len() + 1; // with its newline
        let sent = [
            call(1).replace("get_run", &"y".repeat(3 * max)),
            // the rest of a line over the bound is no message, even one that reads as one
            format!(
                "{}{}",
                " ".repeat(3 * max),
                r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#
            ),
            at_limit,
            call(3).replace("get_run", "get_runs"),
            call(4).replace("get_run", &"z".repeat(max)),
            call(5),
        ];
        let input = format!("{}\n", sent.join("\n"));
        for (chunk, pipe) in [(7, 97), (61, 64), (1 << 12, 1 << 12)] {
            let (read, written) = both(&input, max, chunk, pipe).await;
            let ids: Vec<&Value> = read.iter().map(|m| &m["id"]).collect();
            assert_eq!(ids, [&json!(2), &json!(5)], "chunks of {chunk}");
            assert!(written.is_empty(), "{written:?}");
        }
    }

    #[tokio::test]
    async fn a_closed_transport_sends_nothing() {
        let (_client, server) = tokio::io::duplex(1 << 10);
        let (read, write) = tokio::io::split(server);
        let mut t = LineTransport::new(read, write);
        t.close().await.unwrap();
        let answer = TxJsonRpcMessage::<RoleServer>::error(
            ErrorData::invalid_request("Invalid request", None),
            None,
        );
        let e = t.send(answer).await.unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotConnected);
    }

    #[tokio::test]
    async fn a_line_whose_read_is_cancelled_is_read_whole_by_the_next_receive() {
        use futures::FutureExt as _;
        let (mut client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        let mut t = LineTransport::new(read, write);
        let line = call(8);
        let (head, tail) = line.split_at(line.len() / 2);
        client.write_all(head.as_bytes()).await.unwrap();
        assert!(
            t.receive().now_or_never().is_none(),
            "half a line is no message"
        );
        client
            .write_all(format!("{tail}\n").as_bytes())
            .await
            .unwrap();
        // The end of the stream after it: a transport that lost the half line ends, not waits.
        client.shutdown().await.unwrap();
        let m = t.receive().await.expect("the whole line");
        assert_eq!(id_of(&m), json!(8));
    }
}

//! The rmcp `ServerHandler`: a registry of tool handlers built from the catalogue, filtered by
//! the gate the server was started with. A tool outside the gate is not listed, and calling it is
//! a protocol error ("tool not found"), exactly like a tool that does not exist.

use std::{collections::BTreeMap, future::Future, pin::Pin, sync::Arc};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, GetPromptRequestParams,
        GetPromptResponse, Implementation, InputResponses, JsonObject, ListPromptsResult,
        ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
        ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse, ResultType,
        ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use tracing::Instrument;

use crate::{
    catalogue::ToolSpec,
    error::ToolError,
    reply::{self, HasRedactor, Redact, ToolResult},
    resources::ResourceReader,
    schema,
};

/// Everything a tool call carries besides its arguments.
pub struct Call {
    /// The arguments exactly as sent, for the secret guard.
    pub arguments: serde_json::Value,
    pub ctx: RequestContext<RoleServer>,
    pub request_state: Option<String>,
    pub input_responses: Option<InputResponses>,
}

type BoxFuture = Pin<Box<dyn Future<Output = CallToolResponse> + Send>>;
type Handler<S> = Arc<dyn Fn(Arc<S>, Option<JsonObject>, Call) -> BoxFuture + Send + Sync>;

/// A tool as one value: its catalogue record, its MCP description (built from the record and
/// the handler's argument and result types) and its handler. A handler is bound to a record
/// constant (`catalogue::PLAN_RUN`), never to a name string, so a misspelt record does not
/// compile.
pub struct ServerTool<S> {
    pub spec: &'static ToolSpec,
    pub tool: Tool,
    handler: Handler<S>,
    /// The `tool` span its calls run in where no span is current (the default log): made on the
    /// first such call and entered by the later ones through a clone, which is a reference
    /// count. Making, formatting and closing a span per call cost 3.9–6.5 µs of a small call in
    /// the shipped binary (docs/BENCHMARKS.md, eighteenth pass).
    span: std::sync::OnceLock<tracing::Span>,
    /// Generates the input schema from the argument type (what the embedded one must equal).
    #[cfg(test)]
    pub generate_input_schema: fn() -> Arc<rmcp::model::JsonObject>,
}

impl<S: HasRedactor + Send + Sync + 'static> ServerTool<S> {
    /// The tool `spec` served by the typed handler `f`.
    pub fn new<A, O, F, Fut>(spec: &'static ToolSpec, f: F) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        O: Serialize + Send + 'static,
        F: Fn(Arc<S>, A, Call) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolResult<O>> + Send + 'static,
    {
        let name = spec.name;
        let annotations = ToolAnnotations::new()
            .read_only(spec.hints.read_only)
            .destructive(spec.hints.destructive)
            .idempotent(spec.hints.idempotent)
            .open_world(spec.hints.open_world);
        let tool = Tool::new(
            spec.name,
            spec.description,
            schema::input_schema_of::<A>(name),
        )
        .with_title(spec.title)
        .with_annotations(annotations)
        .with_raw_output_schema(schema::output_schema());
        let f = Arc::new(f);
        let handler: Handler<S> = Arc::new(move |state: Arc<S>, args, call| {
            let f = f.clone();
            Box::pin(async move {
                let timer = crate::meter::CallTimer::start(name);
                let mut call = call;
                call.arguments = serde_json::Value::Object(args.unwrap_or_default());
                // Read from the arguments in place: the call keeps them for the secret guard.
                let parsed: A = match A::deserialize(&call.arguments) {
                    Ok(a) => a,
                    Err(e) => {
                        let error = ToolError::bad_argument(format!(
                            "invalid arguments for {name}: {e}. Check the tool's input schema and call again."
                        ));
                        let result = Err(error);
                        timer.finish::<O>(&result);
                        return reply::answer::<O>(name, result, &*state);
                    }
                };
                let shaping = state.clone();
                let result = f(state, parsed, call).await;
                timer.finish(&result);
                reply::answer(name, result, &*shaping)
            })
        });
        ServerTool {
            spec,
            tool,
            handler,
            span: std::sync::OnceLock::new(),
            #[cfg(test)]
            generate_input_schema: schema::input_schema::<A>,
        }
    }
}

/// Called after each tool call that has an authenticated subject (OAuth): the tool, the
/// subject, and the outcome (`ok`, `error`, `input_required`, `other`).
pub type CallHook<S> = Arc<
    dyn Fn(Arc<S>, &'static str, Arc<str>, &'static str) -> Pin<Box<dyn Future<Output = ()> + Send>>
        + Send
        + Sync,
>;

/// The MCP server: the shared state and the tools the gate lets through.
pub struct FactoryServer<S> {
    state: Arc<S>,
    tools: Arc<BTreeMap<&'static str, ServerTool<S>>>,
    instructions: &'static str,
    resources: Option<ResourceReader<S>>,
    on_call: Option<CallHook<S>>,
}

impl<S> Clone for FactoryServer<S> {
    fn clone(&self) -> Self {
        FactoryServer {
            state: self.state.clone(),
            tools: self.tools.clone(),
            instructions: self.instructions,
            resources: self.resources.clone(),
            on_call: self.on_call.clone(),
        }
    }
}

impl<S: Send + Sync + 'static> FactoryServer<S> {
    /// A server with the tools among `defs` that `enabled` lets through.
    pub fn new(
        state: Arc<S>,
        defs: Vec<ServerTool<S>>,
        enabled: impl Fn(&ToolSpec) -> bool,
        instructions: &'static str,
    ) -> Self {
        let tools = defs
            .into_iter()
            .filter(|d| enabled(d.spec))
            .map(|d| (d.spec.name, d))
            .collect();
        FactoryServer {
            state,
            tools: Arc::new(tools),
            instructions,
            resources: None,
            on_call: None,
        }
    }

    /// Run `hook` after every call made for an authenticated subject (the audit log's record
    /// of each call under OAuth).
    pub fn with_call_hook(mut self, hook: CallHook<S>) -> Self {
        self.on_call = Some(hook);
        self
    }

    /// Serve the `factory://runs/...` resources with `reader`; they are offered only when the
    /// gate lets the run read tools through (`get_run`, `get_logs`), like the tools themselves.
    pub fn with_resources(mut self, reader: ResourceReader<S>) -> Self {
        self.resources = Some(reader);
        self
    }

    fn serves_resources(&self) -> bool {
        self.resources.is_some()
            && self.tools.contains_key("get_run")
            && self.tools.contains_key("get_logs")
    }

    pub fn state(&self) -> &Arc<S> {
        &self.state
    }

    /// The listed tools, sorted by name.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.values().map(|d| d.tool.clone()).collect()
    }
}

/// A protocol error as it may leave the server: its message (which can echo a tool name, URI or
/// prompt name the client sent) redacted, then made one bounded line.
fn safe_error(mut e: McpError, redactor: &dyn Redact) -> McpError {
    let shown = factory_policies::untrusted::one_line(&redactor.redact_str(&e.message), 300);
    e.message = shown.into();
    e
}

impl<S: HasRedactor + Send + Sync + 'static> ServerHandler for FactoryServer<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .build(),
        )
        .with_server_info(Implementation::new(
            "factory-mcp",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions(self.instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let mut result = ListToolsResult::with_all_items(self.tools());
        result.result_type = Some(ResultType::COMPLETE);
        result.ttl_ms = modern.then_some(0);
        result.cache_scope = modern.then_some(CacheScope::Public);
        Ok(result)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Runs are many and change: they are offered as templates, not listed one by one.
        let mut result = ListResourcesResult::with_all_items(Vec::new());
        mark_complete(
            &context,
            &mut result.result_type,
            &mut result.ttl_ms,
            &mut result.cache_scope,
        );
        Ok(result)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let templates = if self.serves_resources() {
            crate::resources::templates()
        } else {
            Vec::new()
        };
        let mut result = ListResourceTemplatesResult::with_all_items(templates);
        mark_complete(
            &context,
            &mut result.result_type,
            &mut result.ttl_ms,
            &mut result.cache_scope,
        );
        Ok(result)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        match &self.resources {
            Some(reader) if self.serves_resources() => {
                let span = tracing::info_span!("resource");
                let mut result = reader(self.state.clone(), request.uri)
                    .instrument(span)
                    .await
                    .map_err(|e| safe_error(e, self.state.redactor()))?;
                let mut scope = None;
                mark_complete(
                    &context,
                    &mut result.result_type,
                    &mut result.ttl_ms,
                    &mut scope,
                );
                // A run is visible to its owner and team only.
                result.cache_scope = scope.map(|_| CacheScope::Private);
                Ok(result.into())
            }
            _ => Err(safe_error(
                McpError::resource_not_found(
                    format!(
                        "resource not found: {}",
                        crate::resources::shown_uri(&request.uri)
                    ),
                    None,
                ),
                self.state.redactor(),
            )),
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let prompts = crate::resources::prompts(|t| self.tools.contains_key(t));
        let mut result = ListPromptsResult::with_all_items(prompts);
        mark_complete(
            &context,
            &mut result.result_type,
            &mut result.ttl_ms,
            &mut result.cache_scope,
        );
        Ok(result)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        crate::resources::get_prompt(&request.name, request.arguments.as_ref(), |t| {
            self.tools.contains_key(t)
        })
        .map(Into::into)
        .map_err(|e| safe_error(e, self.state.redactor()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).map(|d| d.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(def) = self.tools.get(request.name.as_ref()) else {
            crate::meter::unknown_tool();
            return Err(safe_error(
                McpError::invalid_params(format!("tool not found: {}", request.name), None),
                self.state.redactor(),
            ));
        };
        let caller = caller_of(&context);
        if let Some(c) = &caller {
            let access = tool_access_of(def.spec);
            if !c.may(access) {
                return Err(safe_error(
                    McpError::invalid_request(
                        format!(
                            "{} needs the OAuth scope {}, which this access token does not hold: ask the authorization server for a token with it",
                            def.spec.name,
                            c.needed(access)
                        ),
                        None,
                    ),
                    self.state.redactor(),
                ));
            }
        }
        let subject = caller.map(|c| Arc::<str>::from(c.subject));
        // Outside any span (the default log leaves out rmcp's `serve_inner`, a span per session,
        // or per request when stateless) the tool's kept span is entered. It is made a root
        // (`parent: None`, though no span is current here) so that nothing of the call that made
        // it is kept. A span the filter left disabled stays disabled, rightly: the filter is
        // fixed for the process's life. Inside a span (`FACTORY_MCP_LOG=info` keeps
        // `serve_inner`) each call makes its own, so that its lines keep their parents.
        let span = if tracing::Span::current().is_none() {
            def.span
                .get_or_init(|| tracing::info_span!(parent: None, "tool", name = def.spec.name))
                .clone()
        } else {
            tracing::info_span!("tool", name = def.spec.name)
        };
        let call = Call {
            arguments: serde_json::Value::Null,
            ctx: context,
            request_state: request.request_state,
            input_responses: request.input_responses,
        };
        let run = (def.handler)(self.state.clone(), request.arguments, call);
        let response = crate::audit::with_subject(subject.clone(), run)
            .instrument(span)
            .await;
        if let (Some(hook), Some(subject)) = (&self.on_call, subject) {
            let outcome = match &response {
                CallToolResponse::Complete(r) if r.is_error == Some(true) => "error",
                CallToolResponse::Complete(_) => "ok",
                CallToolResponse::InputRequired(_) => "input_required",
                _ => "other",
            };
            hook(self.state.clone(), def.spec.name, subject, outcome).await;
        }
        Ok(response)
    }
}

/// The OAuth caller the HTTP layer authenticated (`factory_server::http::oauth`), from the
/// request parts rmcp puts into the context; `None` over stdio and with a static token.
pub fn caller_of(context: &RequestContext<RoleServer>) -> Option<factory_policies::scopes::Caller> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<factory_policies::scopes::Caller>())
        .cloned()
}

/// The capability a tool needs (`policies::scopes::tool_access` over its catalogue record).
pub fn tool_access_of(spec: &ToolSpec) -> factory_policies::scopes::Access {
    use crate::catalogue::Toolset;
    factory_policies::scopes::tool_access(
        matches!(spec.toolset, Toolset::Launch | Toolset::Lifecycle),
        spec.hints.read_only,
    )
}

/// Mark a list answer complete and, for 2026-07-28 clients, cacheable as `tools/list` is.
fn mark_complete(
    context: &RequestContext<RoleServer>,
    result_type: &mut Option<ResultType>,
    ttl_ms: &mut Option<u64>,
    cache_scope: &mut Option<CacheScope>,
) {
    let modern = context
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    *result_type = Some(ResultType::COMPLETE);
    *ttl_ms = modern.then_some(0);
    *cache_scope = modern.then_some(CacheScope::Public);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{catalogue, reply::Outcome};
    use rmcp::ServiceExt as _;
    use std::io::Write;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing_subscriber::layer::SubscriberExt as _;

    #[derive(Clone, Default)]
    struct Lines(Arc<Mutex<Vec<u8>>>);

    impl Write for Lines {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("lines").extend_from_slice(data);
            Ok(data.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Counts the `tool` spans made.
    struct ToolSpansMade(Arc<AtomicUsize>);

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToolSpansMade {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if attrs.metadata().name() == "tool" {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A server whose `get_run` logs a warning, called twice by an rmcp client under `filter`:
    /// the lines holding the warning, and how many `tool` spans were made.
    fn two_calls_logged(filter: &str) -> (Vec<String>, usize) {
        let lines = Lines::default();
        let writer = lines.clone();
        let made = Arc::new(AtomicUsize::new(0));
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new(filter))
            .with(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .without_time()
                    .with_writer(move || writer.clone()),
            )
            .with(ToolSpansMade(made.clone()));
        let _default = tracing::subscriber::set_default(subscriber);
        // One thread: the scoped subscriber is this thread's, and rmcp's tasks run on it.
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let state = crate::AppState::without_platform(false);
        let tool = ServerTool::new(&catalogue::GET_RUN, |_, _: serde_json::Value, _| async {
            tracing::warn!("a warning inside the call");
            Ok(Outcome::done("done", ()))
        });
        let server = FactoryServer::new(Arc::new(state), vec![tool], |_| true, "");
        rt.block_on(async move {
            let (a, b) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                if let Ok(running) = server.serve(a).await {
                    let _ = running.waiting().await;
                }
            });
            let client = ().serve(b).await.expect("client connects");
            for _ in 0..2 {
                let params = rmcp::model::CallToolRequestParams::new("get_run");
                let result = client.call_tool(params).await.expect("call");
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
            let _ = client.cancel().await;
        });
        let text = String::from_utf8_lossy(&lines.0.lock().expect("lines")).into_owned();
        let warnings = text
            .lines()
            .filter(|l| l.contains("a warning inside the call"))
            .map(str::to_owned)
            .collect();
        (warnings, made.load(Ordering::Relaxed))
    }

    /// With rmcp's spans left out, as the default log does, both calls enter the one span made
    /// for the tool, and each warning is named by it. With rmcp's spans in, each call makes its
    /// own inside rmcp's, so that its lines keep their parents. (One test, the two filters in
    /// turn: tracing caches a call site's interest, and two subscribers made at once could
    /// leave one with the other's.)
    #[test]
    fn a_calls_warning_names_its_tool_and_keeps_its_parents() {
        let (warnings, made) = two_calls_logged("warn,factory_tools=info,rmcp=warn");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for line in &warnings {
            assert!(line.contains(r#"WARN tool{name="get_run"}: "#), "{line}");
        }
        assert_eq!(made, 1, "the tool's span was not kept for the second call");

        let (warnings, made) = two_calls_logged("info");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for line in &warnings {
            assert!(
                line.contains(r#"serve_inner:tool{name="get_run"}: "#),
                "{line}"
            );
        }
        assert_eq!(made, 2, "a span was kept inside rmcp's");
    }
}

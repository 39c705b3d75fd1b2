//! The rmcp `ServerHandler`: a registry of tool handlers built from the catalogue, filtered by
//! the gate the server was started with. A tool outside the gate is not listed, and calling it is
//! a protocol error ("tool not found"), exactly like a tool that does not exist.

use std::{collections::BTreeMap, future::Future, pin::Pin, sync::Arc};

use rmcp::{
    ErrorData as McpError, RoleServer, ServerHandler,
    model::{
        CacheScope, CallToolRequestParams, CallToolResponse, Implementation, InputResponses,
        JsonObject, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ResultType,
        ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
    },
    service::RequestContext,
};
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use tracing::Instrument;

use crate::{
    catalogue::{self, ToolSpec},
    reply::{self, Outcome, Redact, ToolResult},
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

/// A registered tool: its MCP description and its handler.
pub struct ToolDef<S> {
    pub spec: &'static ToolSpec,
    pub tool: Tool,
    handler: Handler<S>,
}

/// Build a tool from its catalogue record and a typed handler.
///
/// # Panics
/// When `name` is not in the catalogue: a programming error caught by every test run.
pub fn tool<S, A, O, F, Fut>(name: &'static str, f: F) -> ToolDef<S>
where
    S: HasRedactor + Send + Sync + 'static,
    A: DeserializeOwned + JsonSchema + Send + 'static,
    O: Serialize + JsonSchema + Send + 'static,
    F: Fn(Arc<S>, A, Call) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolResult<O>> + Send + 'static,
{
    #[allow(clippy::expect_used)]
    let spec = catalogue::spec(name).expect("every registered tool is in the catalogue");
    let annotations = ToolAnnotations::new()
        .read_only(spec.hints.read_only)
        .destructive(spec.hints.destructive)
        .idempotent(spec.hints.idempotent)
        .open_world(spec.hints.open_world);
    let tool = Tool::new(spec.name, spec.description, schema::input_schema::<A>())
        .with_title(spec.title)
        .with_annotations(annotations)
        .with_raw_output_schema(schema::output_schema::<O>());
    let f = Arc::new(f);
    let handler: Handler<S> = Arc::new(move |state: Arc<S>, args, call| {
        let f = f.clone();
        Box::pin(async move {
            let value = serde_json::Value::Object(args.unwrap_or_default());
            let mut call = call;
            call.arguments = value.clone();
            let parsed: A = match serde_json::from_value(value) {
                Ok(a) => a,
                Err(e) => {
                    let msg = format!(
                        "invalid arguments for {name}: {e}. Check the tool's input schema and call again."
                    );
                    return reply::failure(&msg, state.redactor()).into();
                }
            };
            let redactor_state = state.clone();
            match f(state, parsed, call).await {
                Ok(Outcome::Done { summary, body }) => {
                    reply::success(&summary, &body, redactor_state.redactor()).into()
                }
                Ok(Outcome::Response(r)) => *r,
                Err(e) => reply::failure(&e.message, redactor_state.redactor()).into(),
            }
        })
    });
    ToolDef {
        spec,
        tool,
        handler,
    }
}

/// Access to the redactor of the shared state, so every answer is redacted.
pub trait HasRedactor {
    fn redactor(&self) -> &dyn Redact;
}

/// The MCP server: the shared state and the tools the gate lets through.
pub struct FactoryServer<S> {
    state: Arc<S>,
    tools: Arc<BTreeMap<&'static str, ToolDef<S>>>,
    instructions: &'static str,
}

impl<S> Clone for FactoryServer<S> {
    fn clone(&self) -> Self {
        FactoryServer {
            state: self.state.clone(),
            tools: self.tools.clone(),
            instructions: self.instructions,
        }
    }
}

impl<S: Send + Sync + 'static> FactoryServer<S> {
    /// A server with the tools among `defs` that `enabled` lets through.
    pub fn new(
        state: Arc<S>,
        defs: Vec<ToolDef<S>>,
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
        }
    }

    pub fn state(&self) -> &Arc<S> {
        &self.state
    }

    /// The listed tools, sorted by name.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.values().map(|d| d.tool.clone()).collect()
    }
}

impl<S: Send + Sync + 'static> ServerHandler for FactoryServer<S> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("factory-mcp", env!("CARGO_PKG_VERSION")))
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

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.get(name).map(|d| d.tool.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(def) = self.tools.get(request.name.as_ref()) else {
            return Err(McpError::invalid_params(
                format!("tool not found: {}", request.name),
                None,
            ));
        };
        let span = tracing::info_span!("tool", name = def.spec.name);
        let call = Call {
            arguments: serde_json::Value::Null,
            ctx: context,
            request_state: request.request_state,
            input_responses: request.input_responses,
        };
        Ok((def.handler)(self.state.clone(), request.arguments, call)
            .instrument(span)
            .await)
    }
}

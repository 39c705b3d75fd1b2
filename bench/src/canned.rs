//! An rmcp server with no tools of its own: every tool call is answered with one answer, taken
//! once from the real server, and no platform request is made. Measured beside the real
//! server, it tells rmcp's share of a call (its framing, its per-request task, serialising the
//! answer, and over HTTP its streamable-HTTP service) from the tool's.

use std::sync::Arc;

use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    },
    service::RequestContext,
};

/// The server: the answer, and the tools it lists (the real server's entries, so that the
/// stateless era's header checks find the same schemas).
#[derive(Clone)]
pub struct Canned {
    answer: Arc<CallToolResult>,
    tools: Arc<Vec<Tool>>,
}

impl Canned {
    pub fn new(answer: CallToolResult, tools: Vec<Tool>) -> Canned {
        Canned {
            answer: Arc::new(answer),
            tools: Arc::new(tools),
        }
    }
}

impl ServerHandler for Canned {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("factory-bench-canned", "0.1.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(CallToolResult::clone(&self.answer).into())
    }
}

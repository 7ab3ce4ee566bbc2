//! `/mcp`: the bridge's Model Context Protocol endpoint (DESIGN §8.1), MCP Streamable HTTP from
//! the official Rust SDK (rmcp), nested in the bridge's router. The bridge's own guard (Host,
//! Origin, a bearer token or a signature) runs before rmcp sees a request, and rmcp's Host and
//! Origin checks are on as well. Every tool call goes through the same engine as `POST /exec`:
//! classification, rules, the person's approval, hooks, audit, and the same `formatted` result.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::Bridge;
use crate::protocol::{CallRequest, CallResult, CallStatus, Source};

/// The header that carries an MCP session's id (Streamable HTTP).
pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
/// Open MCP sessions per token. rmcp keeps a session's state until it has been idle for five
/// minutes; without a cap one token could open thousands (a gigabyte in seconds).
pub(crate) const MAX_SESSIONS: usize = 32;
/// How often a long call tells a client that asked for progress how it stands.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);
/// How long rmcp keeps an idle session.
const IDLE: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// Which token (a client's name, or empty for the bridge token) opened each MCP session.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    open: std::collections::HashMap<String, (String, std::time::Instant)>,
}

impl Sessions {
    /// Records a session rmcp just opened for `owner`.
    pub(crate) fn open(&mut self, id: &str, owner: &str) {
        self.expire();
        self.open
            .insert(id.to_owned(), (owner.to_owned(), std::time::Instant::now()));
    }

    /// Whether `id` is a live session of `owner` (and marks it used).
    pub(crate) fn touch(&mut self, id: &str, owner: &str) -> bool {
        self.expire();
        match self.open.get_mut(id) {
            Some((o, used)) if o == owner => {
                *used = std::time::Instant::now();
                true
            }
            _ => false,
        }
    }

    pub(crate) fn forget(&mut self, id: &str) {
        self.open.remove(id);
    }

    /// Whether `owner` may open one more session.
    pub(crate) fn room_for(&mut self, owner: &str) -> bool {
        self.expire();
        self.open.values().filter(|(o, _)| o == owner).count() < MAX_SESSIONS
    }

    fn expire(&mut self) {
        self.open.retain(|_, (_, used)| used.elapsed() < IDLE);
    }
}

/// The `/mcp` service for `bridge`, to nest in its router.
pub(crate) fn service(
    bridge: Arc<Bridge>,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let port = bridge.port();
    // The bridge's guard holds requests to these first; rmcp checks them again. No web page
    // is an allowed origin (a browser extension uses `/exec`, signed), so any request with an
    // Origin is refused here too.
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts([
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ])
        .with_allowed_origins(Vec::<String>::new())
        .enforce_origin_validation()
        .with_cancellation_token(bridge.closing.child_token());
    announce_tool_changes(Arc::clone(&bridge));
    StreamableHttpService::new(
        move || {
            Ok(McpServer {
                bridge: Arc::clone(&bridge),
            })
        },
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Every open MCP session's peer, told when browser tools come or go.
#[derive(Default)]
pub(crate) struct Peers(std::sync::Mutex<Vec<rmcp::Peer<RoleServer>>>);

impl Peers {
    fn add(&self, peer: rmcp::Peer<RoleServer>) {
        let mut peers = self.0.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        peers.push(peer);
    }

    fn all(&self) -> Vec<rmcp::Peer<RoleServer>> {
        let mut peers = self.0.lock().unwrap_or_else(|p| p.into_inner());
        peers.retain(|p| !p.is_transport_closed());
        peers.clone()
    }
}

/// `notifications/tools/list_changed` to every session whenever a browser with browser tools
/// connects or leaves (DESIGN §8.1).
fn announce_tool_changes(bridge: Arc<Bridge>) {
    let mut changes = bridge.browsers().changes();
    let closing = bridge.closing.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                c = changes.changed() => if c.is_err() { return },
                () = closing.cancelled() => return,
            }
            for peer in bridge.mcp_peers.all() {
                if let Err(e) = peer.notify_tool_list_changed().await {
                    tracing::debug!("an MCP session missed tools/list_changed: {e}");
                }
                if let Err(e) = peer.notify_resource_list_changed().await {
                    tracing::debug!("an MCP session missed resources/list_changed: {e}");
                }
            }
        }
    });
}

/// What ground-link says of itself to an MCP client, over `/mcp` and the stdio relay alike.
pub(crate) fn server_info() -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new(
        "ground-link",
        env!("CARGO_PKG_VERSION"),
    ))
    .with_instructions(
        "ground-link runs tools on the person's files inside one sandbox folder. Calls that \
             are not read-only ask the person first; a denied call says why.",
    )
}

/// One MCP connection's handler: a thin adapter over the bridge's engine.
#[derive(Clone)]
pub(crate) struct McpServer {
    bridge: Arc<Bridge>,
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        server_info()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let mut tools: Vec<Tool> = crate::tools::registry().iter().map(tool).collect();
        if self.bridge.browsers().available() {
            tools.extend(crate::tools::browser_registry().iter().map(tool));
            tools.extend(self.bridge.browsers().page_tools().iter().map(page_tool));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn on_initialized(&self, context: rmcp::service::NotificationContext<RoleServer>) {
        self.bridge.mcp_peers.add(context.peer);
    }

    /// The `browser://` resources, while a browser with browser tools on is connected.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let resources = if self.bridge.browsers().available() {
            crate::tools::browser::RESOURCES
                .iter()
                .map(|(uri, name, description)| {
                    let mut r = Resource::new(*uri, *name).with_description(*description);
                    r.mime_type = Some(if uri.ends_with("/dom") {
                        "text/plain".to_string()
                    } else {
                        "application/json".to_string()
                    });
                    r
                })
                .collect()
        } else {
            Vec::new()
        };
        Ok(ListResourcesResult::with_all_items(resources))
    }

    /// A read goes through the engine like a tool call (`read_resource`): decided, asked,
    /// audited, and delimited as page content.
    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.to_string();
        let mut args = serde_json::Map::new();
        args.insert("uri".into(), serde_json::Value::String(uri.clone()));
        let call = call_request("read_resource".into(), args, &context);
        let result = self.run(call, &context).await;
        match result.status {
            CallStatus::Success => Ok(ReadResourceResponse::Complete(ReadResourceResult::new(
                vec![ResourceContents::text(result.formatted, uri)],
            ))),
            _ => Err(McpError::invalid_request(result.output, None)),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        let known = crate::tools::registry()
            .iter()
            .chain(crate::tools::browser_registry())
            .any(|t| t.name.as_str() == name)
            || self
                .bridge
                .browsers()
                .page_tools()
                .iter()
                .any(|t| t.name == name);
        if !known {
            // A protocol error, as MCP asks for an unknown tool (the engine would answer a
            // web chat's unknown tool with a result the model reads).
            return Err(McpError::invalid_params(
                format!(
                    "no tool {name:?}; the tools are listed by tools/list: {}",
                    crate::tools::registry()
                        .iter()
                        .map(|t| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None,
            ));
        }
        let call = call_request(name, request.arguments.unwrap_or_default(), &context);
        let result = self.run(call, &context).await;
        let content = vec![ContentBlock::text(result.formatted.clone())];
        Ok(CallToolResponse::Complete(match result.status {
            CallStatus::Success => CallToolResult::success(content),
            _ => CallToolResult::error(content),
        }))
    }
}

impl McpServer {
    /// Runs one call through the broker, like `POST /exec`: a client's cancellation
    /// (`notifications/cancelled`) withdraws a question still waiting for the person, or kills
    /// a running command's whole tree (the call still ends audited, saying so).
    async fn run(&self, call: CallRequest, context: &RequestContext<RoleServer>) -> CallResult {
        let id = call.call_id.clone().unwrap_or_default();
        // The same cap as `POST /exec`: a flood of calls waiting for the person is refused.
        let Some(_slot) = super::InFlight::take(&self.bridge.in_flight_of(call.client.as_deref()))
        else {
            return crate::reply::not_run_result(
                &id,
                &call.name,
                &format!(
                    "{} calls are still running or waiting for approval; wait for some to finish",
                    super::MAX_IN_FLIGHT
                ),
            );
        };
        let broker = Arc::clone(self.bridge.broker());
        let completion = match broker.begin(&id) {
            Ok(c) => c,
            Err(e) => return crate::reply::not_run_result(&id, &call.name, &e.to_string()),
        };
        let engine = Arc::clone(self.bridge.engine());
        let cancel = completion.cancellation();
        // A client that sent a progress token hears, every PROGRESS_EVERY, that the call is
        // still waiting for the person or still running (DESIGN §8.1).
        let progress = context.meta.get_progress_token().map(|token| {
            let (peer, broker, id) = (context.peer.clone(), Arc::clone(&broker), id.clone());
            tokio::spawn(async move {
                let started = std::time::Instant::now();
                loop {
                    tokio::time::sleep(PROGRESS_EVERY).await;
                    let message = match broker.phase(&id) {
                        Some(super::broker::Phase::WaitingForApproval) => {
                            "waiting for the person's answer in ground-link"
                        }
                        Some(super::broker::Phase::Running) => "running",
                        _ => return,
                    };
                    let note = rmcp::model::ProgressNotificationParam::new(
                        token.clone(),
                        started.elapsed().as_secs_f64(),
                    )
                    .with_message(message);
                    if peer.notify_progress(note).await.is_err() {
                        return;
                    }
                }
            })
        });
        // The call runs here, in the task rmcp gives each request: rmcp never aborts that task
        // (a client's cancellation is `context.ct`), so the call always runs to its end and is
        // audited, and no task of our own is spawned and woken for it.
        let run = engine.call_until(call, Source::Mcp, cancel);
        tokio::pin!(run);
        let result = tokio::select! {
            r = &mut run => r,
            () = context.ct.cancelled() => {
                broker.kill(&id);
                run.await
            }
        };
        if let Some(p) = progress {
            p.abort();
        }
        completion.finish(result.clone());
        broker.forget(&id);
        result
    }
}

/// A call from this MCP session, named by its client's token, with a fresh id.
fn call_request(
    name: String,
    args: serde_json::Map<String, serde_json::Value>,
    context: &RequestContext<RoleServer>,
) -> CallRequest {
    CallRequest {
        name,
        args,
        reason: None,
        session: Some(session_of(context)),
        call_id: Some(crate::engine::new_call_id()),
        wait_ms: None,
        reply: None,
        provenance: None,
        client: client_of(context),
    }
}

/// Whose "allow for this conversation" a call can use: its MCP session, or, for a stateless
/// call, its client (every stateless call of one token shares it).
fn session_of(context: &RequestContext<RoleServer>) -> String {
    let id = context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.headers.get(SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 128);
    // The client's name is part of the key, so a session id another client presents (or
    // makes up) never reaches this client's grants.
    let owner = client_of(context).unwrap_or_else(|| "bridge".to_owned());
    match id {
        Some(id) => format!("mcp:{owner}:{id}"),
        None => format!("mcp:{owner}"),
    }
}

/// The named client the bridge's guard authenticated, if the token was one.
fn client_of(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<super::ClientName>())
        .and_then(|c| c.0.clone())
}

/// A page's tool as MCP lists it: its words delimited as the page's, never ground-link's; hints
/// that could make a client skip its own confirmation are not passed on (they only raise risk).
fn page_tool(t: &crate::tools::browser::PageTool) -> Tool {
    let description = t.described();
    let mut schema = t.input_schema.clone();
    if schema.get("type").is_none() {
        schema.insert("type".into(), serde_json::Value::String("object".into()));
    }
    let mut annotations = ToolAnnotations::new()
        .read_only(false)
        .destructive(t.annotations.consequential_hint);
    annotations.open_world_hint = Some(true);
    Tool::new(t.name.clone(), description, Arc::new(schema)).with_annotations(annotations)
}

/// A sandbox tool as MCP lists it: the same schema and hints as `GET /tools`.
fn tool(spec: &crate::tools::ToolSpec) -> Tool {
    let schema = match &spec.input_schema {
        serde_json::Value::Object(map) => map.clone(),
        _ => serde_json::Map::new(),
    };
    let mut annotations = ToolAnnotations::new()
        .read_only(spec.annotations.read_only_hint)
        .destructive(spec.annotations.destructive_hint);
    annotations.idempotent_hint = Some(spec.annotations.idempotent_hint);
    annotations.open_world_hint = Some(spec.annotations.open_world_hint);
    Tool::new(
        spec.name.as_str(),
        spec.description.clone(),
        Arc::new(schema),
    )
    .with_annotations(annotations)
}

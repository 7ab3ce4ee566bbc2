//! `ground-link mcp`: a stdio MCP server for clients that only speak stdio (Claude Desktop,
//! Cursor, Codex CLI configurations), relaying every request to the running bridge's `/mcp`
//! (DESIGN §8.1). One engine, one audit log: the relay decides nothing itself.
//!
//! When no bridge answers, the relay still speaks MCP on stdio, so the client shows why: every
//! request fails with an error that says to start ground-link, and stderr says the same.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, ErrorCode, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tokio::sync::Mutex;

/// Where the bridge is and how to authenticate to it.
#[derive(Clone)]
pub struct RelayTarget {
    pub port: u16,
    /// A named client token (`ground-link token add NAME`) or the bridge token.
    pub token: String,
}

/// Serves MCP on stdin/stdout until the client closes it.
pub async fn serve_stdio(target: RelayTarget) -> Result<(), String> {
    let relay = Relay {
        target,
        upstream: Arc::new(Mutex::new(None)),
    };
    let running = relay
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("the MCP client on stdin did not start a session: {e}"))?;
    running
        .waiting()
        .await
        .map_err(|e| format!("the relay stopped: {e}"))?;
    Ok(())
}

#[derive(Clone)]
struct Relay {
    target: RelayTarget,
    /// The session with the bridge, opened on first use and again after it fails.
    upstream: Arc<Mutex<Option<RunningService<RoleClient, ClientConfig>>>>,
}

impl Relay {
    /// The bridge's peer, connecting (again) when there is none.
    async fn peer(&self) -> Result<Peer<RoleClient>, McpError> {
        let mut slot = self.upstream.lock().await;
        if let Some(running) = slot.as_ref() {
            if !running.is_closed() {
                return Ok(running.peer().clone());
            }
        }
        // The token goes only to a listener of this user's: another user's program squatting
        // on the port (before the app starts, or while it is down) must not receive it.
        let port = self.target.port;
        let me = rustix::process::getuid().as_raw();
        match listener_uid(port) {
            Some(uid) if uid == me => {}
            Some(uid) => {
                let why = format!(
                    "port {port} is held by another user's program (uid {uid}), not ground-link; \
                     the token was not sent. Stop that program, or run ground-link on another \
                     port and pass --port"
                );
                tracing::error!("ground-link mcp: {why}");
                return Err(McpError::new(ErrorCode::INTERNAL_ERROR, why, None));
            }
            None => {}
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url.clone())
                .auth_header(self.target.token.clone()),
        );
        match ClientConfig::default().serve(transport).await {
            Ok(running) => {
                let peer = running.peer().clone();
                *slot = Some(running);
                Ok(peer)
            }
            Err(e) => {
                let why = format!(
                    "ground-link is not answering at {url} ({e}); start the tray app, or \
                     `ground-link serve --dir <folder> --port {}`, and check the token \
                     (`ground-link token add <name>`)",
                    self.target.port
                );
                tracing::error!("ground-link mcp: {why}");
                Err(McpError::new(ErrorCode::INTERNAL_ERROR, why, None))
            }
        }
    }

    /// A failed request: the session is dropped so the next request connects afresh (the
    /// bridge may have restarted).
    async fn failed(&self, e: impl std::fmt::Display) -> McpError {
        self.upstream.lock().await.take();
        let why = format!("ground-link's bridge failed the request: {e}");
        tracing::error!("ground-link mcp: {why}");
        McpError::new(ErrorCode::INTERNAL_ERROR, why, None)
    }
}

impl ServerHandler for Relay {
    fn get_info(&self) -> ServerConfig {
        super::mcp::server_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let peer = self.peer().await?;
        match peer.list_tools(request).await {
            Ok(list) => Ok(list),
            Err(e) => Err(self.failed(e).await),
        }
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let peer = self.peer().await?;
        // The client's cancellation drops the upstream request, which cancels it at the
        // bridge too (a question still waiting for the person is withdrawn).
        tokio::select! {
            r = peer.call_tool(request) => match r {
                Ok(result) => Ok(CallToolResponse::Complete(result)),
                Err(e) => Err(self.failed(e).await),
            },
            () = context.ct.cancelled() => Err(McpError::new(
                ErrorCode::INTERNAL_ERROR,
                "cancelled by the client",
                None,
            )),
        }
    }
}

/// The uid owning the socket that listens on 127.0.0.1:`port`, from `/proc/net/tcp` (each line:
/// local address as hex `0100007F:PORT`, state `0A` for LISTEN, then the owner's uid). `None`
/// when nothing listens there.
pub fn listener_uid(port: u16) -> Option<u32> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let wanted = [
        format!("0100007F:{port:04X}"),
        format!("00000000:{port:04X}"),
    ];
    table.lines().skip(1).find_map(|line| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let (local, state, uid) = (cols.get(1)?, cols.get(3)?, cols.get(7)?);
        (wanted.iter().any(|w| w == local) && *state == "0A")
            .then(|| uid.parse().ok())
            .flatten()
    })
}

//! `ground-link mcp`: a stdio MCP server for clients that only speak stdio (Claude Desktop,
//! Cursor, Codex CLI configurations), relaying every request to the running bridge's `/mcp`
//! (DESIGN §8.1). One engine, one audit log: the relay decides nothing itself.
//!
//! When no bridge answers, the relay still speaks MCP on stdio, so the client shows why: every
//! request fails with an error that says to start ground-link, and stderr says the same.
//!
//! The client token never crosses the wire: every request to `/mcp` is signed with the client's
//! key the way the extension signs ([`super::sign`]), and an answer without the bridge's MAC over
//! it is an error, never a result. So a program squatting on the port (while the app is down,
//! say) gets nothing it can replay and cannot answer in the bridge's name. A streamed answer's
//! events are not signed one by one: its MAC covers its status only (docs/security.md).

use std::collections::HashMap;
use std::sync::Arc;

use mcp_http::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue};
use mcp_http::{Method, StatusCode};
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientConfig, ErrorCode, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
    StreamableHttpPostResponse,
};
use tokio::sync::Mutex;

use super::{sign, single};

/// Where the bridge is and how to authenticate to it.
#[derive(Clone)]
pub struct RelayTarget {
    pub port: u16,
    /// A named client token (`ground-link token add NAME`). It never leaves this process: the
    /// requests are signed with its key ([`super::clients::signing_key`]).
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
        // Requests go only to a listener of this user's: another user's program squatting on
        // the port (before the app starts, or while it is down) must not even read the calls'
        // arguments. (The token itself never travels: the requests are signed.)
        let port = self.target.port;
        let me = rustix::process::getuid().as_raw();
        match listener_uid(port) {
            Some(uid) if uid == me => {}
            Some(uid) => {
                let why = format!(
                    "port {port} is held by another user's program (uid {uid}), not ground-link; \
                     nothing was sent to it. Stop that program, or run ground-link on another \
                     port and pass --port"
                );
                tracing::error!("ground-link mcp: {why}");
                return Err(McpError::new(ErrorCode::INTERNAL_ERROR, why, None));
            }
            None => {}
        }
        let url = format!("http://127.0.0.1:{port}/mcp");
        let client = SigningClient::new(&self.target.token).map_err(|e| {
            McpError::new(
                ErrorCode::INTERNAL_ERROR,
                format!("cannot make an HTTP client: {e}"),
                None,
            )
        })?;
        let transport = StreamableHttpClientTransport::with_client(
            client,
            StreamableHttpClientTransportConfig::with_uri(url.clone()),
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

/// Answers larger than this are refused unread (a tool's result is at most a few MiB).
const MAX_ANSWER: usize = 64 * 1024 * 1024;
/// The header of an MCP session's id.
const SESSION: &str = "mcp-session-id";

/// rmcp's Streamable HTTP client for the relay: each request (POST messages, GET stream,
/// DELETE session) is signed with the client's key over exactly the bytes sent, no
/// `Authorization` header is ever sent, and each answer is checked against the bridge's MAC
/// before rmcp sees it.
#[derive(Clone)]
pub struct SigningClient {
    http: mcp_http::Client,
    key: Arc<[u8]>,
}

#[derive(Debug, thiserror::Error)]
pub enum RelayHttpError {
    #[error("{0}")]
    Http(#[from] mcp_http::Error),
    #[error("cannot make a nonce to sign with: {0}")]
    Random(String),
    #[error("{0:?} is not an http://host:port URL")]
    Url(String),
    #[error(
        "the answer from {host} (HTTP {status}) does not carry ground-link's signature for this \
         request, so something other than ground-link may hold the port; it was not used{said}"
    )]
    Unsigned {
        host: String,
        status: u16,
        /// What a refusal said, marked as unverified (never for a success: that is not shown).
        said: String,
    },
    #[error("the answer from {0} is larger than {MAX_ANSWER} bytes")]
    TooLarge(String),
}

impl From<RelayHttpError> for StreamableHttpError<RelayHttpError> {
    fn from(e: RelayHttpError) -> Self {
        StreamableHttpError::Client(e)
    }
}

type RelayResult<T> = Result<T, StreamableHttpError<RelayHttpError>>;

/// One signed request on its way back: the answer, the nonce its MAC covers, the host signed.
struct Sent {
    res: mcp_http::Response,
    nonce: String,
    host: String,
}

impl SigningClient {
    /// A client signing with `token`'s key ([`super::clients::signing_key`]).
    pub fn new(token: &str) -> Result<SigningClient, RelayHttpError> {
        // A redirect would take the signed request elsewhere; the bridge never sends one.
        let http = mcp_http::Client::builder()
            .redirect(mcp_http::redirect::Policy::none())
            .no_proxy()
            .build()?;
        Ok(SigningClient {
            http,
            key: super::clients::signing_key(token).into_bytes().into(),
        })
    }

    /// Sends one request signed over its method, path and query, `Host`, a fresh nonce, the
    /// time and the SHA-256 of `body`, which is sent as is.
    async fn send(
        &self,
        method: Method,
        uri: &str,
        body: Vec<u8>,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> RelayResult<Sent> {
        let url = mcp_http::Url::parse(uri).map_err(|_| RelayHttpError::Url(uri.to_owned()))?;
        let (Some(name), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return Err(RelayHttpError::Url(uri.to_owned()).into());
        };
        let host = format!("{name}:{port}");
        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        let signed = sign::sign_request(&self.key, method.as_str(), &path, &host, &body)
            .map_err(|e| RelayHttpError::Random(e.to_string()))?;
        let mut request = self.http.request(method, url);
        for (name, value) in headers {
            // Whatever rmcp adds (the protocol version), never a credential or a signature of
            // its own.
            if name == mcp_http::header::AUTHORIZATION
                || name.as_str().starts_with("x-ground-link-")
                || name == HOST
            {
                continue;
            }
            request = request.header(name, value);
        }
        let res = request
            .header(HOST, &host)
            .header(sign::HEADER_NONCE, &signed.nonce)
            .header(sign::HEADER_TIME, signed.time_ms.to_string())
            .header(sign::HEADER_SIGNATURE, &signed.signature)
            .body(body)
            .send()
            .await
            .map_err(RelayHttpError::from)?;
        Ok(Sent {
            res,
            nonce: signed.nonce,
            host,
        })
    }

    fn signed_with(
        &self,
        headers: &HeaderMap,
        nonce: &str,
        status: StatusCode,
        digest: &str,
    ) -> bool {
        let expected = sign::answer_mac(&self.key, nonce, status.as_u16(), digest);
        single(headers, sign::HEADER_ANSWER).is_some_and(|mac| sign::same(&expected, mac))
    }

    /// A streamed answer: its MAC covers the request's nonce and its status (not its events).
    fn check_stream(&self, sent: &Sent) -> RelayResult<()> {
        let status = sent.res.status();
        if self.signed_with(sent.res.headers(), &sent.nonce, status, sign::STREAM_BODY) {
            return Ok(());
        }
        Err(RelayHttpError::Unsigned {
            host: sent.host.clone(),
            status: status.as_u16(),
            said: String::new(),
        }
        .into())
    }

    /// A whole answer, read and checked against its MAC: its status and body when it holds.
    /// An answer that does not hold is an error; a refusal's words are passed on, marked as
    /// unverified, so the person still learns why (a revoked token, a stale request).
    async fn read_checked(&self, sent: Sent) -> RelayResult<(StatusCode, Vec<u8>)> {
        let Sent {
            mut res,
            nonce,
            host,
        } = sent;
        let status = res.status();
        let headers = res.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = res.chunk().await.map_err(RelayHttpError::from)? {
            if body.len() + chunk.len() > MAX_ANSWER {
                return Err(RelayHttpError::TooLarge(host).into());
            }
            body.extend_from_slice(&chunk);
        }
        if self.signed_with(&headers, &nonce, status, &sign::body_digest(&body)) {
            return Ok((status, body));
        }
        let said = if status.is_success() {
            String::new()
        } else {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            format!("; it said (unverified): {text}")
        };
        Err(RelayHttpError::Unsigned {
            host,
            status: status.as_u16(),
            said,
        }
        .into())
    }
}

fn is_stream(res: &mcp_http::Response) -> bool {
    res.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"))
}

fn session_of(res: &mcp_http::Response) -> Option<String> {
    res.headers()
        .get(SESSION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

fn unexpected(status: StatusCode, body: &[u8]) -> StreamableHttpError<RelayHttpError> {
    let text: String = String::from_utf8_lossy(body).chars().take(500).collect();
    StreamableHttpError::UnexpectedServerResponse(format!("HTTP {status}: {text}").into())
}

fn header(value: &str) -> RelayResult<HeaderValue> {
    HeaderValue::from_str(value).map_err(|_| {
        StreamableHttpError::UnexpectedServerResponse(
            format!("{value:?} cannot be sent in a header").into(),
        )
    })
}

fn sse(
    res: mcp_http::Response,
) -> futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>> {
    Box::pin(sse_stream::SseStream::from_bytes_stream(res.bytes_stream()))
}

impl StreamableHttpClient for SigningClient {
    type Error = RelayHttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> RelayResult<StreamableHttpPostResponse> {
        // The bytes signed are the bytes sent.
        let body = serde_json::to_vec(&message)?;
        let awaits_no_response = !matches!(message, ClientJsonRpcMessage::Request(_));
        let mut headers = custom_headers;
        headers.insert(
            ACCEPT,
            HeaderValue::from_static("text/event-stream, application/json"),
        );
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if let Some(id) = &session_id {
            headers.insert(HeaderName::from_static(SESSION), header(id)?);
        }
        let sent = self.send(Method::POST, &uri, body, headers).await?;
        let session = session_of(&sent.res);
        if sent.res.status().is_success() && is_stream(&sent.res) {
            self.check_stream(&sent)?;
            return Ok(StreamableHttpPostResponse::Sse(sse(sent.res), session));
        }
        let (status, body) = self.read_checked(sent).await?;
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && session_id.is_some() {
            return Err(StreamableHttpError::SessionExpired);
        }
        match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(m) if status.is_success() => Ok(StreamableHttpPostResponse::Json(m, session)),
            Ok(m @ JsonRpcMessage::Error(_)) => Ok(StreamableHttpPostResponse::Json(m, session)),
            _ if status.is_success() && awaits_no_response => {
                Ok(StreamableHttpPostResponse::Accepted)
            }
            _ => Err(unexpected(status, &body)),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> RelayResult<()> {
        let mut headers = custom_headers;
        headers.insert(HeaderName::from_static(SESSION), header(&session_id)?);
        let sent = self.send(Method::DELETE, &uri, Vec::new(), headers).await?;
        let (status, body) = self.read_checked(sent).await?;
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            return Ok(());
        }
        Err(unexpected(status, &body))
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        _auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> RelayResult<futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, SseError>>>
    {
        let mut headers = custom_headers;
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(id) = &session_id {
            headers.insert(HeaderName::from_static(SESSION), header(id)?);
        }
        if let Some(id) = &last_event_id {
            headers.insert(HeaderName::from_static("last-event-id"), header(id)?);
        }
        let sent = self.send(Method::GET, &uri, Vec::new(), headers).await?;
        if sent.res.status().is_success() && is_stream(&sent.res) {
            self.check_stream(&sent)?;
            return Ok(sse(sent.res));
        }
        let (status, body) = self.read_checked(sent).await?;
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        Err(unexpected(status, &body))
    }
}

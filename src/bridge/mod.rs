//! The bridge (DESIGN §6): loopback HTTP between the browser extension and the engine.
//!
//! Guarantees, each with an attack test in `tests/bridge.rs`:
//! - bound to `127.0.0.1` only; there is no option to bind elsewhere;
//! - every route checks Host (DNS rebinding) and Origin (web pages) before anything else, and no
//!   response ever carries CORS headers, so a web page can neither call nor read the bridge;
//! - every route but `/health` needs proof of the pairing key: a signed request ([`sign`]: the
//!   key itself never crosses the wire, a replayed or relayed request is refused, and the answer
//!   is signed back), or — for clients outside a browser only — the bearer token, compared in
//!   constant time; a token in the query string, Basic auth or a prefix of the token is refused;
//! - a named client's token opens `/mcp` only, as a bearer token or as the key of a signed
//!   request (`ground-link mcp`), and either way the calls carry the client's name;
//! - bodies over [`MAX_BODY`] are refused with 413 before they are buffered;
//! - floods are bounded: [`MAX_IN_FLIGHT`] unfinished calls per token (then 429),
//!   [`MAX_STREAMS`] `/events` streams per token (a new one ends the oldest), and at most
//!   [`crate::reply::MAX_CALLS_PER_REPLY`] calls of one reply run;
//! - nothing here answers an approval: the broker asks the host's own approver.

pub mod broker;
pub mod browser;
pub mod clients;
mod mcp;
pub mod native;
pub mod panel;
pub mod relay;
pub mod sign;
pub mod token;
pub mod wire;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::json;
use tokio_stream::wrappers::BroadcastStream;

use crate::bridge::broker::{Broker, Phase};
use crate::bridge::token::Token;
use crate::engine::{Engine, new_call_id, parse_request};
use crate::protocol::{CallResult, Language, Source};
use crate::reply::ReplyLedger;

/// Largest request body: a 16 MiB file plus JSON escaping.
pub const MAX_BODY: usize = 40 * 1024 * 1024;
/// `POST /exec` waits this long by default before answering 202 (a service worker dies at 30 s).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(20);
/// Long-poll limit for `GET /calls/{id}`.
pub const MAX_POLL: Duration = Duration::from_secs(20);
/// Calls of one token not finished yet (running or waiting for the person); more is 429. One
/// reply runs its calls one by one, so this only bites a client that floods.
pub const MAX_IN_FLIGHT: usize = 64;
/// Open `/events` streams per token. A service worker that Chrome restarted leaves its old
/// stream behind; the newest ones are the live ones, so a new stream ends the oldest.
pub const MAX_STREAMS: usize = 8;
/// Replies whose call counts and denials the bridge remembers (the oldest is forgotten first).
const MAX_REPLIES: usize = 1024;

pub struct Bridge {
    engine: Arc<Engine>,
    broker: Arc<Broker>,
    token: Token,
    port: u16,
    paired: Mutex<BTreeMap<String, u64>>,
    /// Unix seconds of the last authenticated request (the tray's "connected").
    last_seen: AtomicU64,
    /// `/events` streams open now (each one was authenticated when it opened).
    listeners: Arc<AtomicUsize>,
    /// Open `/events` streams, oldest first, each with the switch that ends it.
    streams: Mutex<VecDeque<(u64, tokio_util::sync::CancellationToken)>>,
    next_stream: AtomicU64,
    /// Calls not finished yet, per token: the pairing key's (the extension, over HTTP or native
    /// messaging) under `None`, each named client's under its name. A client that floods cannot
    /// make the extension's calls 429, nor another client's.
    in_flight: Mutex<HashMap<Option<String>, Arc<AtomicUsize>>>,
    /// Per reply id: how many of its calls ran, and whether the person stopped the rest.
    replies: Mutex<Replies>,
    /// Nonces of signed requests within the freshness window.
    nonces: sign::NonceBook,
    /// Unix ms just before the port was bound. A signed request stamped earlier was made for
    /// whatever listened before — a squatter that captured it, say — and is refused, so the
    /// nonces forgotten by a restart cannot be replayed.
    started_ms: u64,
    /// Cancelled when the bridge starts shutting down: event streams end then, so a client
    /// reconnects to whatever serves next instead of holding a dead stream (and the server
    /// does not wait for it).
    closing: tokio_util::sync::CancellationToken,
    /// Named client tokens (`ground-link token add NAME`), read again when their file changes.
    clients: clients::Clients,
    /// Which token opened each MCP session, and when each was last used.
    mcp_sessions: Mutex<mcp::Sessions>,
    /// The extension's last adapter problems per chat site (`POST /adapter-health`).
    adapters: Mutex<BTreeMap<String, wire::AdapterProblem>>,
    /// Browsers connected over native messaging, which run the browser tools.
    browsers: Arc<browser::Browsers>,
    /// Open MCP sessions, told when the tool list changes.
    mcp_peers: mcp::Peers,
}

/// At most this many sites are remembered, each with at most this many problems of at most
/// this many characters: a report is a few sentences, not a place to store data.
const MAX_ADAPTER_SITES: usize = 32;
const MAX_ADAPTER_PROBLEMS: usize = 8;
const MAX_ADAPTER_PROBLEM_CHARS: usize = 300;

/// The call's id: the client's (at most 128 characters) or a fresh one, written into `req`.
/// `POST /exec` and native messaging take calls the same way.
fn assign_call_id(req: &mut crate::protocol::CallRequest) -> Result<String, String> {
    let id = req
        .call_id
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(new_call_id);
    if id.len() > 128 {
        return Err("callId is longer than 128 characters".to_owned());
    }
    req.call_id = Some(id.clone());
    Ok(id)
}

impl Bridge {
    /// Whether one more call of model reply `reply` may run (DESIGN §5.2: at most 20 of one
    /// reply, none after the person denied one of its calls); `Err` says why not.
    fn admit_reply(&self, reply: Option<&str>) -> Result<(), String> {
        match reply {
            Some(r) => self
                .replies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .admit(r),
            None => Ok(()),
        }
    }

    /// Counts a finished call against its reply (a denial stops the rest of the reply).
    fn record_reply(&self, reply: Option<&str>, name: &str, result: &CallResult) {
        if let Some(r) = reply {
            self.replies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .record(r, name, result);
        }
    }

    /// The sites whose adapter the extension last found broken, with what it found (the tray's
    /// tooltip and the authenticated `/health` show them).
    pub fn adapter_problems(&self) -> Vec<wire::AdapterProblem> {
        self.adapters
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Keeps a site's report (an empty one clears the site), after checking its shape.
    pub fn record_adapter_report(
        &self,
        report: wire::AdapterReport,
        at_ms: u64,
    ) -> Result<(), String> {
        let site_ok = (1..=32).contains(&report.site.len())
            && report.site.starts_with(|c: char| c.is_ascii_lowercase())
            && report
                .site
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !site_ok {
            return Err(format!(
                "site {:?} is not an adapter id; use lowercase letters, digits and '-', e.g. deepseek",
                report.site
            ));
        }
        if report.problems.len() > MAX_ADAPTER_PROBLEMS {
            return Err(format!(
                "{} problems for {}; send at most {MAX_ADAPTER_PROBLEMS}",
                report.problems.len(),
                report.site
            ));
        }
        for p in &report.problems {
            if p.is_empty()
                || p.chars().count() > MAX_ADAPTER_PROBLEM_CHARS
                || p.chars().any(char::is_control)
            {
                return Err(format!(
                    "a problem for {} must be one line of 1 to {MAX_ADAPTER_PROBLEM_CHARS} characters",
                    report.site
                ));
            }
        }
        let mut map = self.adapters.lock().unwrap_or_else(|p| p.into_inner());
        if report.problems.is_empty() {
            map.remove(&report.site);
            return Ok(());
        }
        if !map.contains_key(&report.site) && map.len() >= MAX_ADAPTER_SITES {
            // the oldest report makes room
            if let Some(oldest) = map.values().min_by_key(|p| p.at_ms).map(|p| p.site.clone()) {
                map.remove(&oldest);
            }
        }
        map.insert(
            report.site.clone(),
            wire::AdapterProblem {
                site: report.site,
                problems: report.problems,
                at_ms,
            },
        );
        Ok(())
    }

    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
    }

    /// The browsers connected over native messaging.
    pub fn browsers(&self) -> &Arc<browser::Browsers> {
        &self.browsers
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// Extension origins that presented the token, with the last time they did.
    pub fn paired(&self) -> BTreeMap<String, u64> {
        self.paired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn last_seen(&self) -> u64 {
        self.last_seen.load(Ordering::Relaxed)
    }

    /// How many `/events` streams are open.
    pub fn listeners(&self) -> usize {
        self.listeners.load(Ordering::Relaxed)
    }

    /// Whether an extension is connected: it holds `/events` open, or it made an
    /// authenticated request within `window` (DESIGN §7: the tray's state).
    pub fn connected(&self, window: Duration) -> bool {
        if self.listeners() > 0 {
            return true;
        }
        let seen = self.last_seen();
        seen != 0 && unix_now().saturating_sub(seen) <= window.as_secs()
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A bound, not yet serving, bridge.
pub struct Bound {
    pub bridge: Arc<Bridge>,
    listener: tokio::net::TcpListener,
}

impl Bound {
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::LOCALHOST, self.bridge.port))
    }

    /// Serve until `shutdown` resolves; then deny what is pending, finish what runs, return.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let bridge = Arc::clone(&self.bridge);
        let app = router(Arc::clone(&self.bridge));
        let stop = tokio_util::sync::CancellationToken::new();
        let stop_serving = stop.clone();
        let broker = Arc::clone(&bridge.broker);
        let closing = bridge.closing.clone();
        tokio::spawn(async move {
            shutdown.await;
            closing.cancel();
            // Pending approvals end as denied (and are audited) before the server stops.
            broker.shut_down();
            let start = std::time::Instant::now();
            while !broker.idle() && start.elapsed() < Duration::from_secs(10) {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            stop_serving.cancel();
        });
        use axum::serve::ListenerExt;
        // Small JSON answers must not wait for Nagle's algorithm and a delayed ACK (~40 ms).
        let listener = self.listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source}; is another ground-link running? pick another --port"
    )]
    Bind { port: u16, source: std::io::Error },
}

/// Bind `127.0.0.1:port` (`0` picks a free port). Loopback only, by construction.
pub async fn bind(
    engine: Arc<Engine>,
    broker: Arc<Broker>,
    token: Token,
    port: u16,
) -> Result<Bound, BridgeError> {
    let started_ms = sign::now_ms();
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|source| BridgeError::Bind { port, source })?;
    let port = listener
        .local_addr()
        .map_err(|source| BridgeError::Bind { port, source })?
        .port();
    let engine_paths = engine.config().paths.clone();
    let bridge = Arc::new(Bridge {
        engine,
        broker,
        token,
        port,
        paired: Mutex::new(BTreeMap::new()),
        last_seen: AtomicU64::new(0),
        listeners: Arc::new(AtomicUsize::new(0)),
        streams: Mutex::new(VecDeque::new()),
        next_stream: AtomicU64::new(0),
        in_flight: Mutex::new(HashMap::new()),
        replies: Mutex::new(Replies::default()),
        nonces: sign::NonceBook::default(),
        started_ms,
        closing: tokio_util::sync::CancellationToken::new(),
        clients: clients::Clients::new(clients::default_location(&engine_paths)),
        mcp_sessions: Mutex::new(mcp::Sessions::default()),
        adapters: Mutex::new(BTreeMap::new()),
        browsers: Arc::new(browser::Browsers::default()),
        mcp_peers: mcp::Peers::default(),
    });
    bridge
        .engine
        .set_browser(Arc::clone(&bridge.browsers) as Arc<dyn crate::engine::BrowserLink>);
    Ok(Bound { bridge, listener })
}

pub fn router(bridge: Arc<Bridge>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/exec", axum::routing::post(exec))
        .route("/calls/{id}", get(poll).delete(cancel))
        .route("/tools", get(tools))
        .route("/prompt", get(prompt))
        .route("/events", get(events))
        .route("/adapter-health", axum::routing::post(adapter_health))
        .route("/panel-calls", axum::routing::post(panel_calls))
        .route("/invalid-call", axum::routing::post(invalid_call))
        .nest_service("/mcp", mcp::service(Arc::clone(&bridge)))
        .fallback(not_found)
        .layer(DefaultBodyLimit::disable())
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&bridge), guard))
        .with_state(bridge)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (
        status,
        axum::Json(wire::ErrorBody {
            error: message.into(),
        }),
    )
        .into_response()
}

/// Whether the request proved the pairing key; set by [`guard`].
#[derive(Clone, Copy)]
struct Authed(bool);

/// The named client a request authenticated as (`None`: the bridge token or the extension).
#[derive(Clone, Debug)]
pub(crate) struct ClientName(pub(crate) Option<String>);

/// The nonce of a request that was signed and checked; its answer is signed over it.
#[derive(Clone)]
struct SignedNonce(String);

fn host_ok(headers: &HeaderMap, port: u16) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return false;
    };
    [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ]
    .iter()
    .any(|h| h.eq_ignore_ascii_case(host))
}

/// `chrome-extension://` plus a 32-letter id from a–p; nothing else.
fn extension_origin(origin: &str) -> bool {
    origin
        .strip_prefix("chrome-extension://")
        .is_some_and(|id| id.len() == 32 && id.bytes().all(|b| (b'a'..=b'p').contains(&b)))
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None; // two Authorization headers: ambiguous, refuse
    }
    first.to_str().ok()?.strip_prefix("Bearer ")
}

/// The one value of a header, or `None` when it is absent, repeated or not text.
pub(crate) fn single<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    let first = values.next()?;
    if values.next().is_some() {
        return None;
    }
    first.to_str().ok()
}

/// Whose key a signed request was made with; its answer is signed with the same key.
struct Signer {
    nonce: String,
    key: Vec<u8>,
    /// The named client whose key it was (`None`: the pairing key).
    client: Option<String>,
}

/// Check a signed request: its MAC first (so nobody without the key can fill the nonce book),
/// then its freshness and its nonce. The body is read here because its digest is signed; it is
/// put back for the handler. The pairing key signs for every route; a named client's key only
/// for `/mcp`, as its bearer token opens only `/mcp`.
async fn verify_signed(bridge: &Bridge, req: Request) -> Result<(Request, Signer), Response> {
    let unauthorized = |e: sign::SignError| error(StatusCode::UNAUTHORIZED, e.to_string());
    let headers = req.headers();
    let field = |name: &'static str| single(headers, name).ok_or(sign::SignError::Missing(name));
    let nonce = field(sign::HEADER_NONCE).map_err(unauthorized)?.to_string();
    let time = field(sign::HEADER_TIME).map_err(unauthorized)?;
    let signature = field(sign::HEADER_SIGNATURE)
        .map_err(unauthorized)?
        .to_string();
    sign::check_nonce(&nonce).map_err(unauthorized)?;
    sign::check_signature(&signature).map_err(unauthorized)?;
    let time_ms = sign::parse_time(time).map_err(unauthorized)?;
    if headers.contains_key(header::AUTHORIZATION) {
        // Two proofs at once: refuse rather than pick one.
        return Err(error(
            StatusCode::UNAUTHORIZED,
            "send either a signed request or a bearer token, not both",
        ));
    }
    // `host_ok` already held, so this is our own port in one of its spellings.
    let host = single(headers, header::HOST.as_str())
        .unwrap_or_default()
        .to_string();
    let method = req.method().as_str().to_string();
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| req.uri().path().to_string());
    // A client key is for an MCP client outside a browser, as its bearer token is: never from
    // an extension's origin (which would be recorded as paired).
    let client_keys = (req.uri().path() == "/mcp" || req.uri().path().starts_with("/mcp/"))
        && !req.headers().contains_key(header::ORIGIN);
    let (parts, body) = req.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| {
        error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("the body is larger than {MAX_BODY} bytes"),
        )
    })?;
    let digest = sign::body_digest(&body);
    let covered = sign::RequestParts {
        method: &method,
        path: &path,
        host: &host,
        nonce: &nonce,
        time_ms,
        body_digest: &digest,
    };
    let pairing = bridge.token.secret().as_bytes();
    let mut signer = sign::same(&sign::request_mac(pairing, &covered), &signature)
        .then(|| (pairing.to_vec(), None));
    if client_keys {
        // Every live client's key is tried, each compared in constant time, whichever matched:
        // the set is small, and which one did is not told by the time taken.
        for (name, key) in bridge.clients.signing_keys() {
            if sign::same(&sign::request_mac(key.as_bytes(), &covered), &signature) {
                signer = Some((key.into_bytes(), Some(name)));
            }
        }
    }
    let Some((key, client)) = signer else {
        return Err(unauthorized(sign::SignError::BadSignature));
    };
    if time_ms < bridge.started_ms {
        return Err(unauthorized(sign::SignError::BeforeStart));
    }
    bridge
        .nonces
        .admit(&nonce, time_ms, sign::now_ms())
        .map_err(|e| match e {
            sign::SignError::Full => error(StatusCode::TOO_MANY_REQUESTS, e.to_string()),
            e => unauthorized(e),
        })?;
    Ok((
        Request::from_parts(parts, axum::body::Body::from(body)),
        Signer { nonce, key, client },
    ))
}

/// Sign an answer over the request's nonce, its status and its body, with the key the request
/// was signed with. Streams (`/events`) sign each message instead; their header covers
/// [`sign::STREAM_BODY`].
async fn sign_answer(signer: &Signer, res: Response) -> Response {
    let (key, nonce) = (signer.key.as_slice(), signer.nonce.as_str());
    let status = res.status().as_u16();
    let streamed = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if streamed {
        let mac = sign::answer_mac(key, nonce, status, sign::STREAM_BODY);
        let mut res = res;
        if let Ok(v) = HeaderValue::from_str(&mac) {
            res.headers_mut().insert(sign::HEADER_ANSWER, v);
        }
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the answer could not be read to sign it",
        );
    };
    let mac = sign::answer_mac(key, nonce, status, &sign::body_digest(&body));
    if let Ok(v) = HeaderValue::from_str(&mac) {
        parts.headers.insert(sign::HEADER_ANSWER, v);
    }
    Response::from_parts(parts, axum::body::Body::from(body))
}

async fn guard(State(bridge): State<Arc<Bridge>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    if !host_ok(headers, bridge.port) {
        tracing::warn!(
            "403 refused {} {}: bad Host header {:?}",
            req.method(),
            req.uri().path(),
            headers.get(header::HOST)
        );
        return error(
            StatusCode::FORBIDDEN,
            "bad Host header: use http://127.0.0.1:<port>",
        );
    }
    let origin = match headers.get(header::ORIGIN).map(|o| o.to_str()) {
        None => None,
        Some(Ok(o)) if extension_origin(o) => Some(o.to_string()),
        Some(o) => {
            let shown = o.unwrap_or("<not text>").to_string();
            tracing::warn!(
                "403 refused {} {} from origin {shown}",
                req.method(),
                req.uri().path()
            );
            return error(StatusCode::FORBIDDEN, "web pages may not call ground-link");
        }
    };
    let signed = headers.contains_key(sign::HEADER_SIGNATURE)
        || headers.contains_key(sign::HEADER_NONCE)
        || headers.contains_key(sign::HEADER_TIME);
    let (mut req, signer) = if signed {
        match verify_signed(&bridge, req).await {
            Ok((req, signer)) => (req, Some(signer)),
            Err(res) => {
                tracing::warn!(
                    "{} refused a signed request that did not verify",
                    res.status().as_u16()
                );
                return res;
            }
        }
    } else {
        (req, None)
    };
    let mut client: Option<String> = None;
    let authed = match &signer {
        // A named client's key (on `/mcp` only): its calls carry its name, as with its token.
        Some(s) => {
            client = s.client.clone();
            true
        }
        // A browser extension always signs: a bearer token from one would mean the raw key
        // travels, which is exactly what signing exists to prevent.
        None if origin.is_some() && req.headers().contains_key(header::AUTHORIZATION) => {
            return error(
                StatusCode::UNAUTHORIZED,
                "browser extensions must sign their requests; a bearer token is refused from them",
            );
        }
        None => match bearer(req.headers()) {
            Some(t) if bridge.token.matches(t) => true,
            // A named client's own token: the calls it makes carry its name.
            Some(t) => match bridge.clients.identify(t) {
                Some(name) => {
                    client = Some(name);
                    true
                }
                None => false,
            },
            None => false,
        },
    };
    if authed {
        let now = unix_now();
        bridge.last_seen.store(now, Ordering::Relaxed);
        if let Some(o) = origin {
            bridge
                .paired
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(o, now);
        }
    } else if req.uri().path() != "/health" {
        return error(
            StatusCode::UNAUTHORIZED,
            "missing or wrong token: sign the request with the pairing key, or (outside a browser) send Authorization: Bearer <token> (see `ground-link token`)",
        );
    }
    let path = req.uri().path();
    let to_mcp = path == "/mcp" || path.starts_with("/mcp/");
    // A named client's token opens `/mcp` only: the other routes see every call (events,
    // results by id) and take a session from the body, which would let one client read or
    // ride on another's work.
    if client.is_some() && !to_mcp && path != "/health" {
        return error(
            StatusCode::FORBIDDEN,
            "a client token opens /mcp only; the other routes are the extension's",
        );
    }
    // An MCP session belongs to the token that opened it: another client presenting its id
    // (to use its grants, or to end it) is told it does not exist.
    let owner = client.clone().unwrap_or_default();
    let session = req
        .headers()
        .get(mcp::SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if to_mcp && authed {
        let refused = {
            let mut sessions = bridge
                .mcp_sessions
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            if let Some(id) = &session {
                (!sessions.touch(id, &owner)).then(|| {
                    error(
                        StatusCode::NOT_FOUND,
                        "no such MCP session; initialize again",
                    )
                })
            } else if req.method() == axum::http::Method::POST && !sessions.room_for(&owner) {
                Some(error(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!(
                        "{} MCP sessions of this token are open; close some (DELETE /mcp) or \
                         wait a few minutes for idle ones to end",
                        mcp::MAX_SESSIONS
                    ),
                ))
            } else {
                None
            }
        };
        // Signed like any answer: a signing client (the relay) acts on a 404 by opening a new
        // session, so it must be able to tell this one from a squatter's.
        if let Some(res) = refused {
            return match &signer {
                Some(s) => sign_answer(s, res).await,
                None => res,
            };
        }
    }
    let deleting = req.method() == axum::http::Method::DELETE;
    req.extensions_mut().insert(Authed(authed));
    req.extensions_mut().insert(ClientName(client));
    if let Some(s) = &signer {
        req.extensions_mut().insert(SignedNonce(s.nonce.clone()));
    }
    let mut res = next.run(req).await;
    if to_mcp && authed {
        let mut sessions = bridge
            .mcp_sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match (&session, res.headers().get(mcp::SESSION_HEADER)) {
            (Some(id), _) if deleting => sessions.forget(id),
            (None, Some(new)) => {
                if let Ok(new) = new.to_str() {
                    sessions.open(new, &owner);
                }
            }
            _ => {}
        }
    }
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    match &signer {
        Some(s) => sign_answer(s, res).await,
        None => res,
    }
}

async fn not_found() -> Response {
    error(
        StatusCode::NOT_FOUND,
        "no such route; see GET /tools, POST /exec, GET /calls/{id}",
    )
}

async fn health(
    State(bridge): State<Arc<Bridge>>,
    axum::Extension(Authed(authed)): axum::Extension<Authed>,
) -> Response {
    let mut body = wire::Health {
        status: "ok".to_string(),
        app: "ground-link".to_string(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        dir: None,
        mode: None,
        sandbox: None,
        pending: None,
        adapters: None,
    };
    if authed {
        body.dir = Some(bridge.engine.jail().root().display().to_string());
        body.mode = Some(bridge.engine.mode());
        body.sandbox = Some(bridge.engine.config().sandbox);
        body.pending = Some(bridge.broker.pending_count() as u64);
        body.adapters = Some(bridge.adapter_problems());
    }
    axum::Json(body).into_response()
}

/// `POST /adapter-health` (the guard already required the token): keep the extension's report.
async fn adapter_health(State(bridge): State<Arc<Bridge>>, body: axum::body::Bytes) -> Response {
    let report: wire::AdapterReport = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("adapter report is not {{\"site\",\"problems\":[…]}}: {e}"),
            );
        }
    };
    if let Err(message) = bridge.record_adapter_report(report, sign::now_ms()) {
        return error(StatusCode::BAD_REQUEST, message);
    }
    axum::Json(wire::AdapterProblems {
        adapters: bridge.adapter_problems(),
    })
    .into_response()
}

/// `POST /panel-calls` (the guard already required the pairing key, as for `/exec`): one audit
/// line for a page-tool call the side panel ran itself. The line is appended before the answer,
/// and a report that does not check out writes nothing.
async fn panel_calls(State(bridge): State<Arc<Bridge>>, body: Bytes) -> Response {
    let entry = match panel::entry_from_body(&body) {
        Ok(e) => e,
        Err(e @ panel::ReportError::TooLarge(_)) => {
            return error(StatusCode::PAYLOAD_TOO_LARGE, e.to_string());
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let Some(audit) = bridge.engine.audit() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "this bridge keeps no audit log, so the panel call was not recorded",
        );
    };
    if let Err(e) = audit.append(&entry) {
        tracing::error!("audit log append failed for a panel call: {e}");
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("the panel call was not recorded: {e}"),
        );
    }
    axum::Json(wire::PanelCallAudited {
        call_id: entry.call_id,
    })
    .into_response()
}

/// The longest parser message `POST /invalid-call` takes: the parser quotes a short snippet,
/// so anything near this is not one of its messages.
const MAX_INVALID_DETAIL: usize = 4096;

/// `POST /invalid-call` (the guard already required the pairing key): the result a `<tool>`
/// block the extension could not parse gets, formatted by the core like every other result.
async fn invalid_call(body: Bytes) -> Response {
    let report: wire::InvalidCallReport = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!(
                    "the body is not {{\"kind\": one of invalidJson, notAnObject, missingName, \
                     badField, trailingText, unterminated, \"detail\": the parser's message}}: {e}"
                ),
            );
        }
    };
    if report.detail.len() > MAX_INVALID_DETAIL {
        return error(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the detail is {} bytes; at most {MAX_INVALID_DETAIL} (the parser quotes a short snippet)",
                report.detail.len()
            ),
        );
    }
    axum::Json(wire::InvalidCallFormatted {
        formatted: crate::format::invalid_call_result(report.kind, &report.detail),
    })
    .into_response()
}

fn result_or_pending(id: &str, result: Option<CallResult>) -> Response {
    match result {
        Some(r) => axum::Json(r).into_response(),
        None => (
            StatusCode::ACCEPTED,
            axum::Json(wire::PendingAnswer {
                status: "pending".to_string(),
                call_id: id.to_string(),
            }),
        )
            .into_response(),
    }
}

/// Ledgers of the replies seen lately, forgotten oldest first.
#[derive(Default)]
struct Replies {
    ledgers: HashMap<String, ReplyLedger>,
    order: VecDeque<String>,
}

impl Replies {
    fn admit(&mut self, reply: &str) -> Result<(), String> {
        if !self.ledgers.contains_key(reply) {
            if self.order.len() >= MAX_REPLIES {
                if let Some(old) = self.order.pop_front() {
                    self.ledgers.remove(&old);
                }
            }
            self.order.push_back(reply.to_string());
        }
        self.ledgers.entry(reply.to_string()).or_default().admit()
    }

    fn record(&mut self, reply: &str, name: &str, result: &CallResult) {
        if let Some(l) = self.ledgers.get_mut(reply) {
            l.record(name, result);
        }
    }
}

impl Bridge {
    /// The count of unfinished calls of a token: the pairing key's (`None`) or a named client's.
    pub(crate) fn in_flight_of(&self, client: Option<&str>) -> Arc<AtomicUsize> {
        let mut counts = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        Arc::clone(
            counts
                .entry(client.map(str::to_owned))
                .or_insert_with(|| Arc::new(AtomicUsize::new(0))),
        )
    }
}

/// One unfinished call on the token's count; dropped when the call ends.
struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    fn take(count: &Arc<AtomicUsize>) -> Option<InFlight> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_IN_FLIGHT).then_some(n + 1)
            })
            .ok()
            .map(|_| InFlight(Arc::clone(count)))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn exec(
    State(bridge): State<Arc<Bridge>>,
    axum::Extension(ClientName(client)): axum::Extension<ClientName>,
    body: Bytes,
) -> Response {
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return error(StatusCode::BAD_REQUEST, "the body is not UTF-8 JSON"),
    };
    let mut req = match parse_request(text) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let id = match assign_call_id(&mut req) {
        Ok(id) => id,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    req.client = client;
    let wait = req
        .wait_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_WAIT)
        .min(Duration::from_secs(25));
    let Some(slot) = InFlight::take(&bridge.in_flight_of(req.client.as_deref())) else {
        return error(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{MAX_IN_FLIGHT} calls of this token are still running or waiting for approval; wait for some to finish"
            ),
        );
    };
    // A call id the bridge already has (a retried request) must not count twice against its
    // reply; `begin` below refuses it all the same.
    if bridge.broker.phase(&id).is_some() {
        return error(
            StatusCode::CONFLICT,
            broker::BrokerError::Duplicate(id.clone()).to_string(),
        );
    }
    // Over the reply's cap, or after the person said no to one of its calls: answered at once,
    // never run (and not audited: the engine never saw it).
    let reply = req.reply.clone();
    if let Err(why) = bridge.admit_reply(reply.as_deref()) {
        return axum::Json(crate::reply::not_run_result(&id, &req.name, &why)).into_response();
    }
    let completion = match bridge.broker.begin(&id) {
        Ok(c) => c,
        Err(e @ broker::BrokerError::Duplicate(_)) => {
            return error(StatusCode::CONFLICT, e.to_string());
        }
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    let task_bridge = Arc::clone(&bridge);
    // The call runs on its own task: a client that goes away does not stop it half-way.
    tokio::spawn(async move {
        let _slot = slot;
        let name = req.name.clone();
        let cancel = completion.cancellation();
        let result = task_bridge
            .engine
            .call_until(req, Source::Bridge, cancel)
            .await;
        task_bridge.record_reply(reply.as_deref(), &name, &result);
        completion.finish(result);
    });
    let result = bridge.broker.wait(&id, wait).await.flatten();
    if result.is_some() {
        // Delivered in this response: nobody needs to fetch it again.
        bridge.broker.forget(&id);
    }
    result_or_pending(&id, result)
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PollQuery {
    wait_ms: Option<u64>,
}

async fn poll(
    State(bridge): State<Arc<Bridge>>,
    Path(id): Path<String>,
    query: Result<Query<PollQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let Ok(Query(q)) = query else {
        return error(
            StatusCode::BAD_REQUEST,
            "waitMs must be a number of milliseconds, e.g. ?waitMs=15000",
        );
    };
    let wait = q
        .wait_ms
        .map(Duration::from_millis)
        .unwrap_or(MAX_POLL)
        .min(MAX_POLL);
    match bridge.broker.wait(&id, wait).await {
        None => error(
            StatusCode::NOT_FOUND,
            format!(
                "no call {id:?}: results delivered by POST /exec are not kept, pending ones for 10 minutes"
            ),
        ),
        Some(r) => result_or_pending(&id, r),
    }
}

async fn cancel(State(bridge): State<Arc<Bridge>>, Path(id): Path<String>) -> Response {
    match bridge.broker.cancel(&id) {
        None => error(StatusCode::NOT_FOUND, format!("no call {id:?}")),
        Some(Phase::Done) => error(StatusCode::CONFLICT, "the call has already finished"),
        // Waiting for the person: the question is withdrawn and the call ends as denied.
        Some(Phase::WaitingForApproval) => {
            let r = bridge
                .broker
                .wait(&id, Duration::from_secs(5))
                .await
                .flatten();
            result_or_pending(&id, r)
        }
        // Already allowed and running: stopping a write half-way would do more harm than
        // letting it finish. (If it has yet to ask, the cancel still denies it when it does.)
        Some(Phase::Running) => error(
            StatusCode::CONFLICT,
            "the call is already running and cannot be cancelled; its result comes from GET /calls/{id}",
        ),
    }
}

/// The sandbox tools, and the page tools of the connected browser (DESIGN §12): each with the
/// page's words delimited as the page's, its origin and tab. A call names a page tool by its
/// `name` through `POST /exec` like any tool, and the engine decides it.
async fn tools(State(bridge): State<Arc<Bridge>>) -> Response {
    let pages: Vec<serde_json::Value> = if bridge.browsers.available() {
        bridge
            .browsers
            .page_tools()
            .iter()
            .map(|t| {
                json!({
                    "name": t.name,
                    "origin": t.origin,
                    "tabId": t.tab_id,
                    "description": t.described(),
                    "inputSchema": t.input_schema,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    axum::Json(json!({"tools": crate::tools::registry(), "pageTools": pages})).into_response()
}

#[derive(Deserialize)]
struct PromptQuery {
    lang: Option<String>,
}

async fn prompt(Query(q): Query<PromptQuery>) -> Response {
    let lang = match q.lang.as_deref() {
        None | Some("en") => Language::En,
        Some("zh") | Some("zh-CN") | Some("zh_CN") => Language::Zh,
        Some(other) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("lang {other:?} is not offered; use en or zh"),
            );
        }
    };
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        crate::prompt::instructions(lang),
    )
        .into_response()
}

/// An open `/events` stream: counted while it lives, and listed so a newer one can end it.
struct Listening {
    count: Arc<AtomicUsize>,
    bridge: Arc<Bridge>,
    id: u64,
}

impl Listening {
    /// Register a stream; past [`MAX_STREAMS`], the oldest is ended.
    fn open(bridge: &Arc<Bridge>) -> (Listening, tokio_util::sync::CancellationToken) {
        let id = bridge.next_stream.fetch_add(1, Ordering::Relaxed);
        // A child of `closing`: shutting down ends every stream too.
        let stop = bridge.closing.child_token();
        let mut streams = bridge.streams.lock().unwrap_or_else(|p| p.into_inner());
        streams.push_back((id, stop.clone()));
        while streams.len() > MAX_STREAMS {
            if let Some((_, oldest)) = streams.pop_front() {
                oldest.cancel();
            }
        }
        drop(streams);
        bridge.listeners.fetch_add(1, Ordering::Relaxed);
        let listening = Listening {
            count: Arc::clone(&bridge.listeners),
            bridge: Arc::clone(bridge),
            id,
        };
        (listening, stop)
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::Relaxed);
        self.bridge
            .streams
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(id, _)| *id != self.id);
    }
}

async fn events(
    State(bridge): State<Arc<Bridge>>,
    signed: Option<axum::Extension<SignedNonce>>,
) -> Response {
    let (listening, stop) = Listening::open(&bridge);
    let key = bridge.token.secret().as_bytes().to_vec();
    let nonce = signed.map(|axum::Extension(SignedNonce(n))| n);
    let mut seq = 0u64;
    let stream = BroadcastStream::new(bridge.broker.subscribe()).filter_map(move |e| {
        // The stream owns the guard, so the count drops when the stream does.
        let _alive = &listening;
        let data = e.ok().and_then(|event| serde_json::to_string(&event).ok());
        // A signed stream signs each message over the request's nonce and its place in the
        // stream (the SSE `id`), so nothing can be dropped, repeated or slipped in between.
        let event = data.map(|data| {
            let mut ev = SseEvent::default();
            if let Some(n) = &nonce {
                ev = ev.id(sign::event_mac(&key, n, seq, &data));
                seq += 1;
            }
            ev.data(data)
        });
        async move { event.map(Ok::<_, std::convert::Infallible>) }
    });
    let stream = stream.take_until(stop.cancelled_owned());
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

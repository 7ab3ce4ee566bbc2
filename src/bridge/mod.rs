//! The bridge (DESIGN §6): loopback HTTP between the browser extension and the engine.
//!
//! Guarantees, each with an attack test in `tests/bridge.rs`:
//! - bound to `127.0.0.1` only; there is no option to bind elsewhere;
//! - every route checks Host (DNS rebinding) and Origin (web pages) before anything else, and no
//!   response ever carries CORS headers, so a web page can neither call nor read the bridge;
//! - every route but `/health` needs the bearer token, compared in constant time; a token in
//!   the query string, Basic auth or a prefix of the token is refused;
//! - bodies over [`MAX_BODY`] are refused with 413 before they are buffered;
//! - nothing here answers an approval: the broker asks the host's own approver.

pub mod broker;
pub mod token;

use std::collections::BTreeMap;
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
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_stream::wrappers::BroadcastStream;

use crate::bridge::broker::{Broker, Phase};
use crate::bridge::token::Token;
use crate::engine::{Engine, new_call_id, parse_request};
use crate::protocol::{CallResult, Language, Source};

/// Largest request body: a 16 MiB file plus JSON escaping.
pub const MAX_BODY: usize = 40 * 1024 * 1024;
/// `POST /exec` waits this long by default before answering 202 (a service worker dies at 30 s).
pub const DEFAULT_WAIT: Duration = Duration::from_secs(20);
/// Long-poll limit for `GET /calls/{id}`.
pub const MAX_POLL: Duration = Duration::from_secs(20);

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
    /// Cancelled when the bridge starts shutting down: event streams end then, so a client
    /// reconnects to whatever serves next instead of holding a dead stream (and the server
    /// does not wait for it).
    closing: tokio_util::sync::CancellationToken,
}

impl Bridge {
    pub fn broker(&self) -> &Arc<Broker> {
        &self.broker
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

/// Counts one open `/events` stream for as long as the stream lives; the server drops the
/// stream when the client goes away (at the latest on the next keep-alive write).
struct Listening(Arc<AtomicUsize>);

impl Listening {
    fn new(count: &Arc<AtomicUsize>) -> Listening {
        count.fetch_add(1, Ordering::Relaxed);
        Listening(Arc::clone(count))
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
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
    let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, port))
        .await
        .map_err(|source| BridgeError::Bind { port, source })?;
    let port = listener
        .local_addr()
        .map_err(|source| BridgeError::Bind { port, source })?
        .port();
    let bridge = Arc::new(Bridge {
        engine,
        broker,
        token,
        port,
        paired: Mutex::new(BTreeMap::new()),
        last_seen: AtomicU64::new(0),
        listeners: Arc::new(AtomicUsize::new(0)),
        closing: tokio_util::sync::CancellationToken::new(),
    });
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
        .fallback(not_found)
        .layer(DefaultBodyLimit::disable())
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY))
        .layer(middleware::from_fn_with_state(Arc::clone(&bridge), guard))
        .with_state(bridge)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, axum::Json(json!({"error": message.into()}))).into_response()
}

/// Whether the request carried the right token; set by [`guard`].
#[derive(Clone, Copy)]
struct Authed(bool);

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

async fn guard(State(bridge): State<Arc<Bridge>>, mut req: Request, next: Next) -> Response {
    let headers = req.headers();
    if !host_ok(headers, bridge.port) {
        tracing::warn!(host = ?headers.get(header::HOST), "refused: bad Host");
        eprintln!(
            "ground-link: 403 refused {} {}: bad Host header",
            req.method(),
            req.uri().path()
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
            eprintln!(
                "ground-link: 403 refused {} {} from origin {shown}",
                req.method(),
                req.uri().path()
            );
            return error(StatusCode::FORBIDDEN, "web pages may not call ground-link");
        }
    };
    let authed = bearer(req.headers()).is_some_and(|t| bridge.token.matches(t));
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
            "missing or wrong token: send Authorization: Bearer <token> (see `ground-link token`)",
        );
    }
    req.extensions_mut().insert(Authed(authed));
    let mut res = next.run(req).await;
    res.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res
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
    let mut body =
        json!({"status": "ok", "app": "ground-link", "version": env!("CARGO_PKG_VERSION")});
    if authed {
        let c = bridge.engine.config();
        body["dir"] = json!(bridge.engine.jail().root().display().to_string());
        body["mode"] = json!(bridge.engine.mode());
        body["sandbox"] = json!(c.sandbox);
        body["pending"] = json!(bridge.broker.pending_count());
    }
    axum::Json(body).into_response()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Pending<'a> {
    status: &'static str,
    call_id: &'a str,
}

fn result_or_pending(id: &str, result: Option<CallResult>) -> Response {
    match result {
        Some(r) => axum::Json(r).into_response(),
        None => (
            StatusCode::ACCEPTED,
            axum::Json(Pending {
                status: "pending",
                call_id: id,
            }),
        )
            .into_response(),
    }
}

async fn exec(State(bridge): State<Arc<Bridge>>, body: Bytes) -> Response {
    let text = match std::str::from_utf8(&body) {
        Ok(t) => t,
        Err(_) => return error(StatusCode::BAD_REQUEST, "the body is not UTF-8 JSON"),
    };
    let mut req = match parse_request(text) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let id = req
        .call_id
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(new_call_id);
    if id.len() > 128 {
        return error(
            StatusCode::BAD_REQUEST,
            "callId is longer than 128 characters",
        );
    }
    req.call_id = Some(id.clone());
    let wait = req
        .wait_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_WAIT)
        .min(Duration::from_secs(25));
    let completion = match bridge.broker.begin(&id) {
        Ok(c) => c,
        Err(e @ broker::BrokerError::Duplicate(_)) => {
            return error(StatusCode::CONFLICT, e.to_string());
        }
        Err(e) => return error(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    };
    let engine = Arc::clone(&bridge.engine);
    // The call runs on its own task: a client that goes away does not stop it half-way.
    tokio::spawn(async move {
        let result = engine.call(req, Source::Bridge).await;
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

async fn tools() -> Response {
    axum::Json(json!({"tools": crate::tools::registry()})).into_response()
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

async fn events(State(bridge): State<Arc<Bridge>>) -> Response {
    let listening = Listening::new(&bridge.listeners);
    let stream = BroadcastStream::new(bridge.broker.subscribe()).filter_map(move |e| {
        // The stream owns the guard, so the count drops when the stream does.
        let _alive = &listening;
        async move {
            let event = e.ok()?;
            let data = serde_json::to_string(&event).ok()?;
            Some(Ok::<_, std::convert::Infallible>(
                SseEvent::default().data(data),
            ))
        }
    });
    let stream = stream.take_until(bridge.closing.clone().cancelled_owned());
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

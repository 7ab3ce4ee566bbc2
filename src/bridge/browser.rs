//! Browsers connected over native messaging, and the engine's link to them (DESIGN §8.2–8.3).
//!
//! The extension says `{"type":"browser.hello","tools":bool}` on its native connection; from
//! then on the bridge may send it `{"type":"browser.call","id","op","tool","args","expect"?}`
//! and it answers each with one `{"type":"browser.result","id","ok",…}`. Guarantees:
//! - a call goes to one connected browser with browser tools switched on (the latest to say
//!   hello), and is answered within [`CALL_TIMEOUT`] or fails with a sentence saying so;
//! - a browser that is reconnecting is waited for [`RECONNECT_GRACE`], then the call fails
//!   with a clear error; a connection that ends fails every call it still owed at once;
//! - an answer is taken only from the connection the call was sent on, and only once;
//! - every change in whether browser tools are available is counted in [`Browsers::changes`],
//!   which MCP turns into `notifications/tools/list_changed`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::engine::BrowserLink;
use crate::protocol::ToolName;
use crate::tools::browser::{PageTool, Target};

/// How long a browser has to answer one call (its own actions time out sooner, at 20 s).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(25);
/// How long a call waits for a browser that is (re)connecting.
pub const RECONNECT_GRACE: Duration = Duration::from_secs(5);
/// Largest answer text kept from a browser (its own cap is 256 KiB for the DOM).
const MAX_TEXT: usize = 1024 * 1024;

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// A new id for a native connection.
pub fn connection_id() -> u64 {
    NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed)
}

struct Connection {
    id: u64,
    send: mpsc::Sender<Vec<u8>>,
    tools: bool,
    /// The page tools this browser reported last (`browser.pageTools`).
    page_tools: Vec<PageTool>,
}

struct Waiting {
    connection: u64,
    answer: oneshot::Sender<Result<Map<String, Value>, String>>,
}

#[derive(Default)]
struct State {
    /// Oldest first; calls go to the newest with tools on.
    connections: Vec<Connection>,
    waiting: HashMap<String, Waiting>,
}

impl State {
    fn available(&self) -> bool {
        self.connections.iter().any(|c| c.tools)
    }

    /// The browser calls go to: the newest with tools on.
    fn current(&self) -> Option<&Connection> {
        self.connections.iter().rev().find(|c| c.tools)
    }

    /// What MCP clients are shown: whether browser tools are there, and the page tools.
    fn listing(&self) -> (bool, Vec<String>) {
        let pages = self
            .current()
            .map(|c| c.page_tools.iter().map(|t| t.name.clone()).collect())
            .unwrap_or_default();
        (self.available(), pages)
    }
}

/// At most this many page tools are kept from one report.
pub const MAX_PAGE_TOOLS: usize = 128;

pub struct Browsers {
    state: Mutex<State>,
    next_call: AtomicU64,
    /// Bumped whenever browser tools come or go.
    changed: watch::Sender<u64>,
}

impl Default for Browsers {
    fn default() -> Browsers {
        Browsers {
            state: Mutex::new(State::default()),
            next_call: AtomicU64::new(1),
            changed: watch::channel(0).0,
        }
    }
}

impl Browsers {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a browser with browser tools switched on is connected.
    pub fn available(&self) -> bool {
        self.state().available()
    }

    /// A receiver that sees every change of [`Browsers::available`].
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn update(&self, f: impl FnOnce(&mut State)) {
        let mut state = self.state();
        let before = state.listing();
        f(&mut state);
        let after = state.listing();
        drop(state);
        if before != after {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// A connection said hello (again): it is the browser calls go to from now on.
    pub fn hello(&self, connection: u64, send: mpsc::Sender<Vec<u8>>, tools: bool) {
        self.update(|s| {
            let page_tools = s
                .connections
                .iter()
                .find(|c| c.id == connection)
                .map(|c| c.page_tools.clone())
                .unwrap_or_default();
            s.connections.retain(|c| c.id != connection);
            s.connections.push(Connection {
                id: connection,
                send,
                tools,
                page_tools: if tools { page_tools } else { Vec::new() },
            });
        });
    }

    /// A browser's page tools (`browser.pageTools`), replacing what it said before. Entries
    /// whose name is not a page tool's, whose origin is not a URL origin, or past
    /// [`MAX_PAGE_TOOLS`], are dropped.
    pub fn set_page_tools(&self, connection: u64, tools: Vec<PageTool>) {
        let mut seen = std::collections::HashSet::new();
        let tools: Vec<PageTool> = tools
            .into_iter()
            .filter(|t| {
                crate::tools::browser::is_page_tool_name(&t.name)
                    && crate::tools::browser::origin_of(&t.origin).as_deref()
                        == Some(t.origin.trim_end_matches('/'))
                    && seen.insert(t.name.clone())
            })
            .take(MAX_PAGE_TOOLS)
            .collect();
        self.update(|s| {
            if let Some(c) = s.connections.iter_mut().find(|c| c.id == connection) {
                c.page_tools = if c.tools { tools } else { Vec::new() };
            }
        });
    }

    /// The page tools MCP clients may call now.
    pub fn page_tools(&self) -> Vec<PageTool> {
        self.state()
            .current()
            .map(|c| c.page_tools.clone())
            .unwrap_or_default()
    }

    /// A connection ended: it is forgotten, and the calls it owed fail now.
    pub fn gone(&self, connection: u64) {
        self.update(|s| {
            s.connections.retain(|c| c.id != connection);
            let owed: Vec<String> = s
                .waiting
                .iter()
                .filter(|(_, w)| w.connection == connection)
                .map(|(id, _)| id.clone())
                .collect();
            for id in owed {
                if let Some(w) = s.waiting.remove(&id) {
                    let _ = w.answer.send(Err(
                        "the browser went away before it answered (the extension or the native \
                         host stopped); call the tool again once the browser is back"
                            .to_string(),
                    ));
                }
            }
        });
    }

    /// A `browser.result` from `connection`. Answers for calls it was not sent are dropped.
    pub fn result(&self, connection: u64, message: Map<String, Value>) {
        let Some(id) = message.get("id").and_then(Value::as_str) else {
            tracing::warn!("a browser answer without an id was dropped");
            return;
        };
        let mut state = self.state();
        let Some(w) = state.waiting.remove(id) else {
            return;
        };
        if w.connection != connection {
            // Not its call: put it back for the connection that owes it.
            state.waiting.insert(id.to_string(), w);
            tracing::warn!("a browser answered a call it was not sent; dropped");
            return;
        }
        drop(state);
        let answer = if message.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(message)
        } else {
            let why = message
                .get("error")
                .and_then(Value::as_str)
                .filter(|e| !e.trim().is_empty())
                .unwrap_or("the browser could not do it and did not say why");
            Err(format!("the browser says: {why}"))
        };
        let _ = w.answer.send(answer);
    }

    /// The newest connection with tools on, waiting up to [`RECONNECT_GRACE`] for one.
    async fn connection(&self) -> Result<(u64, mpsc::Sender<Vec<u8>>), String> {
        let mut changes = self.changes();
        let deadline = tokio::time::Instant::now() + RECONNECT_GRACE;
        loop {
            if let Some(c) = self.state().connections.iter().rev().find(|c| c.tools) {
                return Ok((c.id, c.send.clone()));
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => continue,
                _ => {
                    return Err(
                        "no browser is connected with browser tools switched on: open Chrome \
                         with the ground-link extension and switch on browser tools in its popup \
                         (the native host must be installed: `ground-link install-native-host`)"
                            .to_string(),
                    );
                }
            }
        }
    }

    /// Send one `browser.call` and wait for its answer.
    async fn call(&self, mut message: Map<String, Value>) -> Result<Map<String, Value>, String> {
        let (connection, send) = self.connection().await?;
        let id = format!("b{}", self.next_call.fetch_add(1, Ordering::Relaxed));
        message.insert("type".into(), json!("browser.call"));
        message.insert("id".into(), json!(id));
        let (tx, rx) = oneshot::channel();
        self.state().waiting.insert(
            id.clone(),
            Waiting {
                connection,
                answer: tx,
            },
        );
        let body = serde_json::to_vec(&Value::Object(message)).map_err(|e| e.to_string())?;
        if send.send(body).await.is_err() {
            self.state().waiting.remove(&id);
            return Err("the browser's connection closed; call the tool again".to_string());
        }
        let answer = tokio::time::timeout(CALL_TIMEOUT, rx).await;
        self.state().waiting.remove(&id);
        match answer {
            Ok(Ok(a)) => a,
            Ok(Err(_)) => Err("the browser went away before it answered".to_string()),
            Err(_) => Err(format!(
                "the browser did not answer within {} s; the page may be busy — take a \
                 snapshot_page to see where it is",
                CALL_TIMEOUT.as_secs()
            )),
        }
    }
}

fn text_of(answer: Map<String, Value>) -> Result<String, String> {
    match answer.get("text").and_then(Value::as_str) {
        Some(t) if t.len() <= MAX_TEXT => Ok(t.to_string()),
        Some(t) => {
            let mut end = MAX_TEXT;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            Ok(format!(
                "{}\n[cut: the browser's answer was {} bytes]",
                &t[..end],
                t.len()
            ))
        }
        None => Err("the browser's answer has no text".to_string()),
    }
}

#[async_trait::async_trait]
impl BrowserLink for Browsers {
    async fn inspect(&self, tool: ToolName, args: &Map<String, Value>) -> Result<Target, String> {
        let mut m = Map::new();
        m.insert("op".into(), json!("inspect"));
        m.insert("tool".into(), json!(tool.as_str()));
        m.insert("args".into(), Value::Object(args.clone()));
        let answer = self.call(m).await?;
        let target = answer
            .get("target")
            .cloned()
            .ok_or("the browser's answer names no target")?;
        serde_json::from_value(target).map_err(|e| {
            format!("the browser described the page in a shape ground-link does not know: {e}")
        })
    }

    async fn run(
        &self,
        tool: ToolName,
        args: &Map<String, Value>,
        expect: Option<(u32, String)>,
    ) -> Result<String, String> {
        let mut m = Map::new();
        m.insert("op".into(), json!("run"));
        m.insert("tool".into(), json!(tool.as_str()));
        m.insert("args".into(), Value::Object(args.clone()));
        if let Some((tab, origin)) = expect {
            m.insert("expect".into(), json!({"tabId": tab, "origin": origin}));
        }
        text_of(self.call(m).await?)
    }

    fn page_tool(&self, name: &str) -> Option<Target> {
        let tool = self.page_tools().into_iter().find(|t| t.name == name)?;
        Some(Target {
            tab_id: Some(tool.tab_id),
            url: Some(format!("{}/", tool.origin.trim_end_matches('/'))),
            title: tool.title.clone(),
            page_tool: Some(tool.annotations.clone()),
            page_tool_name: Some(tool.tool.clone()),
            ..Target::default()
        })
    }

    async fn run_page(
        &self,
        name: &str,
        args: &Map<String, Value>,
        expect: Option<(u32, String)>,
    ) -> Result<String, String> {
        let mut m = Map::new();
        m.insert("op".into(), json!("page"));
        m.insert("tool".into(), json!(name));
        m.insert("args".into(), Value::Object(args.clone()));
        if let Some((tab, origin)) = expect {
            m.insert("expect".into(), json!({"tabId": tab, "origin": origin}));
        }
        text_of(self.call(m).await?)
    }

    /// `op: "read"` of a `browser://` resource: its text.
    async fn read(&self, uri: &str) -> Result<String, String> {
        let mut m = Map::new();
        m.insert("op".into(), json!("read"));
        m.insert("uri".into(), json!(uri));
        text_of(self.call(m).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer_all(
        b: &'static Browsers,
        connection: u64,
        mut rx: mpsc::Receiver<Vec<u8>>,
        ok: bool,
    ) {
        tokio::spawn(async move {
            while let Some(body) = rx.recv().await {
                let v: Value = serde_json::from_slice(&body).unwrap();
                let id = v["id"].as_str().unwrap().to_string();
                let m = if ok {
                    json!({"type":"browser.result","id":id,"ok":true,"text":format!("did {}", v["op"])})
                } else {
                    json!({"type":"browser.result","id":id,"ok":false,"error":"no such tab"})
                };
                b.result(connection, m.as_object().unwrap().clone());
            }
        });
    }

    #[tokio::test]
    async fn calls_go_to_the_newest_browser_and_fail_fast_when_it_leaves() {
        let b: &'static Browsers = Box::leak(Box::default());
        let mut changes = b.changes();
        assert!(!b.available());
        let (tx1, rx1) = mpsc::channel(4);
        b.hello(1, tx1, true);
        assert!(b.available());
        assert!(changes.has_changed().unwrap());
        changes.mark_unchanged();
        answer_all(b, 1, rx1, true);
        assert_eq!(b.read("browser://tabs").await.unwrap(), "did \"read\"");

        let (tx2, rx2) = mpsc::channel(4);
        b.hello(2, tx2, true);
        // Still available: no change to announce.
        assert!(!changes.has_changed().unwrap());
        answer_all(b, 2, rx2, false);
        let e = b.read("browser://tabs").await.unwrap_err();
        assert!(e.contains("no such tab"), "{e}");

        // A connection that never answers: its end fails the call at once.
        let (tx3, _rx3) = mpsc::channel(4);
        b.hello(3, tx3, true);
        let pending = tokio::spawn(async { b.read("browser://tabs").await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        b.gone(3);
        let e = pending.await.unwrap().unwrap_err();
        assert!(e.contains("went away"), "{e}");
    }

    #[tokio::test]
    async fn an_answer_from_another_connection_is_not_taken() {
        let b: &'static Browsers = Box::leak(Box::default());
        let (tx, mut rx) = mpsc::channel(4);
        b.hello(7, tx, true);
        let pending = tokio::spawn(async { b.read("browser://tabs").await });
        let body = rx.recv().await.unwrap();
        let id = serde_json::from_slice::<Value>(&body).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        let forged = json!({"id": id, "ok": true, "text": "forged"});
        b.result(8, forged.as_object().unwrap().clone());
        let real = json!({"id": id, "ok": true, "text": "real"});
        b.result(7, real.as_object().unwrap().clone());
        assert_eq!(pending.await.unwrap().unwrap(), "real");
    }

    #[tokio::test]
    async fn with_no_browser_a_call_waits_a_little_then_says_what_to_do() {
        let b: &'static Browsers = Box::leak(Box::default());
        let (tx, _rx) = mpsc::channel(4);
        b.hello(1, tx, false);
        let e = b.read("browser://tabs").await.unwrap_err();
        assert!(e.contains("switch on browser tools"), "{e}");
    }
}

//! The bridge's end of native messaging (DESIGN §8.2): a Unix socket that `ground-link
//! native-host` (the process Chrome starts) relays the extension's messages to.
//!
//! Guarantees:
//! - the socket lives in a folder of the user's own that nobody else can enter (0700, owned by
//!   us, not a symlink — checked, never assumed), and is itself 0600;
//! - every connection's peer uid (`SO_PEERCRED`) must be ours; any other is answered with an
//!   error and closed before a byte of it is read;
//! - there is no token on this path: those two checks are the authentication;
//! - each message is a call in the shape of `POST /exec` and runs through the same engine and
//!   broker as one; its answer is the same result object (or `{"error"}` for a message that is
//!   not a call), framed like Chrome's native messaging (4-byte little-endian length + JSON);
//! - frames over [`MAX_IN`] are refused with an error (drained, never buffered).

use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::bridge::{Bridge, InFlight, MAX_IN_FLIGHT};
use crate::engine::parse_request;
use crate::protocol::Source;

/// The host's name in its manifest (`chrome.runtime.connectNative("dev.groundlink.host")`).
pub const HOST_NAME: &str = "dev.groundlink.host";
/// The shipped extension's id, fixed by the `key` in `extension/src/manifest.json` (a test
/// derives it from that key, so the two cannot drift apart).
pub const EXTENSION_ID: &str = "nahlngkebpicfgggkehbcdnlkfhhejod";
/// Largest browser→host message accepted (Chrome itself allows 64 MiB).
pub const MAX_IN: usize = 8 * 1024 * 1024;
/// Largest host→browser message Chrome accepts; bigger answers travel in chunks.
pub const MAX_OUT: usize = 1024 * 1024;
/// Largest answer the bridge sends the host over the socket (a 16 MiB file, escaped, twice:
/// `output` and `formatted`).
pub const MAX_RELAY: usize = 96 * 1024 * 1024;
/// The socket's file name inside [`socket_dir`].
pub const SOCKET_NAME: &str = "native.sock";

/// The one caller origin the host accepts, exactly as Chrome passes it and as the manifest's
/// `allowed_origins` lists it.
pub fn allowed_origin() -> String {
    format!("chrome-extension://{EXTENSION_ID}/")
}

#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    #[error(
        "cannot find a folder for the native-messaging socket: set XDG_RUNTIME_DIR, XDG_STATE_HOME or HOME"
    )]
    NoDir,
    #[error(
        "{path} is not a private folder of this user ({why}); remove it, or set XDG_RUNTIME_DIR to a folder of your own"
    )]
    NotPrivate { path: PathBuf, why: String },
    #[error(
        "another ground-link already listens on {0}; the browser extension reaches that one (stop it first to use this one)"
    )]
    AlreadyRunning(PathBuf),
    #[error("cannot listen on {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `$XDG_RUNTIME_DIR/ground-link`, or where that is unset `$XDG_STATE_HOME/ground-link`
/// (`~/.local/state/ground-link`).
pub fn socket_dir() -> Result<PathBuf, NativeError> {
    // A relative XDG_RUNTIME_DIR is invalid by the XDG spec, and would name a different
    // folder from every working directory.
    std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_absolute())
        .or_else(dirs::state_dir)
        .map(|d| d.join("ground-link"))
        .ok_or(NativeError::NoDir)
}

pub fn socket_path() -> Result<PathBuf, NativeError> {
    Ok(socket_dir()?.join(SOCKET_NAME))
}

/// Create `dir` (0700) if missing; then insist it is a real folder, ours, closed to others.
/// The host runs the same check before it connects, so neither end talks through a folder
/// another user could have planted a socket in.
pub fn ensure_private_dir(dir: &Path) -> Result<(), NativeError> {
    let not_private = |why: String| NativeError::NotPrivate {
        path: dir.to_path_buf(),
        why,
    };
    if let Err(e) = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
    {
        return Err(not_private(format!("cannot create it: {e}")));
    }
    check_private_dir(dir)
}

/// The checks of [`ensure_private_dir`] without creating anything.
pub fn check_private_dir(dir: &Path) -> Result<(), NativeError> {
    let not_private = |why: String| NativeError::NotPrivate {
        path: dir.to_path_buf(),
        why,
    };
    let meta = std::fs::symlink_metadata(dir).map_err(|e| not_private(e.to_string()))?;
    if !meta.file_type().is_dir() {
        return Err(not_private("it is not a folder".into()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(not_private(format!(
            "it belongs to uid {}, not {me}",
            meta.uid()
        )));
    }
    if meta.mode() & 0o077 != 0 {
        return Err(not_private(format!(
            "its mode is {:o}; it must be 700",
            meta.mode() & 0o777
        )));
    }
    Ok(())
}

/// Whether a peer may talk to the bridge: only the user the bridge runs as.
pub fn peer_allowed(peer_uid: u32) -> bool {
    peer_uid == rustix::process::geteuid().as_raw()
}

/// What is answered instead of a result: `{"error", "callId"?}` (the shape of the HTTP error
/// bodies, plus the call it concerns when that is known).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorMessage {
    pub error: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

impl ErrorMessage {
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_else(|_| br#"{"error":"internal error"}"#.to_vec())
    }
}

pub fn error_bytes(error: impl Into<String>, call_id: Option<String>) -> Vec<u8> {
    ErrorMessage {
        error: error.into(),
        call_id,
    }
    .to_bytes()
}

/// One frame read from a stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Message(Vec<u8>),
    /// A frame over the cap, of this many bytes, read and thrown away.
    TooBig(usize),
    /// The stream ended (between frames, or inside one).
    End,
}

pub fn too_big_message(len: usize, cap: usize) -> String {
    format!(
        "the message is {len} bytes, over the {cap}-byte limit; send smaller calls (write big files in parts with edit_file)"
    )
}

/// Read one frame (4-byte little-endian length, then the body). A body over `cap` is
/// drained in small reads, never held.
pub fn read_frame(r: &mut impl Read, cap: usize) -> std::io::Result<Frame> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Frame::End),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > cap {
        let drained = std::io::copy(&mut r.take(len as u64), &mut std::io::sink())?;
        return Ok(if drained == len as u64 {
            Frame::TooBig(len)
        } else {
            Frame::End
        });
    }
    let mut body = vec![0u8; len];
    match r.read_exact(&mut body) {
        Ok(()) => Ok(Frame::Message(body)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(Frame::End),
        Err(e) => Err(e),
    }
}

pub fn write_frame(w: &mut impl Write, body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| std::io::Error::other("a frame over 4 GiB cannot be framed"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)?;
    w.flush()
}

async fn read_frame_async(r: &mut (impl AsyncRead + Unpin), cap: usize) -> std::io::Result<Frame> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(Frame::End),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > cap {
        let drained = tokio::io::copy(&mut r.take(len as u64), &mut tokio::io::sink()).await?;
        return Ok(if drained == len as u64 {
            Frame::TooBig(len)
        } else {
            Frame::End
        });
    }
    let mut body = vec![0u8; len];
    match r.read_exact(&mut body).await {
        Ok(_) => Ok(Frame::Message(body)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(Frame::End),
        Err(e) => Err(e),
    }
}

async fn write_frame_async(w: &mut (impl AsyncWrite + Unpin), body: &[u8]) -> std::io::Result<()> {
    let len = u32::try_from(body.len())
        .map_err(|_| std::io::Error::other("a frame over 4 GiB cannot be framed"))?;
    w.write_all(&len.to_le_bytes()).await?;
    w.write_all(body).await?;
    w.flush().await
}

/// The listening socket; dropping it stops accepting and removes the socket file.
pub struct NativeListener {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl NativeListener {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for NativeListener {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listen on `path` (its folder is created private, or must already be) for the native host;
/// stops when the bridge shuts down or the listener is dropped. Call inside a Tokio runtime.
pub fn listen(bridge: Arc<Bridge>, path: &Path) -> Result<NativeListener, NativeError> {
    let io = |source| NativeError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = path.parent().ok_or_else(|| {
        io(std::io::Error::other(
            "the socket path has no parent folder",
        ))
    })?;
    ensure_private_dir(dir)?;
    if std::fs::symlink_metadata(path).is_ok() {
        // A socket that still answers belongs to a running ground-link; one that does not
        // was left by one that died, and is replaced.
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(NativeError::AlreadyRunning(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(io)?;
    }
    let listener = tokio::net::UnixListener::bind(path).map_err(io)?;
    // The folder is already closed to others; the socket's own mode says the same.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    let closing = bridge.closing.clone();
    let task = tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                a = listener.accept() => a,
                () = closing.cancelled() => return,
            };
            match accepted {
                Ok((stream, _)) => {
                    tokio::spawn(connection(Arc::clone(&bridge), stream));
                }
                Err(e) => {
                    tracing::warn!("native-messaging socket: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
    Ok(NativeListener {
        path: path.to_path_buf(),
        task,
    })
}

/// Messages of one connection handled at once (see [`connection`]).
const PER_CONNECTION: usize = 16;

async fn connection(bridge: Arc<Bridge>, mut stream: tokio::net::UnixStream) {
    let uid = stream.peer_cred().map(|c| c.uid());
    let allowed = uid.as_ref().is_ok_and(|u| peer_allowed(*u));
    if !allowed {
        let who = match &uid {
            Ok(u) => format!("uid {u}"),
            Err(e) => format!("an unknown user ({e})"),
        };
        tracing::warn!("refused a native-messaging connection from {who}");
        let _ = write_frame_async(
            &mut stream,
            &error_bytes(
                format!("refused: this ground-link belongs to another user; {who} may not use it"),
                None,
            ),
        )
        .await;
        return;
    }
    let (mut reader, mut writer) = stream.into_split();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<u8>>(MAX_IN_FLIGHT);
    let writing = tokio::spawn(async move {
        while let Some(body) = rx.recv().await {
            if write_frame_async(&mut writer, &body).await.is_err() {
                return;
            }
        }
    });
    // At most this many messages of one connection are handled at once; the next frame is
    // not read until one is done, so a peer that sends and never reads holds a bounded amount
    // of memory (each message may be up to MAX_IN).
    let running = Arc::new(tokio::sync::Semaphore::new(PER_CONNECTION));
    let me = super::browser::connection_id();
    loop {
        let frame = tokio::select! {
            f = read_frame_async(&mut reader, MAX_IN) => f,
            () = bridge.closing.cancelled() => break,
        };
        match frame {
            Ok(Frame::Message(body)) => {
                // The browser's own messages: quick, answered in order, never queued behind
                // calls that wait for the person.
                match browser_message(&body) {
                    Some(BrowserMessage::Hello(tools)) => {
                        bridge.browsers().hello(me, tx.clone(), tools);
                        let ack = br#"{"type":"browser.hello","ok":true}"#.to_vec();
                        let _ = tx.send(ack).await;
                        continue;
                    }
                    Some(BrowserMessage::Result(m)) => {
                        bridge.browsers().result(me, m);
                        continue;
                    }
                    Some(BrowserMessage::PageTools(tools)) => {
                        bridge.browsers().set_page_tools(me, tools);
                        continue;
                    }
                    None => {}
                }
                let Ok(permit) = Arc::clone(&running).acquire_owned().await else {
                    break;
                };
                let bridge = Arc::clone(&bridge);
                let tx = tx.clone();
                // Calls run side by side, as over HTTP: one waiting for the person does not
                // hold up the next (answers carry their callId).
                tokio::spawn(async move {
                    let answer = handle(&bridge, &body).await;
                    drop(body);
                    let _ = tx.send(answer).await;
                    drop(permit);
                });
            }
            Ok(Frame::TooBig(len)) => {
                let _ = tx
                    .send(error_bytes(too_big_message(len, MAX_IN), None))
                    .await;
            }
            Ok(Frame::End) | Err(_) => break,
        }
    }
    bridge.browsers().gone(me);
    drop(tx);
    let _ = writing.await;
}

enum BrowserMessage {
    /// `{"type":"browser.hello","tools":bool}`
    Hello(bool),
    /// `{"type":"browser.result","id",…}`
    Result(serde_json::Map<String, serde_json::Value>),
    /// `{"type":"browser.pageTools","tools":[…]}` (entries that do not parse are dropped)
    PageTools(Vec<crate::tools::browser::PageTool>),
}

/// The extension's browser-tool messages (DESIGN §8.3); anything else is a call or pairing.
fn browser_message(body: &[u8]) -> Option<BrowserMessage> {
    // Cheap test first: a call can be megabytes, and is parsed again by the engine.
    if !body.windows(9).any(|w| w == b"\"browser.") {
        return None;
    }
    let serde_json::Value::Object(m) = serde_json::from_slice(body).ok()? else {
        return None;
    };
    match m.get("type").and_then(|t| t.as_str()) {
        Some("browser.hello") => Some(BrowserMessage::Hello(
            m.get("tools").and_then(|t| t.as_bool()) == Some(true),
        )),
        Some("browser.result") => Some(BrowserMessage::Result(m)),
        Some("browser.pageTools") => Some(BrowserMessage::PageTools(
            m.get("tools")
                .and_then(|t| t.as_array())
                .map(|list| {
                    list.iter()
                        .filter_map(|t| serde_json::from_value(t.clone()).ok())
                        .collect()
                })
                .unwrap_or_default(),
        )),
        _ => None,
    }
}

/// One message: a call in the shape of `POST /exec`, run through the broker and the engine
/// like one; the answer is the result object, or `{"error"}` when the message is not a call.
async fn handle(bridge: &Arc<Bridge>, body: &[u8]) -> Vec<u8> {
    let Ok(text) = std::str::from_utf8(body) else {
        return error_bytes("the message is not UTF-8 JSON", None);
    };
    if is_pair_message(text) {
        return pair(bridge).await;
    }
    let mut req = match parse_request(text) {
        Ok(r) => r,
        Err(e) => {
            let call_id = serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .and_then(|v| v.get("callId")?.as_str().map(str::to_owned));
            return error_bytes(e, call_id);
        }
    };
    let id = match super::assign_call_id(&mut req) {
        Ok(id) => id,
        Err(e) => return error_bytes(e, None),
    };
    req.client = None;
    // The same per-reply ledger as `POST /exec`: at most 20 calls of one reply, and none after
    // the person denied one of its calls.
    let reply = req.reply.clone();
    if let Err(why) = bridge.admit_reply(reply.as_deref()) {
        let result = crate::reply::not_run_result(&id, &req.name, &why);
        return serde_json::to_vec(&result)
            .unwrap_or_else(|e| error_bytes(e.to_string(), Some(id)));
    }
    let Some(slot) = InFlight::take(&bridge.in_flight_of(None)) else {
        return error_bytes(
            format!(
                "{MAX_IN_FLIGHT} calls are still running or waiting for approval; wait for some to finish"
            ),
            Some(id),
        );
    };
    let broker = Arc::clone(bridge.broker());
    let completion = match broker.begin(&id) {
        Ok(c) => c,
        Err(e) => return error_bytes(e.to_string(), Some(id)),
    };
    let task_bridge = Arc::clone(bridge);
    tokio::spawn(async move {
        let _slot = slot;
        let name = req.name.clone();
        // Source::Bridge: the extension is the caller either way; the transport differs.
        let cancel = completion.cancellation();
        let result = task_bridge
            .engine()
            .call_until(req, Source::Bridge, cancel)
            .await;
        task_bridge.record_reply(reply.as_deref(), &name, &result);
        completion.finish(result);
    });
    let result = broker.wait(&id, Duration::MAX).await.flatten();
    broker.forget(&id);
    let result = result.unwrap_or_else(|| {
        crate::reply::not_run_result(&id, "call", "the bridge is shutting down; try again")
    });
    serde_json::to_vec(&result).unwrap_or_else(|e| error_bytes(e.to_string(), Some(id)))
}

/// Whether a message is the extension's pairing request, `{"type":"pair"}`.
fn is_pair_message(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v.get("type").and_then(|t| t.as_str()) == Some("pair"))
}

/// One pairing question at a time: a second request while one waits is refused, not queued,
/// so a looping caller cannot stack dialogs.
static PAIRING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `{"type":"pair"}`: ask the person through the host's approver whether the extension may
/// have the pairing key; on an explicit yes answer `{"type":"paired","key"}` (the key signed
/// HTTP requests use), otherwise `{"type":"pair","error"}`. No answer within the approval
/// timeout is a refusal. Reached only over this socket (0700 folder, peer uid checked) — there
/// is no HTTP route that hands out the key.
async fn pair(bridge: &Arc<Bridge>) -> Vec<u8> {
    let refuse = |why: String| {
        serde_json::to_vec(&serde_json::json!({"type": "pair", "error": why}))
            .unwrap_or_else(|_| error_bytes("internal error", None))
    };
    let Ok(_one) = PAIRING.try_lock() else {
        return refuse(
            "a pairing question is already waiting for an answer in ground-link; answer it there"
                .to_string(),
        );
    };
    let engine = bridge.engine();
    let timeout = engine.config().approval_timeout;
    let origin = allowed_origin();
    let answer = tokio::select! {
        a = tokio::time::timeout(timeout, engine.approver().ask_pairing(&origin, timeout)) => a,
        () = bridge.closing.cancelled() => Ok(Err("ground-link shut down before anyone answered".to_string())),
    };
    // On record either way (a pairing hands out the key every later call is signed with); a
    // yes that cannot be recorded is refused, as a call that cannot be recorded is not run.
    let answered = match &answer {
        Ok(Ok(())) => "allow once".to_string(),
        Ok(Err(why)) => format!("deny: {why}"),
        Err(_) => "timeout".to_string(),
    };
    let allowed = matches!(answer, Ok(Ok(())));
    if let Some(audit) = engine.audit() {
        let entry = crate::audit::AuditEntry {
            time: String::new(),
            source: Source::Bridge,
            client: None,
            session: None,
            call_id: format!(
                "pair-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_millis())
            ),
            tool: "pair".to_string(),
            origin: None,
            url: None,
            args: serde_json::json!({"origin": origin}),
            decision: None,
            answer: Some(answered),
            duration_ms: 0,
            status: if allowed {
                crate::protocol::CallStatus::Success
            } else {
                crate::protocol::CallStatus::Denied
            },
            output_bytes: 0,
            note: Some("pairing over native messaging".to_string()),
        };
        if let Err(e) = audit.append(&entry) {
            return refuse(format!(
                "pairing refused: the audit log cannot record it ({e}); fix the audit folder, then try again"
            ));
        }
    }
    match answer {
        Ok(Ok(())) => {
            eprintln!("ground-link: paired the browser extension {origin} over native messaging");
            serde_json::to_vec(&serde_json::json!({"type": "paired", "key": bridge.token.secret()}))
                .unwrap_or_else(|_| error_bytes("internal error", None))
        }
        Ok(Err(why)) => refuse(format!(
            "pairing refused: {why}. Open the extension popup to try again, or paste the output of `ground-link token` there"
        )),
        Err(_) => refuse(format!(
            "pairing refused: nobody answered ground-link's question within {} s. Open the extension popup to try again",
            timeout.as_secs()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chrome's id for an extension: the first 16 bytes of SHA-256 over its public key, each
    /// hex digit mapped 0–f → a–p.
    #[test]
    fn extension_id_is_the_one_the_manifest_key_pins() {
        let manifest: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/extension/src/manifest.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let key = base64_decode(manifest["key"].as_str().unwrap());
        use sha2::Digest;
        let digest = sha2::Sha256::digest(&key);
        let id: String = hex::encode(&digest[..16])
            .chars()
            .map(|c| (b'a' + c.to_digit(16).unwrap() as u8) as char)
            .collect();
        assert_eq!(id, EXTENSION_ID);
    }

    fn base64_decode(s: &str) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let (mut acc, mut bits) = (0u32, 0);
        for b in s.bytes().filter(|&b| b != b'=') {
            let v = ALPHABET.iter().position(|&a| a == b).unwrap() as u32;
            acc = (acc << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
                acc &= (1 << bits) - 1;
            }
        }
        out
    }

    #[test]
    fn frames_round_trip_and_oversized_ones_are_drained_not_kept() {
        let mut buf = Vec::new();
        write_frame(&mut buf, br#"{"a":1}"#).unwrap();
        write_frame(&mut buf, &[b'x'; 100]).unwrap();
        write_frame(&mut buf, b"{}").unwrap();
        buf.extend_from_slice(&[5, 0]); // a length cut short
        let mut r = std::io::Cursor::new(buf);
        assert_eq!(
            read_frame(&mut r, 50).unwrap(),
            Frame::Message(br#"{"a":1}"#.to_vec())
        );
        assert_eq!(read_frame(&mut r, 50).unwrap(), Frame::TooBig(100));
        assert_eq!(
            read_frame(&mut r, 50).unwrap(),
            Frame::Message(b"{}".to_vec())
        );
        assert_eq!(read_frame(&mut r, 50).unwrap(), Frame::End);
    }

    #[test]
    fn only_our_own_uid_is_a_peer() {
        let me = rustix::process::geteuid().as_raw();
        assert!(peer_allowed(me));
        assert!(!peer_allowed(me.wrapping_add(1)));
    }

    #[test]
    fn a_folder_others_can_enter_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("gl");
        ensure_private_dir(&d).unwrap();
        assert_eq!(std::fs::metadata(&d).unwrap().mode() & 0o777, 0o700);
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = ensure_private_dir(&d).unwrap_err().to_string();
        assert!(e.contains("must be 700"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&d, &link).unwrap();
        assert!(check_private_dir(&link).is_err());
    }
}

//! `ground-link native-host`: the process Chrome starts for `connectNative` (DESIGN §8.2), and
//! `install-native-host`, which tells each browser where it is.
//!
//! The host decides nothing: it checks the caller origin, unframes the extension's messages,
//! relays each to the running bridge's socket ([`crate::bridge::native`]) and frames the
//! answers back. It guarantees that:
//! - it runs for the pinned extension only (any other caller origin: exit 2 before reading);
//! - a message over [`MAX_IN`] or one that is not JSON gets an `{"error"}` answer and the host
//!   goes on with the next one; nothing the browser sends makes it crash;
//! - no frame it writes is over [`MAX_OUT`] (Chrome's limit): a bigger answer is sent as
//!   `{"type":"chunk","id","index","count","data"}` pieces whose `data` strings, joined in
//!   `index` order, are the answer's JSON text;
//! - when nothing listens on the socket, each message is answered with an error that says how
//!   to start ground-link, and it tries again at the next message;
//! - when the link to the bridge drops, the extension is told (`{"type":"relay.down"}`), so it
//!   can register its browser tools again with the bridge that comes next.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::bridge::native::{
    Frame, HOST_NAME, MAX_IN, MAX_OUT, MAX_RELAY, allowed_origin, check_private_dir, error_bytes,
    read_frame, socket_path, too_big_message, write_frame,
};

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(
        "refusing caller origin {0:?}: this native host serves only the ground-link extension ({1}); \
         Chrome starts it, with that origin as the only argument"
    )]
    WrongOrigin(String, String),
    #[error("reading from the browser: {0}")]
    Stdin(std::io::Error),
    #[error("writing to the browser: {0}")]
    Stdout(std::io::Error),
}

/// Whether `origin` is the pinned extension (with or without Chrome's trailing slash).
pub fn origin_allowed(origin: &str) -> bool {
    let allowed = allowed_origin();
    origin == allowed || Some(origin) == allowed.strip_suffix('/')
}

/// Where the host's answers go: Chrome's stdout, one whole frame at a time.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// One piece of an answer over [`MAX_OUT`].
#[derive(Serialize)]
struct Chunk<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    id: String,
    index: usize,
    count: usize,
    data: &'a str,
}

/// Room left in a frame for the chunk envelope around `data`.
const ENVELOPE: usize = 256;

/// Split `text` (a JSON answer) into frames Chrome accepts: itself when it fits, else chunks.
pub fn frames_for(text: &str, id: &str) -> Vec<Vec<u8>> {
    if text.len() <= MAX_OUT {
        return vec![text.as_bytes().to_vec()];
    }
    // Escaping can grow a piece (up to 6× for control characters), so a piece that does not
    // fit once escaped is halved until it does.
    let mut pieces: Vec<&str> = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut len = (text.len() - start).min(MAX_OUT / 2);
        loop {
            let mut end = start + len;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let piece = &text[start..end];
            let escaped = serde_json::to_string(piece)
                .map(|s| s.len())
                .unwrap_or(usize::MAX);
            if (escaped + ENVELOPE <= MAX_OUT && !piece.is_empty()) || len <= 8 {
                pieces.push(piece);
                start = end;
                break;
            }
            len /= 2;
        }
    }
    let count = pieces.len();
    pieces
        .into_iter()
        .enumerate()
        .map(|(index, data)| {
            serde_json::to_vec(&Chunk {
                kind: "chunk",
                id: id.to_string(),
                index,
                count,
                data,
            })
            .unwrap_or_default()
        })
        .collect()
}

static NEXT_CHUNKED: AtomicU64 = AtomicU64::new(1);

fn send(out: &Out, body: &[u8]) -> std::io::Result<()> {
    let text = String::from_utf8_lossy(body);
    let id = format!("a{}", NEXT_CHUNKED.fetch_add(1, Ordering::Relaxed));
    let mut w = out.lock().unwrap_or_else(|p| p.into_inner());
    // All pieces of one answer are written under one lock: another answer never lands between.
    for frame in frames_for(&text, &id) {
        write_frame(&mut *w, &frame)?;
    }
    Ok(())
}

fn not_running(path: &Path, why: &str) -> String {
    format!(
        "ground-link is not running (nothing answers on {} : {why}); start the ground-link app, \
         or run `ground-link serve --dir <folder>` in a terminal, then try again",
        path.display()
    )
}

/// Told to the extension when the link to the bridge drops.
const RELAY_DOWN: &[u8] = br#"{"type":"relay.down"}"#;

/// The open relay to the bridge; its reader thread clears `alive` when the bridge goes away.
struct Relay {
    stream: UnixStream,
    alive: Arc<AtomicBool>,
}

fn connect(path: &Path, out: &Out) -> Result<Relay, String> {
    if let Some(dir) = path.parent() {
        if !dir.exists() {
            return Err(not_running(path, "its folder does not exist"));
        }
        check_private_dir(dir).map_err(|e| e.to_string())?;
    }
    let stream = UnixStream::connect(path).map_err(|e| not_running(path, &e.to_string()))?;
    let mut reading = stream.try_clone().map_err(|e| e.to_string())?;
    let alive = Arc::new(AtomicBool::new(true));
    let (flag, out) = (Arc::clone(&alive), Arc::clone(out));
    std::thread::spawn(move || {
        while let Ok(Frame::Message(body)) = read_frame(&mut reading, MAX_RELAY) {
            if send(&out, &body).is_err() {
                break;
            }
        }
        flag.store(false, Ordering::Release);
        // The extension's browser registration lived on this link: it says hello again (its
        // next message makes the host connect anew).
        let _ = send(&out, RELAY_DOWN);
    });
    Ok(Relay { stream, alive })
}

/// Serve Chrome on stdin/stdout until it closes stdin. `origin` is checked first.
pub fn run(origin: &str) -> Result<(), HostError> {
    if !origin_allowed(origin) {
        return Err(HostError::WrongOrigin(origin.to_string(), allowed_origin()));
    }
    let out: Out = Arc::new(Mutex::new(Box::new(std::io::stdout())));
    let mut stdin = std::io::stdin().lock();
    serve(&mut stdin, &out, socket_path().ok())
}

fn serve(
    input: &mut impl std::io::Read,
    out: &Out,
    path: Option<PathBuf>,
) -> Result<(), HostError> {
    let reply = |body: Vec<u8>| send(out, &body).map_err(HostError::Stdout);
    let mut relay: Option<Relay> = None;
    loop {
        let body = match read_frame(input, MAX_IN).map_err(HostError::Stdin)? {
            Frame::End => return Ok(()),
            Frame::TooBig(len) => {
                reply(error_bytes(too_big_message(len, MAX_IN), None))?;
                continue;
            }
            Frame::Message(body) => body,
        };
        let value: serde_json::Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                reply(error_bytes(
                    format!("the message is not valid JSON: {e}"),
                    None,
                ))?;
                continue;
            }
        };
        let call_id = value
            .get("callId")
            .and_then(|c| c.as_str())
            .map(str::to_owned);
        if relay
            .as_ref()
            .is_some_and(|r| !r.alive.load(Ordering::Acquire))
        {
            relay = None;
        }
        if relay.is_none() {
            relay = match &path {
                None => {
                    reply(error_bytes(
                        crate::bridge::native::NativeError::NoDir.to_string(),
                        call_id,
                    ))?;
                    continue;
                }
                Some(p) => match connect(p, out) {
                    Ok(r) => Some(r),
                    Err(why) => {
                        reply(error_bytes(why, call_id))?;
                        continue;
                    }
                },
            };
        }
        if let Some(r) = &mut relay {
            if let Err(e) = write_frame(&mut r.stream, &body) {
                relay = None;
                reply(error_bytes(
                    format!("ground-link went away ({e}); start it again, then retry"),
                    call_id,
                ))?;
            }
        }
    }
}

/// The browsers `install-native-host` knows, with their folder under `~/.config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Browser {
    Chrome,
    Chromium,
    Edge,
    Brave,
}

impl Browser {
    pub const ALL: [Browser; 4] = [
        Browser::Chrome,
        Browser::Chromium,
        Browser::Edge,
        Browser::Brave,
    ];

    /// The browser's user-data folder, relative to `~/.config`.
    pub fn config_folder(self) -> &'static str {
        match self {
            Browser::Chrome => "google-chrome",
            Browser::Chromium => "chromium",
            Browser::Edge => "microsoft-edge",
            Browser::Brave => "BraveSoftware/Brave-Browser",
        }
    }
}

impl Browser {
    /// Where the browser reads system-wide host manifests (below `/etc`), if it has such a
    /// place on Linux. Brave documents none of its own.
    pub fn system_folder(self) -> Option<&'static str> {
        match self {
            Browser::Chrome => Some("opt/chrome/native-messaging-hosts"),
            Browser::Chromium => Some("chromium/native-messaging-hosts"),
            Browser::Edge => Some("opt/edge/native-messaging-hosts"),
            Browser::Brave => None,
        }
    }
}

/// Where the `.deb` installs the CLI, which its system-wide manifests name.
pub const PACKAGED_EXE: &str = "/usr/bin/ground-link";

/// The host manifest Chrome reads: `path` is this binary, `allowed_origins` exactly the
/// pinned extension.
pub fn manifest(exe: &Path) -> serde_json::Value {
    serde_json::json!({
        "name": HOST_NAME,
        "description": "ground-link: lets the ground-link browser extension reach the ground-link app on this computer",
        "path": exe.display().to_string(),
        "type": "stdio",
        "allowed_origins": [allowed_origin()],
    })
}

pub fn manifest_file_name() -> String {
    format!("{HOST_NAME}.json")
}

/// Write the manifest into `dir` (created if missing); returns the file written.
pub fn install_into(dir: &Path, exe: &Path) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let file = dir.join(manifest_file_name());
    let tmp = dir.join(format!(".{}.tmp", manifest_file_name()));
    let text = serde_json::to_string_pretty(&manifest(exe)).map_err(std::io::Error::other)?;
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, &file)?;
    Ok(file)
}

/// Remove the manifest from `dir`; `Ok(None)` when there was none.
pub fn uninstall_from(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let file = dir.join(manifest_file_name());
    match std::fs::remove_file(&file) {
        Ok(()) => Ok(Some(file)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_answers_split_into_chunks_that_fit_and_join_back() {
        // Control characters grow six-fold when escaped: the worst case for the chunk size.
        let text = format!(
            "{{\"output\":{}}}",
            serde_json::to_string(&"\u{1}é\"\\x".repeat(400_000)).unwrap()
        );
        let frames = frames_for(&text, "a1");
        assert!(frames.len() > 1);
        let mut joined = String::new();
        for (i, f) in frames.iter().enumerate() {
            assert!(f.len() <= MAX_OUT, "frame {i} is {} bytes", f.len());
            let v: serde_json::Value = serde_json::from_slice(f).unwrap();
            assert_eq!(v["type"], "chunk");
            assert_eq!(v["index"], i);
            assert_eq!(v["count"], frames.len());
            joined.push_str(v["data"].as_str().unwrap());
        }
        assert_eq!(joined, text);
        assert_eq!(frames_for("{}", "a2"), vec![b"{}".to_vec()]);
    }

    /// The `.deb` ships a manifest file for the system folders; it must be exactly what
    /// `install-native-host --system` writes for the packaged binary.
    #[test]
    fn the_packaged_system_manifest_is_the_one_the_cli_writes() {
        let shipped = include_str!("../src-tauri/packaging/dev.groundlink.host.json");
        let shipped: serde_json::Value = serde_json::from_str(shipped).unwrap();
        assert_eq!(shipped, manifest(Path::new(PACKAGED_EXE)));
        let conf: serde_json::Value =
            serde_json::from_str(include_str!("../src-tauri/tauri.conf.json")).unwrap();
        let files = &conf["bundle"]["linux"]["deb"]["files"];
        for b in Browser::ALL {
            if let Some(folder) = b.system_folder() {
                let at = format!("/etc/{folder}/{}", manifest_file_name());
                assert_eq!(
                    files[&at], "packaging/dev.groundlink.host.json",
                    "the .deb installs {at}"
                );
            }
        }
        assert_eq!(files[PACKAGED_EXE], "../target/release/ground-link");
    }

    #[test]
    fn only_the_pinned_origin_is_served() {
        assert!(origin_allowed(&allowed_origin()));
        assert!(origin_allowed(allowed_origin().trim_end_matches('/')));
        assert!(!origin_allowed(
            "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"
        ));
        assert!(!origin_allowed(&format!("{}x", allowed_origin())));
        assert!(!origin_allowed(""));
    }
}

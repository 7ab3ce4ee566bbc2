//! Signed requests and signed answers (DESIGN §6): the pairing key never crosses the wire.
//!
//! A client proves it holds the key with an HMAC-SHA256 over the method, the path and query,
//! the `Host:port` it dialled, a fresh nonce, a timestamp and the body's SHA-256; the bridge
//! refuses a stale timestamp or a nonce it has seen, and answers with an HMAC over the
//! request's nonce, the status and the answer body (each `/events` message with an HMAC over
//! the nonce, its sequence number and its data). So a process squatting on the port learns
//! nothing it can replay, cannot relay to a bridge on another port (the port is signed), and
//! cannot forge an answer the client would accept. Each MAC starts with its own label, so a
//! request MAC is never a valid answer MAC or the other way round.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

type HmacSha256 = Hmac<Sha256>;

pub const HEADER_NONCE: &str = "x-ground-link-nonce";
pub const HEADER_TIME: &str = "x-ground-link-time";
pub const HEADER_SIGNATURE: &str = "x-ground-link-signature";
pub const HEADER_ANSWER: &str = "x-ground-link-answer";
const LABEL_REQUEST: &str = "ground-link request v1";
const LABEL_ANSWER: &str = "ground-link answer v1";
const LABEL_EVENT: &str = "ground-link event v1";
/// Stands for the body digest of a streamed answer (`/events`), whose messages are signed one
/// by one instead.
pub const STREAM_BODY: &str = "stream";
/// How far a request's timestamp may be from the bridge's clock. Both ends run on this machine,
/// so only the time the request took to arrive matters; nonces are remembered for twice this.
pub const MAX_SKEW_MS: u64 = 30_000;
/// Nonces remembered at most (a flood of validly signed requests beyond this is refused until
/// old ones expire, rather than letting a replay through).
pub const MAX_NONCES: usize = 100_000;

/// The names and labels, for the TypeScript side (`src/tsgen.rs`).
pub fn constants() -> [(&'static str, &'static str); 8] {
    [
        ("headerNonce", HEADER_NONCE),
        ("headerTime", HEADER_TIME),
        ("headerSignature", HEADER_SIGNATURE),
        ("headerAnswer", HEADER_ANSWER),
        ("labelRequest", LABEL_REQUEST),
        ("labelAnswer", LABEL_ANSWER),
        ("labelEvent", LABEL_EVENT),
        ("streamBody", STREAM_BODY),
    ]
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    #[error(
        "signed request without {0}; send {HEADER_NONCE}, {HEADER_TIME} and {HEADER_SIGNATURE}"
    )]
    Missing(&'static str),
    #[error("{0} is malformed: {1}")]
    Malformed(&'static str, &'static str),
    #[error(
        "the signature does not match this bridge's pairing key (or, on /mcp, a client token not revoked), this port or this request"
    )]
    BadSignature,
    #[error(
        "the request's timestamp is {0} ms away from the bridge's clock (at most {MAX_SKEW_MS}); send a fresh one"
    )]
    Stale(u64),
    #[error("this nonce was already used: a replayed request is refused")]
    Replayed,
    #[error(
        "the request was signed before this bridge started, so it was made for something else on this port; send a fresh one"
    )]
    BeforeStart,
    #[error("too many signed requests in the last minute; try again shortly")]
    Full,
}

/// Hex SHA-256 of a body (the empty body included).
pub fn body_digest(body: &[u8]) -> String {
    hex::encode(Sha256::digest(body))
}

fn mac(key: &[u8], parts: &[&str]) -> String {
    // HMAC takes a key of any length; `new_from_slice` cannot fail for it.
    let Ok(mut m) = HmacSha256::new_from_slice(key) else {
        return String::new();
    };
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            m.update(b"\n");
        }
        m.update(p.as_bytes());
    }
    hex::encode(m.finalize().into_bytes())
}

/// What a request's signature covers. `host` is the `Host` header (`127.0.0.1:18080`), `path`
/// the path with its query string, exactly as sent.
pub struct RequestParts<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub host: &'a str,
    pub nonce: &'a str,
    pub time_ms: u64,
    pub body_digest: &'a str,
}

pub fn request_mac(key: &[u8], r: &RequestParts<'_>) -> String {
    let time = r.time_ms.to_string();
    let method = r.method.to_ascii_uppercase();
    let host = r.host.to_ascii_lowercase();
    mac(
        key,
        &[
            LABEL_REQUEST,
            &method,
            r.path,
            &host,
            r.nonce,
            &time,
            r.body_digest,
        ],
    )
}

pub fn answer_mac(key: &[u8], nonce: &str, status: u16, body_digest: &str) -> String {
    mac(
        key,
        &[LABEL_ANSWER, nonce, &status.to_string(), body_digest],
    )
}

/// The `seq`-th message (from 0) of a signed `/events` stream. Counting on both sides means a
/// message dropped, repeated or reordered in between shows as a mismatch.
pub fn event_mac(key: &[u8], nonce: &str, seq: u64, data: &str) -> String {
    mac(key, &[LABEL_EVENT, nonce, &seq.to_string(), data])
}

/// Constant-time comparison of a presented hex MAC with the expected one.
pub fn same(expected: &str, presented: &str) -> bool {
    expected.len() == presented.len() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

pub fn check_nonce(nonce: &str) -> Result<(), SignError> {
    if is_hex(nonce, 32) {
        Ok(())
    } else {
        Err(SignError::Malformed(
            HEADER_NONCE,
            "32 lowercase hex digits (128 random bits)",
        ))
    }
}

pub fn check_signature(sig: &str) -> Result<(), SignError> {
    if is_hex(sig, 64) {
        Ok(())
    } else {
        Err(SignError::Malformed(
            HEADER_SIGNATURE,
            "64 lowercase hex digits (HMAC-SHA256)",
        ))
    }
}

pub fn parse_time(text: &str) -> Result<u64, SignError> {
    if text.is_empty() || text.len() > 16 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(SignError::Malformed(
            HEADER_TIME,
            "Unix time in milliseconds",
        ));
    }
    text.parse()
        .map_err(|_| SignError::Malformed(HEADER_TIME, "Unix time in milliseconds"))
}

/// A fresh nonce: 128 random bits, hex.
pub fn fresh_nonce() -> Result<String, getrandom::Error> {
    crate::random::hex(16)
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The headers a client sends with one signed request.
#[derive(Debug, Clone)]
pub struct SignedHeaders {
    pub nonce: String,
    pub time_ms: u64,
    pub signature: String,
}

/// Sign one request as a client does (`ground-link mcp`'s relay, the tests).
pub fn sign_request(
    key: &[u8],
    method: &str,
    path: &str,
    host: &str,
    body: &[u8],
) -> Result<SignedHeaders, getrandom::Error> {
    let nonce = fresh_nonce()?;
    let time_ms = now_ms();
    let digest = body_digest(body);
    let signature = request_mac(
        key,
        &RequestParts {
            method,
            path,
            host,
            nonce: &nonce,
            time_ms,
            body_digest: &digest,
        },
    );
    Ok(SignedHeaders {
        nonce,
        time_ms,
        signature,
    })
}

/// Nonces seen within the freshness window; a second use is a replay.
pub struct NonceBook {
    inner: Mutex<Book>,
}

#[derive(Default)]
struct Book {
    seen: HashMap<String, u64>,
    /// (expiry, nonce) in arrival order, to forget old ones cheaply.
    order: VecDeque<(u64, String)>,
}

impl Default for NonceBook {
    fn default() -> Self {
        NonceBook {
            inner: Mutex::new(Book::default()),
        }
    }
}

impl NonceBook {
    /// Accept a request's (already MAC-checked) nonce and time once, at `now_ms`. The MAC is
    /// checked first so that only the key's holder can put anything in here.
    pub fn admit(&self, nonce: &str, time_ms: u64, now_ms: u64) -> Result<(), SignError> {
        let skew = now_ms.abs_diff(time_ms);
        if skew > MAX_SKEW_MS {
            return Err(SignError::Stale(skew));
        }
        let mut book = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        while book.order.front().is_some_and(|(exp, _)| *exp < now_ms) {
            if let Some((_, old)) = book.order.pop_front() {
                book.seen.remove(&old);
            }
        }
        if book.seen.contains_key(nonce) {
            return Err(SignError::Replayed);
        }
        if book.seen.len() >= MAX_NONCES {
            return Err(SignError::Full);
        }
        // Kept until no timestamp it could carry is fresh any more.
        let expiry = now_ms.max(time_ms) + 2 * MAX_SKEW_MS;
        book.seen.insert(nonce.to_string(), expiry);
        book.order.push_back((expiry, nonce.to_string()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_vectors_hold() {
        // The same vectors are checked by the extension (extension/test/sign.test.ts).
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/signing.json"),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let key = v["key"].as_str().unwrap().as_bytes();
        for case in v["requests"].as_array().unwrap() {
            let s = |k: &str| case[k].as_str().unwrap().to_string();
            let digest = body_digest(s("body").as_bytes());
            assert_eq!(digest, s("bodyDigest"));
            let got = request_mac(
                key,
                &RequestParts {
                    method: &s("method"),
                    path: &s("path"),
                    host: &s("host"),
                    nonce: &s("nonce"),
                    time_ms: case["timeMs"].as_u64().unwrap(),
                    body_digest: &digest,
                },
            );
            assert_eq!(got, s("signature"), "{case}");
        }
        for case in v["answers"].as_array().unwrap() {
            let s = |k: &str| case[k].as_str().unwrap().to_string();
            let digest = body_digest(s("body").as_bytes());
            let status = case["status"].as_u64().unwrap() as u16;
            assert_eq!(
                answer_mac(key, &s("nonce"), status, &digest),
                s("signature")
            );
        }
        for case in v["events"].as_array().unwrap() {
            let s = |k: &str| case[k].as_str().unwrap().to_string();
            let seq = case["seq"].as_u64().unwrap();
            assert_eq!(event_mac(key, &s("nonce"), seq, &s("data")), s("signature"));
        }
    }

    #[test]
    fn every_covered_part_changes_the_signature() {
        let key = b"k";
        let base = RequestParts {
            method: "POST",
            path: "/exec",
            host: "127.0.0.1:18080",
            nonce: "00000000000000000000000000000000",
            time_ms: 1,
            body_digest: "d",
        };
        let sig = request_mac(key, &base);
        let variants = [
            RequestParts {
                method: "GET",
                ..base
            },
            RequestParts {
                path: "/exec?x",
                ..base
            },
            RequestParts {
                host: "127.0.0.1:18081",
                ..base
            },
            RequestParts {
                nonce: "00000000000000000000000000000001",
                ..base
            },
            RequestParts { time_ms: 2, ..base },
            RequestParts {
                body_digest: "e",
                ..base
            },
        ];
        for v in &variants {
            assert_ne!(request_mac(key, v), sig);
        }
        assert_ne!(request_mac(b"other", &base), sig);
        // Labels keep the three kinds apart.
        assert_ne!(
            answer_mac(key, base.nonce, 200, "d"),
            event_mac(key, base.nonce, 200, "d")
        );
    }

    #[test]
    fn nonces_are_single_use_and_fresh() {
        let book = NonceBook::default();
        let now = 1_000_000;
        assert_eq!(book.admit("a", now, now), Ok(()));
        assert_eq!(book.admit("a", now, now + 10), Err(SignError::Replayed));
        assert!(matches!(
            book.admit("b", now - MAX_SKEW_MS - 1, now),
            Err(SignError::Stale(_))
        ));
        assert!(matches!(
            book.admit("c", now + MAX_SKEW_MS + 1, now),
            Err(SignError::Stale(_))
        ));
        // Once every timestamp it could carry is stale, a nonce may be forgotten.
        assert_eq!(
            book.admit("d", now + 3 * MAX_SKEW_MS, now + 3 * MAX_SKEW_MS),
            Ok(())
        );
        assert_eq!(book.inner.lock().unwrap().seen.len(), 1);
    }
}

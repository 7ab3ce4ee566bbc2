//! Random identifiers and secrets, hex-encoded: the one place that asks the operating system.

use std::sync::atomic::{AtomicU64, Ordering};

/// `bytes` random bytes from the operating system, as lowercase hex (twice as many characters).
/// For secrets (tokens, nonces): an error when the system has no randomness to give.
pub fn hex(bytes: usize) -> Result<String, getrandom::Error> {
    let mut b = vec![0u8; bytes];
    getrandom::fill(&mut b)?;
    Ok(hex::encode(b))
}

/// Like [`hex`], for names that must differ and that page or model content must not predict
/// (call ids, delimiters, temporary files) but that are no secret: should the system have no
/// randomness, the clock and a counter stand in, never a fixed value.
pub fn unique_hex(bytes: usize) -> String {
    hex(bytes).unwrap_or_else(|_| {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mixed = nanos ^ COUNTER.fetch_add(1, Ordering::Relaxed).rotate_left(40);
        let mut s = format!("{mixed:016x}").repeat(bytes.div_ceil(8).max(1));
        s.truncate(bytes * 2);
        s
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn lengths_and_uniqueness() {
        assert_eq!(super::hex(32).unwrap().len(), 64);
        assert_eq!(super::unique_hex(6).len(), 12);
        assert_ne!(super::unique_hex(8), super::unique_hex(8));
        assert!(
            super::hex(4)
                .unwrap()
                .chars()
                .all(|c| c.is_ascii_hexdigit())
        );
    }
}

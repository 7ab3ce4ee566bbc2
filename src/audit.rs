//! The hash-chained audit log (DESIGN §5.6).

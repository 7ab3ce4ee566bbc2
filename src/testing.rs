//! Shared by the test suites (unit and integration); not part of the product.

/// How many cases a property test runs: `PROPTEST_CASES` when set (`make fuzz` sets it high for
/// every property at once), else the property's own `default`, chosen to keep `make test` brief.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

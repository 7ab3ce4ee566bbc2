//! The `<tool>{json}</tool>` block parser (DESIGN §2.1).

//! PreToolUse / PostToolUse hooks (DESIGN §5.5).

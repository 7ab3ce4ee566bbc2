#!/usr/bin/env bash
# `make bench`: every benchmark of DESIGN §10 that lives in this repository, with the peer
# measured in the same run. Figures go into notes, never into tests.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== permission engine"; cargo bench --locked --bench engine
echo "== grep/glob vs rg";   scripts/bench-search.sh "${RUNS:-11}"
echo "== bridge under load"; scripts/bench-bridge.sh "${SECONDS_UNDER_LOAD:-10}"
echo "== MCP tools/call vs POST /exec"; cargo bench --locked --bench bridge
echo "== exec_cmd \"true\" end to end"; cargo build --locked --release --bin ground-link >/dev/null && scripts/bench-exec.sh "${CARGO_TARGET_DIR:-target}/release/ground-link"
echo "== browser tool round trip (MCP -> extension -> page)"
scripts/install-deps.sh extension
(cd extension && npm ci --no-audit --no-fund --loglevel=error && GROUND_LINK_BIN="$(realpath "${CARGO_TARGET_DIR:-target}")/release/ground-link" npm run bench)
echo "== tray app at rest (PSS of the app and its helpers) and the approval dialog's latency"
scripts/install-deps.sh app
cargo build --locked --release -p ground-link-app >/dev/null && scripts/app-measure.sh

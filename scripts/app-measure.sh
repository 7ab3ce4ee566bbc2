#!/usr/bin/env bash
# Measures the tray app against DESIGN §10: cold start to tray (and bridge listening), memory at
# rest (sum of PSS over the app and its WebKit helpers: before any window, with the dialog
# hidden, and after the idle dialog is ended), and time from a call's arrival to the approval
# dialog rendered.
# Runs the real app under Xvfb and a private D-Bus session. Usage: scripts/app-measure.sh [binary]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${1:-${CARGO_TARGET_DIR:-target}/release/ground-link-app}"
[ -x "$BIN" ] || { echo "build the app first (cargo build --release -p ground-link-app); no $BIN" >&2; exit 2; }
if [ -z "${GL_MEASURE_INNER:-}" ]; then
  export GL_MEASURE_INNER=1 WEBKIT_DISABLE_DMABUF_RENDERER=1
  exec dbus-run-session -- xvfb-run -a -s "-screen 0 1280x1000x24" "$0" "$BIN"
fi
work=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/sandbox"
export XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" GROUND_LINK_MANAGED_FILE="$work/managed.json"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$(date +%s%N)
"$BIN" --dir "$work/sandbox" --port "$port" 2>"$work/log" &
pid=$!
until curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
  kill -0 "$pid" 2>/dev/null || { cat "$work/log"; exit 1; }
  sleep 0.01
done
echo "cold start to bridge answering: $(( ($(date +%s%N) - start) / 1000000 )) ms"
grep -o 'ready in [0-9]* ms' "$work/log" | sed 's/^/app says: tray up and /' || true
# Sum of PSS over the app and its WebKit helpers (one web process per open window, one
# network process once a webview has been made); `$1` says when.
total_pss() {
  local total pss child
  total=$(awk '/^Pss:/{print $2}' /proc/$pid/smaps_rollup)
  echo "$1:"
  echo "  ground-link-app: RSS $(( $(awk '/VmRSS/{print $2}' /proc/$pid/status) / 1024 )) MB, PSS $(( total / 1024 )) MB ($(grep -E "RssAnon|RssFile|RssShmem" /proc/$pid/status | tr -s " \t" " " | tr "\n" " "))"
  for child in $(ps -o pid= --ppid "$pid"); do
    pss=$(awk '/^Pss:/{print $2}' /proc/$child/smaps_rollup 2>/dev/null || echo 0)
    total=$(( total + pss ))
    printf "  %s RSS %d MB, PSS %d MB\n" "$(ps -o comm= -p "$child")" $(( $(ps -o rss= -p "$child") / 1024 )) $(( pss / 1024 ))
  done
  echo "  total PSS, the app and its helpers: $(( total / 1024 )) MB (goal ≤ 120 MB, DESIGN §10)"
}
sleep 5
total_pss "at rest, 5 s after start (no window has been made)"
echo "  largest resident mappings of the app:"
awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6} /^Rss:/{r[name]+=$2} END{for (n in r) printf "%8d kB  %s\n", r[n], (n == "" ? "[anonymous]" : n)}' \
  /proc/$pid/smaps | sort -rn | sed -n '1,6s/^/  /p'
# The token from the one store the app uses (keyring or file), through the CLI beside the app.
cli="$(dirname "$BIN")/ground-link"
if [ -x "$cli" ]; then token=$("$cli" token 2>/dev/null); else token=$(cat "$XDG_CONFIG_HOME/ground-link/token"); fi
for i in 1 2 3 4 5; do
  curl -s -o /dev/null -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
    -d "{\"name\":\"write_file\",\"args\":{\"path\":\"m$i.txt\",\"content\":\"x\"},\"callId\":\"m-$i\",\"waitMs\":1500}" \
    "http://127.0.0.1:$port/exec"
  curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $token" "http://127.0.0.1:$port/calls/m-$i"
  sleep 0.3
done
echo "call arrival to dialog rendered (5 calls; the first makes the window):"
grep -o 'rendered [0-9]* ms after' "$work/log" | sed 's/^/  /'
total_pss "with the dialog hidden after the calls"
# The hidden dialog is ended after LINGER (src-tauri/src/dialog_window.rs, 15 s).
for _ in $(seq 1 60); do
  [ -z "$(ps -o comm= --ppid "$pid" | grep WebKitWebProces || true)" ] && break
  sleep 1
done
total_pss "at rest again, once the idle dialog has been ended"

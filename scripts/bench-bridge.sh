#!/usr/bin/env bash
# Bridge load benchmark (DESIGN §10): 16 connections of auto-allowed `read_file` (4 KiB) for
# 10 s with wrk, against a release `ground-link serve`; nginx serving the same 4 KiB file is
# measured in the same run as the peer (the cost of HTTP alone, with no policy and no audit).
#
#   scripts/bench-bridge.sh [SECONDS]
#
# Prints calls/s, latency p50/p99 at 16 connections and at 1 connection (the closest a client
# gets to server-side overhead), RSS before/after, errors, and audit lines per call.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-10}"
target="${CARGO_TARGET_DIR:-target}"
scripts/install-deps.sh bench
command -v nginx >/dev/null 2>&1 || { apt-get install -y -qq nginx-light >/dev/null 2>&1 || true; }

cargo build --release --locked --bin ground-link >&2
bin="$target/release/ground-link"
work="$(mktemp -d)"
trap 'kill $server ${nginx_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/root" "$work/config" "$work/data"
head -c 4096 /dev/urandom | base64 -w 76 | head -c 4096 > "$work/root/data.txt"
token="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
echo "$token" > "$work/token"

XDG_CONFIG_HOME="$work/config" XDG_DATA_HOME="$work/data" GROUND_LINK_MANAGED_FILE="$work/none.json" \
  "$bin" serve --dir "$work/root" --port 0 --token-file "$work/token" --approval deny > "$work/serve.out" 2> "$work/serve.err" &
server=$!
for _ in $(seq 100); do grep -q listening "$work/serve.out" 2>/dev/null && break; sleep 0.05; done
url="$(head -n1 "$work/serve.out" | awk '{print $NF}')"

cat > "$work/call.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"name":"read_file","args":{"path":"data.txt"}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer $token"
LUA

rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
# Warm up, then measure.
wrk -t1 -c4 -d2s -s "$work/call.lua" "$url/exec" > /dev/null
rss_before=$(rss $server)
lines_before=$(cat "$work"/data/ground-link/audit/*.jsonl | wc -l)
wrk -t2 -c16 -d"${secs}s" --latency -s "$work/call.lua" "$url/exec" > "$work/wrk16.txt"
rss_after=$(rss $server)
lines_after=$(cat "$work"/data/ground-link/audit/*.jsonl | wc -l)
wrk -t1 -c1 -d5s --latency -s "$work/call.lua" "$url/exec" > "$work/wrk1.txt"

reqs=$(awk '/requests in/ {print $1}' "$work/wrk16.txt")
rps=$(awk '/Requests\/sec/ {print $2}' "$work/wrk16.txt")
errs=$(awk '/Non-2xx/ {print $NF}' "$work/wrk16.txt"); errs=${errs:-0}
sockerr=$(grep -c "Socket errors" "$work/wrk16.txt" || true)
p50_16=$(awk '$1=="50%" {print $2}' "$work/wrk16.txt"); p99_16=$(awk '$1=="99%" {print $2}' "$work/wrk16.txt")
p50_1=$(awk '$1=="50%" {print $2}' "$work/wrk1.txt"); p99_1=$(awk '$1=="99%" {print $2}' "$work/wrk1.txt")
audited=$((lines_after - lines_before))

peer_rps="n/a"; peer_p50="n/a"
if command -v nginx >/dev/null 2>&1; then
  port=$((20000 + RANDOM % 20000))
  mkdir -p "$work/nginx/logs"
  cat > "$work/nginx.conf" <<NGX
worker_processes 1; daemon off; pid $work/nginx/nginx.pid; error_log $work/nginx/logs/error.log;
events { worker_connections 1024; }
http { access_log off; server { listen 127.0.0.1:$port; root $work/root; } }
NGX
  nginx -c "$work/nginx.conf" -p "$work/nginx" & nginx_pid=$!
  sleep 0.5
  wrk -t2 -c16 -d"${secs}s" --latency "http://127.0.0.1:$port/data.txt" > "$work/nginx16.txt"
  wrk -t1 -c1 -d5s --latency "http://127.0.0.1:$port/data.txt" > "$work/nginx1.txt"
  peer_rps=$(awk '/Requests\/sec/ {print $2}' "$work/nginx16.txt")
  peer_p50=$(awk '$1=="50%" {print $2}' "$work/nginx1.txt")
fi

echo
echo "bridge: auto-allowed read_file (4 KiB), ${secs}s, 2 cores shared by wrk and the server"
printf '  %-40s %s\n' "calls/s (16 connections)" "$rps   (nginx static file, same run: $peer_rps)"
printf '  %-40s %s\n' "latency p50 / p99 (16 connections)" "$p50_16 / $p99_16"
printf '  %-40s %s\n' "latency p50 / p99 (1 connection)" "$p50_1 / $p99_1   (nginx p50: $peer_p50)"
printf '  %-40s %s\n' "requests / non-2xx / socket errors" "$reqs / $errs / $sockerr"
printf '  %-40s %s\n' "audit lines written during the run" "$audited (one per call: $([ "$audited" -ge "$reqs" ] && echo yes || echo NO))"
printf '  %-40s %s\n' "RSS before / after" "$((rss_before / 1024)) MiB / $((rss_after / 1024)) MiB (growth $(((rss_after - rss_before) / 1024)) MiB)"

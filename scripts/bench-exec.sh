#!/usr/bin/env bash
# What one `exec_cmd "true"` costs end to end (CLI start, policy, root walk, namespaces,
# supervisor, quarantine check), through `ground-link call --approval allow`.
#
#   scripts/bench-exec.sh BINARY [FILES] [CALLS]   (defaults: 200 files in the root, 30 calls)
#
# The root is a fresh temp folder holding FILES empty files (the namespace's root walk grows
# with them), with HOME and the XDG folders inside it. Prints median, mean, min and max wall
# time per call. Compare two binaries by running it for each, alternating.
set -euo pipefail
bin="$1"
files="${2:-200}"
calls="${3:-30}"
base="$(mktemp -d)"
trap 'rm -rf "$base"' EXIT
mkdir -p "$base/proj/d"
(cd "$base/proj/d" && seq "$files" | xargs touch)
export HOME="$base" XDG_CONFIG_HOME="$base/.config" XDG_DATA_HOME="$base/.local/share"
for _ in $(seq "$calls"); do
    start=$(date +%s%N)
    "$bin" call --dir "$base/proj" --approval allow \
        --json '{"name":"exec_cmd","args":{"command":"true"}}' >/dev/null 2>&1
    end=$(date +%s%N)
    echo $(((end - start) / 1000))
done | sort -n | awk -v files="$files" '{a[NR]=$1; s+=$1} END {
    printf "files=%d calls=%d median=%.1fms mean=%.1fms min=%.1fms max=%.1fms\n",
        files, NR, a[int((NR+1)/2)]/1000, s/NR/1000, a[1]/1000, a[NR]/1000 }'

#!/usr/bin/env bash
# Reproduce the grep/glob figures of DESIGN §10: our tools against `rg` over Debian's rust-src.
#
#   scripts/bench-search.sh [RUNS]      (default 21 alternating runs per query)
#
# Fetches the corpus once into $CARGO_TARGET_DIR/bench-corpus (or target/bench-corpus),
# installs ripgrep with apt if `rg` is missing, builds benches/search.rs in release, then runs
# its `compare` mode, which prints a table of whole-process medians, ratios, whether both found
# the same matches, and the in-process time to the first 100 results.
set -euo pipefail

cd "$(dirname "$0")/.."
runs="${1:-21}"
target="${CARGO_TARGET_DIR:-target}"
corpus_dir="$target/bench-corpus"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v rg >/dev/null 2>&1; then
    echo "installing ripgrep" >&2
    as_root apt-get update -qq
    as_root apt-get install -y -qq ripgrep >/dev/null
fi

root="$(find "$corpus_dir/usr/src" -mindepth 1 -maxdepth 1 -type d -name 'rustc-*' 2>/dev/null | head -n1 || true)"
if [ -z "$root" ]; then
    echo "fetching the rust-src corpus into $corpus_dir" >&2
    mkdir -p "$corpus_dir"
    (
        cd "$corpus_dir"
        # `apt-get download` writes into the current directory; the _apt sandbox user may not be
        # able to, which only costs a warning.
        apt-get download rust-src
        dpkg-deb -x rust-src_*.deb .
        rm -f rust-src_*.deb
    )
    root="$(find "$corpus_dir/usr/src" -mindepth 1 -maxdepth 1 -type d -name 'rustc-*' | head -n1)"
fi
echo "corpus: $root ($(find "$root" -type f | wc -l) files); $(rg --version | sed -n 1p)" >&2

# The bench's own executable: cargo also lists the ground-link binary it builds for it.
bench_bin="$(cargo bench --locked --bench search --no-run --message-format=json 2>/dev/null |
    grep '"kind":\["bench"\]' |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)"
if [ -z "$bench_bin" ] || [ ! -x "$bench_bin" ]; then
    echo "could not build benches/search.rs; run 'cargo bench --bench search --no-run' to see why" >&2
    exit 1
fi

exec "$bench_bin" compare "$(realpath "$root")" --runs "$runs"

#!/usr/bin/env bash
# ground-link's tray app (src-tauri/ + ui/): build, test, end-to-end, package, run.
#
#   scripts/app.sh deps      apt packages (GTK/WebKit, Xvfb, WebKitWebDriver), npm packages, tauri-driver
#   scripts/app.sh build     the UI (ui/dist) and the app binary (debug)
#   scripts/app.sh test      UI unit tests (Vitest), type check, clippy, and the app's Rust tests
#   scripts/app.sh e2e       the real app under Xvfb, driven by tauri-driver + WebKitWebDriver
#   scripts/app.sh screenshots   the e2e, saving its screenshots into docs/screenshots/
#   scripts/app.sh package   a .deb (Tauri's bundler) with the app, the CLI, icons, desktop entry
#   scripts/app.sh run [--dir D]   the app; without a display, `ground-link serve` instead
#   scripts/app.sh types     regenerate ui/src/gen/types.ts from the Rust types
#
# The Tauri config is the top-level tauri.conf.json; src-tauri/tauri.conf.json is a symlink to
# it because tauri-build and generate_context! read the config from the crate's folder.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
CARGO="${CARGO:-cargo}"

deps() {
  scripts/install-deps.sh core app
  # Closes the dialog in the e2e tests the way a window manager would (Xvfb has none).
  dpkg -s python3-xlib >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-xlib
  if [ ! -x ui/node_modules/.bin/vite ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
    (cd ui && npm ci --no-audit --no-fund)
  fi
  if ! command -v tauri-driver >/dev/null 2>&1; then
    # Pinned to v2: an unpinned install picks a 3.0 alpha.
    "$CARGO" install tauri-driver --version '^2' --locked
  fi
}

ui_build() {
  (cd ui && npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn)
}

# The app runs exec_cmd through the `ground-link` CLI next to it (its supervisor). Tests build
# it the way `make unit` does, so nothing is compiled twice with other features.
cli_for_tests() {
  "$CARGO" test -p ground-link --locked --no-run
}

build() {
  ui_build
  "$CARGO" build -p ground-link-app --locked
  "$CARGO" build -p ground-link --bin ground-link --locked
}

test_app() {
  ui_build
  cli_for_tests
  (cd ui && npx --no-install vitest run)
  "$CARGO" clippy -p ground-link-app --all-targets --locked -- -D warnings
  "$CARGO" test -p ground-link-app --locked
}

e2e() {
  ui_build
  cli_for_tests
  # Build first so the timed part below is the tests alone.
  "$CARGO" test -p ground-link-app --locked --test e2e --no-run
  export WEBKIT_DISABLE_DMABUF_RENDERER=1
  # A private D-Bus session (single-instance uses it; no Secret Service there, so the token
  # falls back to its file) and a private X server.
  dbus-run-session -- xvfb-run -a -s "-screen 0 1280x1000x24" \
    "$CARGO" test -p ground-link-app --locked --test e2e -- --ignored --nocapture --test-threads=1
}

package() {
  ui_build
  "$CARGO" build --release --locked --bin ground-link
  local stage="$CARGO_TARGET_DIR/release/deb-stage"
  mkdir -p "$stage"
  # Release builds keep debug info (the root profile's debug = 1, for profiling); the package
  # ships stripped copies.
  objcopy --strip-debug "$CARGO_TARGET_DIR/release/ground-link" "$stage/ground-link"
  local files
  files=$(printf '{"bundle":{"linux":{"deb":{"files":{"/usr/bin/ground-link":"%s"}}}}}' "$stage/ground-link")
  # `tauri build` compiles the app in release mode with custom-protocol; `tauri bundle` runs
  # the deb bundler. Nothing is downloaded (the deb target needs no external tools).
  (cd src-tauri && "$REPO/ui/node_modules/.bin/tauri" build --no-bundle --ci --config "$files")
  objcopy --strip-debug "$CARGO_TARGET_DIR/release/ground-link-app"
  (cd src-tauri && "$REPO/ui/node_modules/.bin/tauri" bundle --bundles deb --ci --config "$files")
  ls -l "$CARGO_TARGET_DIR"/release/bundle/deb/*.deb
  dpkg-deb -c "$CARGO_TARGET_DIR"/release/bundle/deb/*.deb | awk '{print $3, $6}' | grep -v '/$'
}

run() {
  if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
    build
    exec "$CARGO_TARGET_DIR/debug/ground-link-app" "$@"
  fi
  echo "no display: running the headless bridge (ground-link serve) instead" >&2
  local dir="${SANDBOX:-$HOME/ground-link-sandbox}"
  while [ $# -gt 0 ]; do
    case "$1" in --dir) dir="$2"; shift 2 ;; *) shift ;; esac
  done
  mkdir -p "$dir"
  "$CARGO" build --release --bin ground-link
  exec "$CARGO_TARGET_DIR/release/ground-link" serve --dir "$dir"
}

types() {
  GL_WRITE_TYPES=1 "$CARGO" test -p ground-link-app --locked --lib tsgen
}

cmd="${1:-}"
shift || true
case "$cmd" in
  deps) deps ;;
  build) build ;;
  test) test_app ;;
  # The e2e run, saving its screenshots over the ones the docs show.
  screenshots) GL_SCREENSHOTS_DIR="$PWD/docs/screenshots" e2e ;;
  e2e) e2e ;;
  package) package ;;
  run) run "$@" ;;
  types) types ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac

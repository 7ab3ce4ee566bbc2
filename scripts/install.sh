#!/usr/bin/env bash
# `make install` / `make uninstall`: ground-link for this user (or PREFIX), without a package.
#
#   scripts/install.sh install     the CLI into $PREFIX/bin; with APP=1 (or when a display is
#                                  there) also the tray app, its desktop entry and icon
#   scripts/install.sh uninstall   removes exactly what install put there
#
# PREFIX defaults to ~/.local (its bin/ is on the PATH of a Debian login shell once it exists;
# the script says when it is not on this one). Settings, rules, tokens and the audit log are
# never touched: they are the person's, and uninstalling a program must not erase them.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PREFIX="${PREFIX:-$HOME/.local}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$REPO/target}"
CARGO="${CARGO:-cargo}"
BIN="$PREFIX/bin"
APPS="$PREFIX/share/applications"
ICONS="$PREFIX/share/icons/hicolor/128x128/apps"

want_app() {
  [ "${APP:-}" = 1 ] || { [ "${APP:-}" != 0 ] && [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; }
}

install_all() {
  "$CARGO" build --release --locked --bin ground-link
  # Stripped of debug info: the release profile keeps it for profiling (100+ MB).
  install -s -Dm755 "$CARGO_TARGET_DIR/release/ground-link" "$BIN/ground-link"
  echo "installed $BIN/ground-link"
  if want_app; then
    scripts/app.sh deps
    (cd ui && npx --no-install tsc --noEmit && npx --no-install vite build --logLevel warn)
    (cd src-tauri && "$REPO/ui/node_modules/.bin/tauri" build --no-bundle --ci)
    install -s -Dm755 "$CARGO_TARGET_DIR/release/ground-link-app" "$BIN/ground-link-app"
    install -Dm644 icons/128x128.png "$ICONS/ground-link.png"
    mkdir -p "$APPS"
    cat > "$APPS/ground-link.desktop" <<EOF
[Desktop Entry]
Type=Application
Name=ground-link
Comment=Let the chat model you already use work on your files, safely
Exec=$BIN/ground-link-app
Icon=ground-link
Categories=Development;Utility;
Terminal=false
EOF
    echo "installed $BIN/ground-link-app and $APPS/ground-link.desktop"
  else
    echo "the tray app was not installed (no display); APP=1 make install installs it anyway"
  fi
  case ":$PATH:" in
    *":$BIN:"*) ;;
    *) echo "note: $BIN is not on this shell's PATH; add it (or log in again) to type ground-link" ;;
  esac
}

uninstall_all() {
  for f in "$BIN/ground-link" "$BIN/ground-link-app" "$APPS/ground-link.desktop" "$ICONS/ground-link.png"; do
    if [ -e "$f" ]; then
      rm -f "$f"
      echo "removed $f"
    fi
  done
  echo "kept your settings, rules, tokens and audit log (under ~/.config/ground-link and ~/.local/share/ground-link)"
}

case "${1:-}" in
  install) install_all ;;
  uninstall) uninstall_all ;;
  *) echo "usage: scripts/install.sh install|uninstall" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Installs what ground-link needs to build and test on Debian, idempotently: nothing is
# downloaded when everything is already there. Usage: scripts/install-deps.sh [core|bench|extension|app]...
set -euo pipefail

want_apt=()
need() { dpkg -s "$1" >/dev/null 2>&1 || want_apt+=("$1"); }

for group in "${@:-core}"; do
  case "$group" in
    core) need build-essential; need pkg-config
          # bash runs exec_cmd; bubblewrap jails the classifier's differential oracle (tests/oracle.rs).
          need bash; need bubblewrap
          # The agent token lives in the OS keyring (libdbus); tests/cli.rs checks that against a
          # real Secret Service on a private session bus.
          need libdbus-1-dev; need dbus; need gnome-keyring ;;
    bench) need ripgrep; need hyperfine; need wrk ;;
    extension) need chromium; need openssl
               # Node 20.19+ and npm: use the machine's if it has them (Debian 12's own is 18).
               command -v node >/dev/null 2>&1 || need nodejs
               command -v npm >/dev/null 2>&1 || need npm ;;
    app) need libwebkit2gtk-4.1-dev; need libgtk-3-dev; need libayatana-appindicator3-dev; need librsvg2-dev
         need xvfb; need webkit2gtk-driver; need dbus; need dbus-x11 ;;
    *) echo "unknown group $group" >&2; exit 2 ;;
  esac
done

if [ ${#want_apt[@]} -gt 0 ]; then
  echo "installing: ${want_apt[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${want_apt[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "cargo is missing: install Rust from https://rustup.rs (stable)" >&2
  exit 1
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt

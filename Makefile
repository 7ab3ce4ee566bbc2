# The two commands of the README: `make run` and `make test`. Each installs what it needs.
SHELL := /bin/bash
CARGO ?= cargo
TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),$(CURDIR)/target))
# A default sandbox folder for `make run`.
SANDBOX ?= $(HOME)/ground-link-sandbox

.PHONY: run test deps lint unit ext-deps ext-test e2e-extension mcp-conformance app-deps app-test e2e-app package screenshots bench fuzz install uninstall

deps:
	@scripts/install-deps.sh core

# With a display: the tray app. Without one: the headless bridge with terminal approvals.
run: deps
	@mkdir -p "$(SANDBOX)"
	@if [ -n "$${DISPLAY:-}$${WAYLAND_DISPLAY:-}" ] && scripts/app.sh deps; then \
	  SANDBOX="$(SANDBOX)" scripts/app.sh run --dir "$(SANDBOX)"; \
	else \
	  echo "starting the headless bridge (ground-link serve)"; \
	  $(CARGO) build --release --bin ground-link && \
	  $(TARGET_DIR)/release/ground-link serve --dir "$(SANDBOX)"; \
	fi

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

unit: deps
	$(CARGO) test --locked

ext-deps:
	@scripts/install-deps.sh extension
	cd extension && npm ci --no-audit --no-fund --loglevel=error

ext-test: ext-deps
	cd extension && npm test

# `cargo test --no-run` builds the CLI with the same features as `make unit` did (a plain
# `cargo build` would rebuild the dependencies that dev-dependencies unify differently).
e2e-extension: deps ext-deps
	$(CARGO) test --locked --no-run
	cd extension && GROUND_LINK_BIN=$(TARGET_DIR)/debug/ground-link npm run e2e

# The official MCP conformance suite against `serve` (tests/conformance/run.mjs says which
# scenarios and why one check is refused on purpose). It needs Node 22: its npm `node` package.
mcp-conformance: deps
	@scripts/install-deps.sh extension
	$(CARGO) test --locked --no-run
	cd tests/conformance && npm ci --no-audit --no-fund --loglevel=error && node run.mjs $(TARGET_DIR)/debug/ground-link

app-deps: deps
	scripts/app.sh deps

app-test: app-deps
	scripts/app.sh test

e2e-app: app-deps
	scripts/app.sh e2e

# Refreshes docs/screenshots/ from the app e2e (make test leaves them alone).
screenshots: app-deps
	scripts/app.sh screenshots

package: app-deps
	scripts/app.sh package

test: lint unit ext-test e2e-extension mcp-conformance app-test e2e-app

# The CLI (and, with a display or APP=1, the tray app and its desktop entry) into
# $(PREFIX)/bin, ~/.local by default; `make uninstall` removes exactly those files.
install: deps
	scripts/install.sh install

uninstall:
	scripts/install.sh uninstall

bench:
	@scripts/install-deps.sh core bench
	scripts/bench.sh

# Every property test at 20,000 cases (each one's own count when PROPTEST_CASES is unset, as in
# `make test`); the table tests run once alongside.
fuzz: deps
	PROPTEST_CASES=20000 $(CARGO) test --release --locked --lib --test main

# The two commands of the README: `make run` and `make test`. Each installs what it needs.
SHELL := /bin/bash
CARGO ?= cargo
# A default sandbox folder for `make run`.
SANDBOX ?= $(HOME)/ground-link-sandbox
# proptest cases per property in `make test` (kept brief; `make fuzz` runs longer).
export PROPTEST_CASES ?= 256

.PHONY: run test deps lint unit bench fuzz

deps:
	@scripts/install-deps.sh core

run: deps
	$(CARGO) build --release --bin ground-link
	@mkdir -p "$(SANDBOX)"
	./target/release/ground-link serve --dir "$(SANDBOX)"

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

unit: deps
	$(CARGO) test --locked

test: lint unit

bench:
	@scripts/install-deps.sh core bench
	scripts/bench.sh

fuzz: deps
	PROPTEST_CASES=20000 $(CARGO) test --release --locked --test main -- proptest

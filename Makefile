# Obvious entry points; the README names the two that matter: `make demo` and `make test`.
# Host code builds with --release everywhere so one target directory and one
# feature set are reused by every step (build, tests, clippy, demo, benchmarks).

CARGO ?= cargo
RUNTIME ?= wasmtime

.PHONY: demo test build actions actions-native pack clippy fmt fmt-check \
        build-wasmtime test-wasmtime test-openwhisk-patch bench bench-quick clean

demo:
	scripts/demo.sh

test:
	scripts/test.sh

build: build-$(RUNTIME)

build-wasmtime:
	$(CARGO) build --release

actions:
	actions/build.sh

actions-native:
	actions/build.sh --native

pack: actions build
	actions/pack.sh
	WASM_PRECOMPILE=target/release/wasm-precompile actions/pack.sh --precompile $(RUNTIME)

test-wasmtime: build actions
	$(CARGO) test --release

test-openwhisk-patch: build actions
	openwhisk-patch/test.sh

clippy:
	$(CARGO) clippy --release --all-targets -- -D warnings

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

bench: build actions
	eval/first-measurements.sh

bench-quick: build actions
	eval/first-measurements.sh --quick

clean:
	$(CARGO) clean
	rm -rf actions/target actions/dist

# Obvious entry points; the README names the two that matter: `make demo` and `make test`.
# Host code builds with --release everywhere so one target directory and one
# feature set are reused by every step (build, tests, clippy, demo, benchmarks).

CARGO ?= cargo
RUNTIME ?= wasmtime

.PHONY: demo test prerequisites build actions actions-native test-actions pack clippy fmt fmt-check results \
        build-wasmtime precompiler-wasmtime test-wasmtime test-openwhisk-patch clean \
        build-wasmer build-wasmer-headless precompiler-wasmer test-wasmer bench-wasmer \
        build-wamr precompiler-wamr test-wamr bench-wamr evaluate evaluate-quick soak fuzz \
        build-aarch64 build-armv7 test-cross dist

demo:
	scripts/demo.sh

test:
	scripts/test.sh

# The release archives of this checkout's version in target/dist/VERSION/ (scripts/dist.sh):
# x86_64 and aarch64 binaries with the engines, the source, the action kit, the OCI images,
# SHA256SUMS; each checked as a user unpacks it. Builds what is missing first; needs root for
# the images (a private Docker engine).
dist:
	scripts/dist.sh

# Every Debian package and tool the project needs, installed or checked up front (make test
# runs it first; each script also calls it for the part it needs).
prerequisites:
	scripts/prerequisites.sh all

build: build-$(RUNTIME)

build-wasmtime:
	$(CARGO) build --release

# Each runtime's precompiler beside the front end `wasm-precompile`, which runs it.
precompiler-wasmtime:
	$(CARGO) build --release -p wasm-precompile -p wasm-precompile-wasmtime -p wasm-precompile-snapshot

# wasmer: LLVM for portable Wasm at /init and for wasm-precompile-wasmer (one cargo invocation,
# so both share one compiled LLVM); the headless build has no compiler. scripts/wasmer.sh
# installs Debian's LLVM 22 when missing. The binaries are target/release/wasm-executor-wasmer*.
build-wasmer:
	scripts/wasmer.sh build

build-wasmer-headless:
	scripts/wasmer.sh build-headless

precompiler-wasmer: build-wasmer
	$(CARGO) build --release -p wasm-precompile

test-wasmer: actions
	scripts/wasmer.sh test

# The evaluation of the wasmer build alone against Docker and native (eval/evaluate.sh).
bench-wasmer:
	eval/evaluate.sh --backends wasmer --no-jmeter --out eval/results/evaluation-wasmer

# WAMR: the executor runs portable Wasm on WAMR's fast interpreter and artifacts as AOT code (no
# LLVM in it); wasm-precompile-wamr holds WAMR's AOT compiler (Debian's LLVM 19). scripts/wamr.sh
# installs cmake, libclang-dev, libsimde-dev and llvm-19-dev when missing. The executor is
# target/release/wasm-executor-wamr.
build-wamr:
	scripts/wamr.sh build

precompiler-wamr:
	scripts/wamr.sh precompiler
	$(CARGO) build --release -p wasm-precompile

test-wamr: actions
	scripts/wamr.sh test

# The evaluation of the WAMR build alone against Docker and native (eval/evaluate.sh).
bench-wamr:
	eval/evaluate.sh --backends wamr --no-jmeter --out eval/results/evaluation-wamr

# ARM boards, built on this machine (scripts/cross.sh; Debian's cross compilers and rustc-web,
# no rustup targets): every backend for 64-bit Raspberry Pi OS / Debian arm64, WAMR for 32-bit
# Raspberry Pi OS. Stripped binaries land in target/cross/<triple>/; artifacts for them are
# precompiled here with `wasm-precompile compile --runtime R -- IN.wasm --target <triple>`. test-cross runs the conformance
# suite against each of them under qemu-user.
build-aarch64:
	scripts/cross.sh build aarch64

build-armv7:
	scripts/cross.sh build armv7

test-cross: actions build-aarch64 build-armv7
	scripts/cross.sh test --all aarch64
	scripts/cross.sh test --all armv7

actions:
	actions/build.sh

actions-native:
	actions/build.sh --native

# The guest SDK's and the actions' unit tests, on the host, and the guest build's reproducibility.
test-actions: actions
	cd actions && cargo fmt --all -- --check && cargo clippy --locked --all-targets -- -D warnings && cargo test --locked
	actions/build.sh --reproduce

# Portable zips, and zips precompiled for RUNTIME, signed with SIGN_KEY when it is set (a
# default executor refuses unsigned artifacts; `target/release/wasm-precompile keygen --out K`
# makes K.pem and K.pub).
pack: actions precompiler-$(RUNTIME)
	actions/pack.sh
	WASM_PRECOMPILE=target/release/wasm-precompile actions/pack.sh --precompile $(RUNTIME) $(if $(SIGN_KEY),--sign-key $(SIGN_KEY))

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

evaluate:
	eval/evaluate.sh

evaluate-quick:
	eval/evaluate.sh --quick

# eval/RESULTS.md and the figures README.md quotes, regenerated from the records in eval/results/.
results:
	python3 eval/report

# Ten minutes of benign and hostile activations mixed against the $(RUNTIME) build; fails if
# the executor's RSS or open descriptors grow more than 10 % or a benign request fails (not in
# CI). SOAK_SECONDS shortens or lengthens it; results in eval/results/soak/.
SOAK_SECONDS ?= 600
soak: actions
	scripts/soak.sh $(RUNTIME) $(SOAK_SECONDS)

# The fuzz targets (fuzz/), 30 s each; `scripts/fuzz.sh SECONDS TARGET` for a longer run.
fuzz:
	scripts/fuzz.sh

# Everything built: the host's target directory, the guests, the ARM builds' cache outside the
# checkout (scripts/cross.sh).
clean:
	$(CARGO) clean
	rm -rf actions/target actions/dist "$${WASM_CROSS_CACHE_DIR:-$${XDG_CACHE_HOME:-$$HOME/.cache}/wasm-executor/cross-cargo}"

#!/usr/bin/env bash
# Starts an action of your own, outside this repository:
#
#   new.sh NAME [DIR]       a Rust crate in DIR (default ./NAME): Cargo.toml, src/main.rs,
#                           using the guest SDK beside this script (this checkout's
#                           actions/sdk, or the action kit's sdk/) by its path; build it with
#                           `cargo build --release --target wasm32-wasip1` in DIR (rustup's
#                           target), or in a checkout with `actions/build.sh --crate DIR`
#   new.sh --c NAME [DIR]   a C action in DIR: NAME.c (build line in its header)
#
# NAME is a lowercase crate name (a-z, 0-9, -). DIR must not exist yet.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
die() {
    echo "new.sh: $*" >&2
    exit 1
}
usage() { sed -n '2,11p' "$here/new.sh" | sed 's/^# \{0,1\}//'; }

lang=rust
case "${1:-}" in
--c) lang=c; shift ;;
-h | --help) usage; exit 0 ;;
esac
[[ $# -ge 1 && $# -le 2 ]] || { usage >&2; exit 2; }
name="$1"
dir="${2:-$name}"
[[ "$name" =~ ^[a-z][a-z0-9-]{0,63}$ ]] || die "NAME must be a lowercase crate name (a-z, 0-9, -), not '$name'"
[[ ! -e "$dir" ]] || die "$dir exists already"

if [[ $lang == c ]]; then
    mkdir -p "$dir"
    cat >"$dir/$name.c" <<C
/*
 * $name: an OpenWhisk action in C, a WASI command module. The parameters arrive as the JSON
 * text of argv[1] (and on stdin); the last line printed on stdout is the result, a JSON object;
 * everything on stderr is logs.
 *
 * Build: clang-19 --target=wasm32-wasi --sysroot=/usr -O2 -o $name.wasm $name.c
 */
#include <stdio.h>

int main(int argc, char **argv) {
    const char *params = argc > 1 ? argv[1] : "{}";
    fprintf(stderr, "called with %s\n", params);
    printf("{\"greeting\": \"hello from C\"}\n");
    return 0;
}
C
    echo "new.sh: wrote $dir/$name.c"
    exit 0
fi

mkdir -p "$dir/src"
cat >"$dir/Cargo.toml" <<TOML
[package]
name = "$name"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
# The guest SDK (JSON in, JSON out): the one new.sh was run from.
openwhisk-wasm-sdk = { path = "$here/sdk" }

# A crate of its own, not a member of any other workspace.
[workspace]

# Small, fast modules: what the example actions are built with.
[profile.release]
opt-level = 3
lto = true
codegen-units = 1
panic = "abort"
strip = true
TOML
cat >"$dir/src/main.rs" <<'RUST'
//! An OpenWhisk action: the parameters in, a JSON object out (see the guest SDK's docs).

use openwhisk::{Error, Value, json};

fn greet(params: Value) -> Result<Value, Error> {
    let name = params["name"].as_str().unwrap_or("world");
    eprintln!("greeting {name}"); // stderr goes to the activation's logs
    Ok(json!({ "greeting": format!("Hello, {name}!") }))
}

openwhisk::main!(greet);
RUST
if [[ -x "$here/build.sh" ]]; then
    echo "new.sh: wrote $dir (build it with: $here/build.sh --crate $dir)"
else
    echo "new.sh: wrote $dir (build it with: cd $dir && cargo build --release --target wasm32-wasip1)"
fi

#!/usr/bin/env bash
# Runs the documentation's shell blocks that a reader is told to type, literally, so that a
# documented command that breaks fails `make test`:
#
#   scripts/doc-test.sh [FILE.md...]     (default: every Markdown file git tracks)
#
# In those files every ```sh block carries a marker on the line before it:
#   <!-- doc-test -->                       run here, from the repository root, with bash -e;
#   <!-- doc-test: expects TEXT -->         … and its output must contain TEXT;
#   <!-- not run by make test: REASON -->   not run, and the reason says why (hardware, a real
#                                           cluster, hours of measurement, or run elsewhere).
# A block without a marker fails the check. Blocks run after the build (the executor and the
# example actions exist); each gets its own state directory and at most 15 minutes, and its
# background processes are stopped when it ends.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

files=("$@")
[[ ${#files[@]} -gt 0 ]] || mapfile -t files < <(git ls-files '*.md')

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Extract the blocks: one script per runnable block, with its expected text beside it.
python3 - "$work" "${files[@]}" <<'PY'
import pathlib, re, sys

work = pathlib.Path(sys.argv[1])
marker = re.compile(r"<!-- (doc-test(?:: expects (?P<expects>.*?))?|not run by make test: (?P<reason>.+?)) -->")
failures, count = [], 0
for name in sys.argv[2:]:
    lines = pathlib.Path(name).read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        found = marker.fullmatch(lines[i - 1].strip()) if i > 0 else None
        if not found:
            failures.append(f"{name}:{i + 1}: a sh block without <!-- doc-test --> or <!-- not run by make test: REASON -->")
        elif found.group("reason") is None:
            count += 1
            stem = work / f"{count:02d}"
            stem.with_suffix(".sh").write_text("\n".join(lines[i + 1:end]) + "\n")
            stem.with_suffix(".where").write_text(f"{name}:{i + 1}")
            stem.with_suffix(".expects").write_text(found.group("expects") or "")
        i = end + 1
if failures:
    sys.exit("\n".join(failures))
PY

status=0
for block in "$work"/*.sh; do
    [[ -e "$block" ]] || continue
    where="$(cat "${block%.sh}.where")"
    expects="$(cat "${block%.sh}.expects")"
    state="$(mktemp -d)"
    # Its own process group, so that whatever the block leaves running is stopped with it.
    set +e
    WASM_EXECUTOR_STATE_DIR="$state" setsid timeout 900 bash -e "$block" > "${block%.sh}.out" 2>&1 &
    runner=$!
    wait "$runner"
    rc=$?
    set -e
    kill -TERM -- "-$runner" 2>/dev/null || true
    rm -rf "$state"
    if [[ $rc -ne 0 ]]; then
        echo "doc-test: $where failed (exit $rc):" >&2
        cat "${block%.sh}.out" >&2
        status=1
    elif [[ -n "$expects" ]] && ! grep -qF -- "$expects" "${block%.sh}.out"; then
        echo "doc-test: $where did not print $expects:" >&2
        cat "${block%.sh}.out" >&2
        status=1
    else
        echo "doc-test: $where ok"
    fi
done
exit "$status"

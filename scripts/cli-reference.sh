#!/usr/bin/env bash
# Keeps the help texts quoted in docs/cli.md equal to what the programs print. Each quoted
# text is a ```text block right after a `<!-- help: COMMAND -->` line; COMMAND runs from the
# repository root (after the host build), and its output replaces the block.
#
#   scripts/cli-reference.sh           rewrites the blocks
#   scripts/cli-reference.sh --check   fails, showing the difference, when a block is stale
#                                      (make test runs this)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode="${1:-write}"
[[ "$mode" == write || "$mode" == --check ]] || {
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

python3 - "$mode" docs/cli.md <<'PY'
import difflib, re, subprocess, sys

mode, path = sys.argv[1], sys.argv[2]
text = open(path).read()
block = re.compile(r"(<!-- help: (?P<command>.+?) -->\n```text\n)(?P<body>.*?)(```\n)", re.S)


def regenerate(match):
    run = subprocess.run(["bash", "-c", match["command"]], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"cli-reference.sh: `{match['command']}` failed:\n{run.stderr}")
    # Trailing spaces (clap's blank help lines) would not survive editors.
    help_text = "\n".join(line.rstrip() for line in run.stdout.rstrip("\n").split("\n"))
    return match.group(1) + help_text + "\n" + match.group(4)


updated, count = block.subn(regenerate, text)
if count == 0:
    sys.exit(f"cli-reference.sh: no <!-- help: … --> blocks in {path}")
if updated == text:
    sys.exit(0)
if mode == "--check":
    sys.stdout.writelines(difflib.unified_diff(
        text.splitlines(True), updated.splitlines(True), path, path + " (as the programs print it)"))
    sys.exit(f"cli-reference.sh: {path} quotes help texts that changed; run scripts/cli-reference.sh")
open(path, "w").write(updated)
print(f"cli-reference.sh: updated {path}")
PY

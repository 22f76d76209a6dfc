"""Command line of the generator: write, check, or print one section."""

import argparse
import difflib
import sys

from report import render
from report.paths import QUOTING, RESULTS


def main(argv, results_path=RESULTS, documents=QUOTING):
    parser = argparse.ArgumentParser(prog="python3 eval/report", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true",
                      help="fail when RESULTS.md or a document's quoted figures differ from the records")
    mode.add_argument("--section", metavar="NAME", help="print one section as it renders")
    args = parser.parse_args(argv)

    try:
        if args.section:
            sys.stdout.write(render.section(args.section))
            return 0
        results = render.results()
        quoting = [(path, render.quotes(path.read_text(), results.figures, path.name))
                   for path in documents]
    except render.ReportError as error:
        print(f"eval/report: {error}", file=sys.stderr)
        return 1

    outputs = [(results_path, results.text)] + quoting
    if not args.check:
        for path, text in outputs:
            if path.read_text() != text:
                path.write_text(text)
                print(f"eval/report: wrote {path.name}", file=sys.stderr)
        return 0

    stale = 0
    for path, text in outputs:
        current = path.read_text()
        if current != text:
            stale += 1
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(),
                                        f"{path.name} (committed)", f"{path.name} (from the records)",
                                        lineterm="", n=1)
            print("\n".join(list(diff)[:60]), file=sys.stderr)
    if stale:
        print("eval/report: the published figures differ from the committed records; "
              "edit eval/report/sections/, then run python3 eval/report", file=sys.stderr)
        return 1
    print("eval/report: RESULTS.md and the figures the documents quote match the records",
          file=sys.stderr)
    return 0

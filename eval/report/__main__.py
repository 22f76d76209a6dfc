"""Generates eval/RESULTS.md, and the figures README.md and docs quote, from the committed records.

    python3 eval/report            # rewrite eval/RESULTS.md and the figures the documents quote
    python3 eval/report --check    # fail when either differs from what the records give
    python3 eval/report --section engines   # print one section as it renders

Every number in RESULTS.md comes from a record under eval/results/: a section's template
(sections/NAME.md) may quote a measurement only through a placeholder its module
(sections/NAME.py) computes; `make test` runs --check.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from report.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))

"""Where the records, the templates and the published files are."""

from pathlib import Path

EVAL = Path(__file__).resolve().parent.parent
ROOT = EVAL.parent
RECORDS = EVAL / "results"
SECTIONS = EVAL / "report" / "sections"
RESULTS = EVAL / "RESULTS.md"
README = ROOT / "README.md"
# Documents that quote figures of RESULTS.md between <!-- figure: section:key --> markers.
QUOTING = [README, ROOT / "docs" / "backends.md"]

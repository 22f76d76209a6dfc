"""Reading the committed records under eval/results/."""

import csv
import gzip
import io
import json

from report.paths import RECORDS


def path(relative):
    full = RECORDS / relative
    if not full.exists():
        raise FileNotFoundError(f"eval/results/{relative}")
    return full


def json_of(relative):
    return json.loads(path(relative).read_text())


def csv_rows(relative):
    """The rows of a CSV record, plain or gzipped, as dicts of strings."""
    full = path(relative)
    raw = gzip.decompress(full.read_bytes()) if full.suffix == ".gz" else full.read_bytes()
    return list(csv.DictReader(io.StringIO(raw.decode())))


def runs(relative_glob):
    """The records matching a glob under eval/results/ (e.g. "repeated/run-*/summary.json"),
    as relative paths in order; none is an error."""
    found = sorted(str(p.relative_to(RECORDS)) for p in RECORDS.glob(relative_glob))
    if not found:
        raise FileNotFoundError(f"eval/results/{relative_glob}")
    return found

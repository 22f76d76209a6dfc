"""Tests of the generator: typed measurements are refused, an edited number is caught."""

import contextlib
import io
import json
import re
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from report import cli, fmt, records, render
from report.paths import QUOTING


class Lint(unittest.TestCase):
    def test_a_measurement_typed_into_prose_is_refused(self):
        for prose in ("took 2.3 ms", "at 88 % of native", "272× faster", "5/s", "1.2 MiB each"):
            with self.assertRaises(render.ReportError, msg=prose):
                render._lint("example", f"The executor {prose}.\n")

    def test_placeholders_constants_code_and_links_may_hold_numbers(self):
        render._lint("example", "\n".join([
            "Each container reserves {{=256 MB}}; the first result took {{cold:first}}.",
            "`--level-secs 2 ms`, [data](results/5%/x), <!-- 3 ms -->, 16 clients, 2026-11-26.",
            "```sh", "sleep 300ms", "```", ""]))


class Check(unittest.TestCase):
    def _check(self, results_text):
        with tempfile.TemporaryDirectory() as scratch:
            results = Path(scratch) / "RESULTS.md"
            results.write_text(results_text)
            with contextlib.redirect_stderr(io.StringIO()):
                return cli.main(["--check"], results_path=results, documents=QUOTING)

    def test_what_the_records_give_passes_and_an_edited_number_fails(self):
        text = render.results().text
        self.assertEqual(self._check(text), 0)
        digit = re.search(r"(?m)^\|.*?(\d)", text)
        self.assertIsNotNone(digit, "RESULTS.md has no table with a number")
        edited = text[:digit.start(1)] + str((int(digit.group(1)) + 1) % 10) + text[digit.end(1):]
        self.assertEqual(self._check(edited), 1)

    def test_quoted_figures_are_replaced_by_the_records(self):
        marked = "cold starts of <!-- figure: a:b -->9 ms<!-- /figure --> here"
        self.assertEqual(render.quotes(marked, {"a:b": "2.3 ms"}, "README.md"),
                         "cold starts of <!-- figure: a:b -->2.3 ms<!-- /figure --> here")
        with self.assertRaises(render.ReportError):
            render.quotes(marked, {}, "README.md")


class Repeated(unittest.TestCase):
    def _runs(self, commits):
        scratch = tempfile.TemporaryDirectory()
        self.addCleanup(scratch.cleanup)
        for i, commit in enumerate(commits, 1):
            run = Path(scratch.name) / "x" / f"run-{i}"
            run.mkdir(parents=True)
            (run / "summary.json").write_text(json.dumps({"commit": commit}))
        patch = mock.patch.object(records, "RECORDS", Path(scratch.name))
        patch.start()
        self.addCleanup(patch.stop)

    def test_three_runs_of_one_build_are_repeats(self):
        self._runs(["abc", "abc", "abc"])
        self.assertEqual(len(records.repeated("x/run-*/summary.json")), 3)

    def test_fewer_runs_or_other_builds_are_refused(self):
        for commits in (["abc", "abc"], ["abc", "abc", "def"], ["abc", "abc", None]):
            with self.subTest(commits=commits):
                self._runs(commits)
                with self.assertRaises(ValueError):
                    records.repeated("x/run-*/summary.json")


class Formats(unittest.TestCase):
    def test_numbers(self):
        self.assertEqual(fmt.number(0.78), "0.78")
        self.assertEqual(fmt.number(16.29), "16.3")
        self.assertEqual(fmt.number(1318.5), "1,318")
        self.assertEqual(fmt.span([2.31, 2.84], fmt.ms), "2.31–2.84 ms")
        self.assertEqual(fmt.span([5.0, 5.0], fmt.ms), "5 ms")
        self.assertEqual(fmt.span([2.31, 10.3], lambda x: f"{fmt.number(x)}/s"), "2.31–10.3/s")
        self.assertEqual(fmt.times(272.3), "272×")
        self.assertEqual(fmt.times(1.054), "1.05×")
        self.assertEqual(fmt.pct(0.883), "88 %")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Self-test of scripts/stage.sh and scripts/stage-report.py: stages run
through stage.sh are recorded with their seconds and status (a failing
one keeps its status and fails the stage), and the report lists them and
every test binary that cargo test's output names, with its counts.

Usage: scripts/test_stage_report.py  (`make lint` runs it)
"""

import contextlib
import importlib.util
import io
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
_SPEC = importlib.util.spec_from_file_location("stage_report", HERE / "stage-report.py")
report = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(report)

CARGO_OUTPUT = """\
   Compiling deepfleet v0.1.0
     Running unittests src/lib.rs (target/debug/deps/deepfleet_api-0123456789abcdef)
test a ... ok
test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.50s
     Running tests/e2e/main.rs (/tmp/t/debug/deps/e2e-fedcba9876543210)
test b ... FAILED
test result: FAILED. 7 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 302.74s
"""


class StageReport(unittest.TestCase):
    def run_stage(self, stages: Path, name: str, script: str) -> int:
        env = dict(os.environ, CI_STAGES=str(stages))
        done = subprocess.run(
            [str(HERE / "stage.sh"), name, "bash", "-c", script],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode

    def test_stages_are_timed_with_their_status_and_binaries_listed(self):
        with tempfile.TemporaryDirectory() as tmp:
            stages = Path(tmp) / "stages.tsv"
            cargo = f"cat <<'OUT'\n{CARGO_OUTPUT}OUT\n"
            self.assertEqual(self.run_stage(stages, "tests", cargo), 0)
            self.assertEqual(self.run_stage(stages, "helm", "exit 3"), 3)
            rows = report.stages(stages)
            self.assertEqual([(n, s) for n, _, s in rows], [("tests", 0), ("helm", 3)])
            self.assertTrue(all(seconds >= 0 for _, seconds, _ in rows))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                sys.argv = ["stage-report.py", str(stages)]
                self.assertEqual(report.main(), 0)
            text = out.getvalue()
            self.assertIn("| helm |", text)
            self.assertIn("| exit 3 |", text)
            self.assertIn("| e2e (tests/e2e/main.rs) | 7 | 1 | 302.7 |", text)
            self.assertIn("| deepfleet_api (src/lib.rs) | 3 | 0 | 1.5 |", text)
            self.assertIn("| **2 binaries** | **10** | **1** | |", text)

    def test_a_stage_whose_log_is_gone_is_still_listed(self):
        with tempfile.TemporaryDirectory() as tmp:
            stages = Path(tmp) / "stages.tsv"
            stages.write_text("build\t12.0\t0\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                sys.argv = ["stage-report.py", str(stages)]
                self.assertEqual(report.main(), 0)
            self.assertIn("| build | 12 | ok |", out.getvalue())

    def test_without_ci_stages_a_stage_only_runs_its_command(self):
        env = {k: v for k, v in os.environ.items() if k != "CI_STAGES"}
        done = subprocess.run(
            [str(HERE / "stage.sh"), "x", "bash", "-c", "echo hi; exit 4"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        self.assertEqual((done.returncode, done.stdout), (4, "hi\n"))


if __name__ == "__main__":
    unittest.main(verbosity=1)

#!/usr/bin/env python3
"""Prints the stage table of a CI run that scripts/stage.sh recorded.

Usage: scripts/stage-report.py STAGES_FILE

The first table lists each stage in the order it ran, with its seconds
and exit status. The second lists each test binary that the stages ran
(from the "Running ..." lines of cargo test in the stages' logs): its
tests passed and failed and libtest's own seconds. Both are Markdown, so
a run's output can go into docs/ci.md as it is.
"""

import re
import sys
from pathlib import Path

RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \((?:[^)]*/)?([^/)]+?)(?:-[0-9a-f]{16})?\)$")
RESULT = re.compile(
    r"^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed;.* finished in ([0-9.]+)s$"
)


def stages(path: Path) -> list[tuple[str, float, int]]:
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) == 3:
            rows.append((parts[0], float(parts[1]), int(parts[2])))
    return rows


def binaries(log: Path) -> list[tuple[str, int, int, float]]:
    """(binary, passed, failed, seconds) per test binary the log ran."""
    rows = []
    current = None
    for line in log.read_text(errors="replace").splitlines():
        if m := RUNNING.match(line):
            source, binary = m.groups()
            current = f"{binary} ({source})"
        elif (m := RESULT.match(line)) and current:
            rows.append((current, int(m[1]), int(m[2]), float(m[3])))
            current = None
    return rows


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = Path(sys.argv[1])
    if not path.exists():
        print(f"no stages recorded in {path}", file=sys.stderr)
        return 1
    rows = stages(path)
    total = sum(seconds for _, seconds, _ in rows)
    print("| stage | seconds | status |\n|---|---:|---|")
    for name, seconds, status in rows:
        print(f"| {name} | {seconds:.0f} | {'ok' if status == 0 else f'exit {status}'} |")
    print(f"| **sum** (stages may overlap) | **{total:.0f}** | |")
    logs = [Path(f"{path}.{name}.log") for name, _, _ in rows]
    tests = [row for log in logs if log.exists() for row in binaries(log)]
    if tests:
        print("\n| test binary | passed | failed | seconds |\n|---|---:|---:|---:|")
        for binary, passed, failed, seconds in sorted(tests, key=lambda r: -r[3]):
            print(f"| {binary} | {passed} | {failed} | {seconds:.1f} |")
        passed = sum(r[1] for r in tests)
        failed = sum(r[2] for r in tests)
        print(f"| **{len(tests)} binaries** | **{passed}** | **{failed}** | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

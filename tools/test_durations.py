"""Writes tests/durations.json: each test file's seconds in a suite run, which the
suite's scheduler uses to hand out the longest files first (tests/suite_markers.py,
`longest_first`).

Usage:
    ./dev.sh test --durations=0 > /tmp/suite.log          # a whole run, on 2 cores
    .venv/bin/python tools/test_durations.py /tmp/suite.log

A file missing from the table (a new one) is estimated from its slow and cluster tests
until the table is written again; stale figures only cost balance, never a test.
"""
from __future__ import annotations

import argparse
import collections
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tests" / "durations.json"
_LINE = re.compile(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+)")


def per_file(log: str) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown summed) in a `--durations=0` log."""
    seconds: collections.Counter[str] = collections.Counter()
    for line in log.splitlines():
        m = _LINE.match(line)
        if m:
            seconds[m.group(2).split("::")[0]] += float(m.group(1))
    return {path: round(s, 1) for path, s in sorted(seconds.items())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("log", help="pytest output of a whole run with --durations=0")
    args = ap.parse_args(argv)
    table = per_file(Path(args.log).read_text(encoding="utf-8", errors="replace"))
    if not table:
        print(f"{args.log}: no durations in it (run pytest with --durations=0)", file=sys.stderr)
        return 1
    TABLE.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{TABLE.relative_to(ROOT)}: {len(table)} files, {sum(table.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

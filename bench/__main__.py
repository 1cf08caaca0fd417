"""`python -m bench [NAME ...]`: run benchmarks and print one table of their figures.

Names: op_overhead, session_transfer, step_breakdown, trainer, wide_deep, recovery
(default: all);
`transfer` (the transport alone, several chunk sizes), `conv_speed` (conv2d, depthwise) and
`run_overhead` (a one-example enqueue, local and on a grpc:// session) run on request.
Real TensorFlow columns appear when TENSORFLOW_PYTHON points at an interpreter that has it.
"""
from __future__ import annotations

import importlib
import sys
from typing import Any

BENCHMARKS = ["op_overhead", "session_transfer", "step_breakdown", "trainer", "wide_deep",
              "recovery"]
ON_REQUEST = ["transfer", "conv_speed", "run_overhead"]


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}" if a and b else "-"


def _rows(name: str, r: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    if name == "op_overhead":
        tw, tf = r.get("tensorweave") or {}, r.get("tensorflow") or {}
        return [("sess.run overhead, 200-add chain (us/op)", f"{tw.get('us_per_op', 0):.2f}",
                 f"{tf['us_per_op']:.2f}" if tf else "-",
                 _ratio(tw.get("us_per_op"), tf.get("us_per_op")))]
    if name == "session_transfer":
        raw, tw, tf = r["raw"]["best"], r["tensorweave"]["best"], (r.get("tensorflow") or {})
        return [("64 MiB ps->worker fetch (MB/s)", f"{tw:.0f} ({tw / raw:.0%} of raw {raw:.0f})",
                 f"{tf['best']:.0f} ({tf['best'] / raw:.0%})" if tf else "-",
                 _ratio(tw, tf.get("best")))]
    rows = []
    if name == "step_breakdown":
        for model, b in r.items():
            rows.append((f"{model} 1ps+1w step (ms): compute/transfer/wait",
                         f"{b['ms']:.1f}: {b['local_ms']:.1f}/{b['transfer_ms']:.1f}/"
                         f"{b['waiting_ms']:.1f}",
                         f"local {b['tf_local_ms']:.1f}" if b.get("tf_local_ms") else "-", "-"))
    if name == "recovery":
        for setting, runs in r.items():
            for run in runs:
                rows.append((f"recovery {setting}: ps kill -> next step (s)",
                             f"{run['kill_to_next_step_s']:.2f} ({run['steps_lost']} lost)",
                             "-", "-"))
    if name in ("trainer", "wide_deep"):
        for setting, both in r.items():
            tw, tf = both["tensorweave"], both["tensorflow"]
            a = tw["examples_per_s"] if tw and tw["ok"] else None
            b = tf["examples_per_s"] if tf and tf["ok"] else None
            rows.append((f"{name} {setting} (examples/s)", f"{a:.0f}" if a else "-",
                         f"{b:.0f}" if b else "-", _ratio(a, b)))
    return rows


def main() -> None:
    names = sys.argv[1:] or BENCHMARKS
    table: list[tuple[str, str, str, str]] = []
    for name in names:
        if name not in BENCHMARKS + ON_REQUEST:
            sys.exit(f"unknown benchmark {name!r}; choose from {BENCHMARKS + ON_REQUEST}")
        print(f"== {name}", flush=True)
        result = importlib.import_module(f"bench.{name}").main([])
        if name in BENCHMARKS:
            table.extend(_rows(name, result))
    if table:
        print("\n== summary (tensorweave vs real TensorFlow in the same run)")
        print(f"{'benchmark':44s} {'tensorweave':28s} {'tensorflow':20s} ratio")
        for row in table:
            print(f"{row[0]:44s} {row[1]:28s} {row[2]:20s} {row[3]}")


if __name__ == "__main__":
    main()

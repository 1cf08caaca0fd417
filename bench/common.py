"""Shared bench plumbing: real TensorFlow runs in its own interpreter.

TensorFlow is never a dependency: set TENSORFLOW_PYTHON to a Python that has
it (e.g. a separate venv) and each benchmark runs its TF variant there in the
same run, so both columns come from the same machine state.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tensorflow_python() -> str | None:
    """The interpreter to run real TF with, or None when there is none."""
    exe = os.environ.get("TENSORFLOW_PYTHON")
    if exe:
        return exe
    try:
        import tensorflow  # noqa: F401 - only probing
        return sys.executable
    except ImportError:
        return None


def run_tf(module: str, *args: str, timeout: float = 900) -> dict[str, Any] | None:
    """Runs `python -m <module> --framework tensorflow --json ARGS` with real TF."""
    exe = tensorflow_python()
    if exe is None:
        return None
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    out = subprocess.run([exe, "-m", module, "--framework", "tensorflow", "--json", *args],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        print(f"real TF run of {module} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of process `pid` so far, all threads (Linux /proc);
    None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def ours_and_tf(module: str, measure: Callable[[Any], dict[str, Any]], doc: str | None,
                argv: list[str] | None) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
    """The shared `main` of a benchmark that compares with real TF in the same run.

    Parses `--framework`/`--json`, runs `measure(tf)`. With `--json` (how `run_tf` calls the
    module under real TF) prints the figures as JSON and returns None; otherwise returns
    (ours, real TF's figures or None when TENSORFLOW_PYTHON is not set).
    """
    import argparse
    parser = argparse.ArgumentParser(description=doc)
    parser.add_argument("--framework", default="tensorweave")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    ours = measure(import_framework(args.framework))
    if args.json:
        print(json.dumps(ours))
        return None
    return ours, run_tf(module)


def import_framework(name: str) -> Any:
    if name == "tensorflow":
        import tensorflow.compat.v1 as tf1
        tf1.disable_eager_execution()
        return tf1
    import tensorweave
    return tensorweave


def free_ports(n: int) -> list[int]:
    """`n` distinct free loopback ports: `tensorweave.distributed.topology.free_ports`,
    loaded from its file so that this also works under real TF, where the
    tensorweave package itself is not importable (its __init__ needs our deps)."""
    import importlib.util
    path = os.path.join(ROOT, "tensorweave", "distributed", "topology.py")
    spec = importlib.util.spec_from_file_location("_tw_topology", path)
    module = sys.modules.get("_tw_topology")
    if module is None:
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules["_tw_topology"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.free_ports(n)


def chosen(name: str, only: str) -> bool:
    """Whether a setting called `name` runs under `--only ONLY`: every word of ONLY is a
    word of the name ("sync" picks the sync setting, not the async ones; "" picks all).

    Example:
        >>> chosen("seed mlp512 2w sync", "sync"), chosen("wide & deep async", "sync")
        (True, False)
    """
    return set(only.split()) <= set(name.split())

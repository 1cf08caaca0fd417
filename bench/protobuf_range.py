"""Both ends of the protobuf range pyproject.toml allows: import and a distributed step.

For the lowest allowed protobuf (the `>=` bound) and the highest release below the
upper bound, this makes a scratch venv, installs the project's dependencies with that
protobuf pinned (from the package index pip is configured for), and runs in it:
`import tensorweave`, a 1 ps + 1 worker cluster of in-process servers whose session
talks over gRPC (so every protobuf message crosses the wire), a step that updates a
variable on the ps, and a GraphDef round trip. It prints one line per version.

Why: stacks pinned to protobuf 6 (Kubeflow Pipelines' SDK; TF 2.21 accepts >= 6.31.1)
must be able to import tensorweave; the generated *_pb2.py files come from a protoc
old enough for that (`./dev.sh protos`).

    .venv/bin/python -m bench.protobuf_range [--versions 6.31.1,7.36.2] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from typing import Any

from bench.common import ROOT

# Runs inside each scratch venv (the checkout on PYTHONPATH).
_PROBE = r"""
import json, os
os.environ["TENSORWEAVE_TRANSPORT"] = "tcp"
import google.protobuf
import numpy as np
import tensorweave as tf
from tensorweave.framework.proto.graph_pb2 import GraphDef
from tensorweave.testing.cluster import InProcessCluster
with InProcessCluster(ps=1, workers=1) as c, tf.Graph().as_default() as g:
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    step = tf.assign_add(v, tf.ones([4]))
    with tf.Session(c.target("worker", 0)) as sess:
        sess.run(v.initializer)
        sess.run(step)
        value = sess.run(v).tolist()
    again = GraphDef.FromString(g.as_graph_def().SerializeToString())
print(json.dumps({"protobuf": google.protobuf.__version__, "value": value,
                  "graph_nodes": len(again.node)}))
"""


def allowed_range() -> tuple[str, str | None, list[str]]:
    """(lowest allowed version, exclusive upper bound or None, the other dependencies)."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    spec = next(d for d in deps if re.match(r"protobuf\b", d))
    low = re.search(r">=\s*([\d.]+)", spec)
    high = re.search(r"<\s*([\d.]+)", spec)
    if low is None:
        raise SystemExit(f"pyproject's {spec!r} has no '>=' bound to test.")
    others = [d for d in deps if d is not spec]
    return low.group(1), high.group(1) if high else None, others


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def highest_release(upper: str | None) -> str:
    """The newest protobuf release below `upper`, as the package index lists it."""
    out = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "protobuf"],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    line = next(li for li in out.splitlines() if li.startswith("Available versions:"))
    versions = [v.strip() for v in line.split(":", 1)[1].split(",")]
    finals = [v for v in versions if re.fullmatch(r"[\d.]+", v)
              and (upper is None or _key(v) < _key(upper))]
    return max(finals, key=_key)


def probe(version: str, deps: list[str], workdir: str) -> dict[str, Any]:
    """Makes a venv with protobuf==version and the other deps; runs the probe in it."""
    venv = os.path.join(workdir, f"protobuf-{version}")
    subprocess.run([sys.executable, "-m", "venv", venv], check=True)
    py = os.path.join(venv, "bin", "python")
    install = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                              *deps, f"protobuf=={version}"],
                             capture_output=True, text=True, timeout=1200)
    if install.returncode != 0:
        return {"ok": False, "error": "pip install failed: " + install.stderr[-1500:]}
    env = {k: v for k, v in os.environ.items()
           if k not in ("TEMPORARILY_DISABLE_PROTOBUF_VERSION_CHECK", "VIRTUAL_ENV")}
    env["PYTHONPATH"] = ROOT
    run = subprocess.run([py, "-W", "error::UserWarning", "-c", _PROBE], cwd=workdir,
                         env=env, capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        return {"ok": False, "error": run.stderr[-1500:]}
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["ok"] = (result["protobuf"] == version and result["value"] == [1.0, 2.0, 3.0, 4.0]
                    and result["graph_nodes"] > 0)
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", help="comma-separated protobuf versions to try "
                        "(default: both ends of pyproject's range)")
    parser.add_argument("--keep", metavar="DIR", help="make the venvs in DIR and keep them")
    args = parser.parse_args(argv)
    low, high, deps = allowed_range()
    versions = args.versions.split(",") if args.versions else [low, highest_release(high)]
    print(f"pyproject allows protobuf >={low}" + (f",<{high}" if high else ""))
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="tw-protobuf-") as tmp:
        workdir = args.keep or tmp
        os.makedirs(workdir, exist_ok=True)
        for v in versions:
            r = results[v] = probe(v, deps, workdir)
            if r["ok"]:
                print(f"  protobuf {v:10s} import ok, distributed step over gRPC ok "
                      f"(v = {r['value']}), GraphDef round trip ok ({r['graph_nodes']} nodes)")
            else:
                print(f"  protobuf {v:10s} FAILED:\n{r['error']}")
    if not all(r["ok"] for r in results.values()):
        sys.exit(1)
    return results


if __name__ == "__main__":
    main()

"""Writes tensorweave/framework/tf_op_signatures.json from real TensorFlow's op registry.

The table records, for each op tensorweave registers that TensorFlow also has,
TensorFlow's argument and attr *names and kinds* (which attr types an input, the
attrs a NodeDef may carry, which have defaults): the interface a GraphDef must
match for TensorFlow to import it, the way field numbers are the interface of a
proto. It also lists every op name TF registers ("tf_op_names"), so a test can tell
when an op added here under a TF name needs the table regenerated.
`framework/tf_graph_compat.py` uses it to write TF-importable GraphDefs
(SavedModels) and to read TF-written ones; `framework/tf_op_signatures.py` loads it.

The file is JSON, one op per line (small diffs when TF or our op set changes):
    {"signatures": {"Abs": [inputs, outputs, attrs], ...}, "tf_op_names": [...]}
inputs and outputs are lists of [name, type_attr, number_attr, type_list_attr,
fixed DataType enum, is_ref]; attrs map name -> [type, has_default].

Run (needs a Python with TensorFlow, never a tensorweave dependency):

    .venv/bin/python -c "import tensorweave; from tensorweave.framework.op_def \\
        import registered_ops; print('\\n'.join(registered_ops()))" > /tmp/ops.txt
    $TENSORFLOW_PYTHON tools/gen_tf_op_signatures.py /tmp/ops.txt

`--out PATH` writes elsewhere (to compare with the checked-in table).
"""
from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

OUT = Path(__file__).resolve().parent.parent / "tensorweave/framework/tf_op_signatures.json"

# Ops the SavedModel/Saver graphs TF writes use, registered by tensorweave too.
EXTRA = ["SaveV2", "RestoreV2", "MergeV2Checkpoints", "ShardedFilename", "StringJoin",
         "StaticRegexFullMatch", "SelectV2"]


def _all_op_names() -> list[str]:
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session as c_api
    ops = op_def_pb2.OpList()
    ops.ParseFromString(bytes(c_api.TF_GetBuffer(c_api.TF_GetAllOpList())))
    return [op.name for op in ops.op]


def _signature(op: Any) -> list[Any]:
    def args(lst: Any) -> list[list[Any]]:
        return [[a.name, a.type_attr, a.number_attr, a.type_list_attr, a.type, a.is_ref]
                for a in lst]
    attrs = {a.name: [a.type, a.HasField("default_value")] for a in op.attr}
    return [args(op.input_arg), args(op.output_arg), attrs]


def render(signatures: dict[str, Any], tf_op_names: list[str]) -> str:
    """The file's text: one op per line, op names 8 a line; sorted, so diffs stay small."""
    def dump(v: Any) -> str:
        return json.dumps(v, separators=(",", ":"))
    sigs = ",\n".join(f"  {dump(n)}: {dump(signatures[n])}" for n in sorted(signatures))
    names = sorted(tf_op_names)
    rows = ",\n".join("  " + ",".join(dump(n) for n in names[i:i + 8])
                      for i in range(0, len(names), 8))
    return '{"signatures": {\n' + sigs + '\n},\n"tf_op_names": [\n' + rows + "\n]}\n"


def main() -> None:
    from tensorflow.python.framework import op_def_registry
    ap = argparse.ArgumentParser()
    ap.add_argument("ops", help="file with the op names tensorweave registers")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    names = sorted(set(Path(args.ops).read_text().split()) | set(EXTRA))
    signatures = {}
    for name in names:
        op = op_def_registry.get(name)
        if op is not None:
            signatures[name] = _signature(op)
    # Every op name TF registers: tests/framework/test_tf_graph_compat.py checks that each op
    # we register under a TF name has its signature here (else: regenerate).
    all_names = [n for n in _all_op_names() if not n.startswith("_")]
    Path(args.out).write_text(render(signatures, all_names))


if __name__ == "__main__":
    main()

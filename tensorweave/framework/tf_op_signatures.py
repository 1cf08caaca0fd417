"""TensorFlow's op interfaces (arg and attr names), loaded from `tf_op_signatures.json`.

The JSON beside this module is generated from real TensorFlow's op registry by
`tools/gen_tf_op_signatures.py` (do not edit it: regenerate). Per op, `SIGNATURES`
holds (inputs, outputs, attrs): inputs and outputs as tuples of (name, type_attr,
number_attr, type_list_attr, fixed DataType enum, is_ref); attrs as
name -> (type, has_default). `TF_OP_NAMES`: every op name TensorFlow registers.

Example:
    >>> SIGNATURES["Abs"][0]
    (('x', 'T', '', '', 0, False),)
    >>> "MatMul" in TF_OP_NAMES
    True
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("tf_op_signatures.json")


def _load() -> tuple[dict[str, tuple[Any, ...]], frozenset[str]]:
    try:
        raw = json.loads(_DATA.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ImportError(f"{_DATA} is missing: the package was installed without its data "
                          "files (pyproject's package-data); reinstall tensorweave.") from e
    sigs = {name: (tuple(tuple(a) for a in ins), tuple(tuple(a) for a in outs),
                   {k: tuple(v) for k, v in attrs.items()})
            for name, (ins, outs, attrs) in raw["signatures"].items()}
    return sigs, frozenset(raw["tf_op_names"])


SIGNATURES, TF_OP_NAMES = _load()

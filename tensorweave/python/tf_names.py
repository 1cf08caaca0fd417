"""TF 1.15's public names per `tensorflow.python.<path>` module, loaded from `tf_names.json`.

The JSON beside this module is generated from TF 1.15's sources by
`tools/gen_tf_python_names.py` (do not edit it: regenerate). `NAMES` maps each
module path (relative to `tensorflow.python`) to its public names; a function's
value is the tuple of parameters a caller must pass (TF's required positional
ones), anything else's is None. `python/modules.py` reads it on first use.

Example:
    >>> NAMES["training.training_util"]["assert_global_step"]
    ('global_step_tensor',)
"""
from __future__ import annotations

import json
from pathlib import Path

_DATA = Path(__file__).with_name("tf_names.json")


def _load() -> dict[str, dict[str, tuple[str, ...] | None]]:
    try:
        raw = json.loads(_DATA.read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ImportError(f"{_DATA} is missing: the package was installed without its data "
                          "files (pyproject's package-data); reinstall tensorweave.") from e
    return {rel: {n: None if p is None else tuple(p) for n, p in names.items()}
            for rel, names in raw.items()}


NAMES = _load()

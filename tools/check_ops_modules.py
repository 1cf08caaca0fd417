"""Checks that every module under tensorweave/ops/ defines at least one op.

`tensorweave/ops/` holds op definitions only (docs/architecture.md): importing a
module there runs `define_op` at least once, directly or through a definer
(`define_apply`, `define_exp_linear`, ...). Libraries built on ops (RNN cells, the
Dataset API, variable scopes, lookup tables, ...) live in the layer that uses them.
Exempt: package `__init__.py` files and `ops/op_author.py`, the op-author module.

Each op records the module whose import defined it (`OpDef.module`); this tool imports
every ops/ module and compares.

Usage:
    .venv/bin/python tools/check_ops_modules.py          # exit 1 naming each offender
    .venv/bin/python tools/check_ops_modules.py --list   # every ops/ module without an op
"""
from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXEMPT = {"tensorweave.ops.op_author"}

def modules_without_ops() -> list[str]:
    """The tensorweave.ops modules (dotted names) whose import defines no op, sorted."""
    sys.path.insert(0, str(ROOT))
    import tensorweave.ops
    from tensorweave.framework.op_def import registered_ops
    names = [m.name for m in pkgutil.walk_packages(tensorweave.ops.__path__, "tensorweave.ops.")
             if not m.ispkg]
    for name in names:
        importlib.import_module(name)
    defining = {op.module for op in registered_ops().values()}
    return sorted(n for n in names if n not in defining and n not in EXEMPT)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print every ops/ module without an op")
    args = ap.parse_args()
    missing = modules_without_ops()
    if args.list:
        for name in missing:
            path = ROOT / (name.replace(".", "/") + ".py")
            print(f"{len(path.read_text(encoding='utf-8').splitlines()):5d}  {name}")
        print(f"{len(missing)} ops/ modules define no op", file=sys.stderr)
        return 0
    if missing:
        print("tensorweave/ops/ holds op definitions only; these modules define no op:\n  "
              + "\n  ".join(missing) + "\nMove each to the layer that uses it "
              "(docs/architecture.md, 'Where new things go').")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

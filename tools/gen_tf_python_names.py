"""Writes tensorweave/python/tf_names.json: the public names of TF 1.15's internal modules.

For each module in `tensorweave.python.table.MODULES`, the public names TF 1.15's
`tensorflow/python/<path>.py` has (defined there, or imported from another
TensorFlow module that is not a utility, or star-imported from a generated
`gen_*_ops` module), and for functions their required positional parameters,
which `tensorweave.python` checks against ours before it maps a name.

TF's sources are read from the mirror (git); the generated `gen_*_ops` modules are
not in TF's repository, so their names come from /work/tfvenv's TensorFlow,
keeping only ops TF 1.15 registers (core/ops/*.cc).

The file is JSON, one module per line: {"client.session": {"Session": null,
"register_session_run_conversion_functions": ["tensor_type", "fetch_function"], ...}, ...}
(null: not a function; a list: the required positional parameters).
`tensorweave/python/tf_names.py` loads it.

Usage:
    .venv/bin/python tools/gen_tf_python_names.py [--repo PATH] [--tf-python PATH] [--out PATH]
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

def _load_table() -> dict[str, tuple[str, ...]]:
    # The table file alone, without importing tensorweave (this tool reads no model).
    spec = importlib.util.spec_from_file_location("_tw_table",
                                                  ROOT / "tensorweave/python/table.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.MODULES

TAG = "v1.15.0"
SKIP_SOURCES = ("tensorflow.python.util", "tensorflow.python.platform.tf_logging",
                "tensorflow.tools", "tensorflow.python.framework.tensor_like")
SKIP_NAMES = {"absolute_import", "division", "print_function", "tf_export"}


class Extractor:
    def __init__(self, repo: str, tf_python: str) -> None:
        self.repo = repo
        self.tf_python = tf_python
        out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", TAG,
                              "tensorflow/"], check=True, capture_output=True, text=True)
        self.files = set(out.stdout.split())
        self.cache: dict[str, dict[str, tuple[str, ...] | None]] = {}
        self._gen: dict[str, dict[str, tuple[str, ...] | None]] | None = None

    def _path(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for p in (base + ".py", base + "/__init__.py"):
            if p in self.files:
                return p
        return None

    def is_module(self, module: str) -> bool:
        # Generated modules (protos, op wrappers) are not in the source tree.
        last = module.rsplit(".", 1)[-1]
        if last.endswith("_pb2") or last.startswith("gen_"):
            return True
        return self._path(module) is not None

    def names(self, module: str) -> dict[str, tuple[str, ...] | None]:
        if module in self.cache:
            return self.cache[module]
        self.cache[module] = {}  # cycles: a module being read offers nothing yet
        if module.split(".")[-1].startswith("gen_"):
            result = self.gen_names(module)
        else:
            result = self._read(module)
        self.cache[module] = result
        return result

    def _read(self, module: str) -> dict[str, tuple[str, ...] | None]:
        path = self._path(module)
        if path is None:
            return {}
        src = subprocess.run(["git", "-C", self.repo, "show", f"{TAG}:{path}"],
                             check=True, capture_output=True, text=True).stdout
        tree = ast.parse(src)
        out: dict[str, tuple[str, ...] | None] = {}
        explicit_all: list[str] | None = None
        for node in _top_level(tree.body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out[node.name] = _params(node)
            elif isinstance(node, ast.ClassDef):
                out[node.name] = None
            elif isinstance(node, ast.Assign):
                if (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                        and node.value.func.id == "LazyLoader"):
                    continue  # a module loaded on first use, not a name of this module
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        if t.id == "__all__" and isinstance(node.value, (ast.List, ast.Tuple)):
                            explicit_all = [e.value for e in node.value.elts
                                            if isinstance(e, ast.Constant)]
                        out[t.id] = self._alias(module, node.value, out)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                src_mod = node.module
                if not src_mod.startswith("tensorflow.") or src_mod.startswith(SKIP_SOURCES):
                    continue
                for a in node.names:
                    if a.name == "*":
                        out.update(self.names(src_mod))
                    elif not self.is_module(f"{src_mod}.{a.name}"):
                        out[a.asname or a.name] = self.names(src_mod).get(a.name)
        if explicit_all is not None:
            out = {k: out.get(k) for k in explicit_all}
        return {k: v for k, v in out.items() if not k.startswith("_") and k not in SKIP_NAMES}

    @staticmethod
    def _alias(module: str, value: ast.expr, seen: dict[str, tuple[str, ...] | None]
               ) -> tuple[str, ...] | None:
        # `reverse = reverse_v2`: the alias takes the function's parameters.
        if isinstance(value, ast.Name) and value.id in seen:
            return seen[value.id]
        return None

    def gen_names(self, module: str) -> dict[str, tuple[str, ...] | None]:
        if self._gen is None:
            self._gen = {}
        if module in self._gen:
            return self._gen[module]
        ops = self.tf15_ops()
        code = (
            "import importlib, inspect, json, sys\n"
            f"m = importlib.import_module({module!r})\n"
            "out = {}\n"
            "for n in dir(m):\n"
            "    f = getattr(m, n)\n"
            "    if n.startswith('_') or not inspect.isfunction(f) or n.endswith(\n"
            "            ('_eager_fallback',)) or f.__module__ != m.__name__:\n"
            "        continue\n"
            "    try:\n"
            "        ps = inspect.signature(f).parameters.values()\n"
            "    except (TypeError, ValueError):\n"
            "        continue\n"
            "    out[n] = [p.name for p in ps if p.default is p.empty and p.kind in\n"
            "              (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]\n"
            "json.dump(out, sys.stdout)\n")
        res = subprocess.run([self.tf_python, "-c", code], check=True, capture_output=True,
                             text=True)
        found = json.loads(res.stdout.strip().splitlines()[-1])
        # TF 2's gen modules also hold CamelCase raw-op aliases, which 1.15's did not.
        names = {n: tuple(p) for n, p in found.items()
                 if n == n.lower() and n.replace("_", "").lower() in ops}
        self._gen[module] = names
        return names

    def tf15_ops(self) -> set[str]:
        out = subprocess.run(["git", "-C", self.repo, "grep", "-h", "-o",
                              r'REGISTER_OP("[A-Za-z0-9]*")', TAG, "--",
                              "tensorflow/core/ops/"], check=True, capture_output=True,
                             text=True).stdout
        return {m.lower() for m in re.findall(r'"([A-Za-z0-9]+)"', out)}


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body)
        else:
            out.append(node)
    return out


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    args = fn.args.posonlyargs + fn.args.args
    required = args[:len(args) - len(fn.args.defaults)]
    return tuple(a.arg for a in required)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", default="/work/.mirror/uve+tensorflow/repo")
    ap.add_argument("--tf-python", default="/work/tfvenv/bin/python")
    ap.add_argument("--out", default=str(ROOT / "tensorweave/python/tf_names.json"))
    args = ap.parse_args()
    ex = Extractor(args.repo, args.tf_python)
    table = {}
    for rel in sorted(_load_table()):
        table[rel] = dict(sorted(ex.names("tensorflow.python." + rel).items()))
        print(f"{rel}: {len(table[rel])} names", file=sys.stderr)
    Path(args.out).write_text(render(table))


def render(table: dict[str, dict[str, tuple[str, ...] | None]]) -> str:
    """The file's text: one module per line, sorted, so diffs stay small."""
    rows = ",\n".join(f"  {json.dumps(rel)}: {json.dumps(names, separators=(',', ':'))}"
                       for rel, names in sorted(table.items()))
    return "{\n" + rows + "\n}\n"


if __name__ == "__main__":
    main()

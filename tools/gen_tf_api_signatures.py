"""Writes tests/data/tf_api_signatures.json: TF 1.x's public Python signatures.

For every public callable of `tf.compat.v1` (root and the sub-namespaces in
NAMESPACES), its parameters in order, one string each: `x` (positional or
keyword, required), `x=` (with a default), `/x` and `/x=` (positional-only),
`*x`, `**x`, and `:x` / `:x=` (keyword-only); for a class, its constructor's
parameters without `self`. Signatures made only of `*args, **kwargs` say nothing
and are left out. Positional order and
names are an interface TF1 programs depend on (`tf.while_loop(c, b, v, None, 10,
True, False, "loop")`), so tests/project/test_tf_api_signatures.py checks ours against it.

Sources, in order of precedence (TF 1.15 is the specification):
1. OVERRIDES below, each with its reason.
2. TF 1.15's sources (the git mirror): every `def`/`class` decorated with
   `tf_export` under tensorflow/python, read with `ast`. Where it differs from
   TF 2.21 the tool prints the name (TF 2.x added `index_type` before `name` in
   `nn.top_k`, for instance; a TF1 program passing `name` 4th means 1.15's order).
   This also covers namespaces TF 2.21 builds only from Keras 2 (`layers`,
   `keras.layers`, `keras.optimizers`: `keras_export` definitions) and
   `tf.estimator` (tensorflow/estimator at the same tag: `estimator_export`).
3. TF 2.21's `tf.compat.v1`, introspected: generated op wrappers (`gen_*_ops`
   are not in TF's repository) and names exported by call rather than decorator.

Run with a Python that has TensorFlow (never a tensorweave dependency):

    /work/tfvenv/bin/python tools/gen_tf_api_signatures.py [--repo MIRROR]
        [--estimator-repo MIRROR]
"""
from __future__ import annotations

import argparse
import ast
import inspect
import json
import os
import subprocess
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "tf_api_signatures.json"
TAG = "v1.15.0"
DEFAULT_REPO = "/work/.mirror/uve+tensorflow/repo"
# tf.estimator lived in its own repository (tensorflow/estimator), tagged alike.
DEFAULT_ESTIMATOR_REPO = "/work/.mirror/tensorflow+estimator/repo"

# Sub-namespaces of tf.compat.v1 recorded besides the root ("" below).
NAMESPACES = ("", "nn", "train", "losses", "metrics", "data", "io", "image", "sparse",
              "math", "strings", "summary", "linalg", "random", "feature_column",
              "initializers", "saved_model", "layers", "keras.layers", "keras.optimizers",
              "estimator", "estimator.export", "estimator.inputs", "debugging", "errors",
              "lookup", "python_io", "queue", "sets", "signal", "app", "logging", "gfile",
              "graph_util", "distribute", "config", "bitwise", "dtypes", "io.gfile",
              "nn.rnn_cell", "train.queue_runner", "saved_model.loader", "saved_model.builder",
              "saved_model.utils", "saved_model.signature_def_utils", "test", "keras",
              "keras.initializers", "keras.losses", "keras.metrics", "keras.backend",
              "keras.models", "keras.utils", "keras.callbacks", "keras.activations",
              "keras.regularizers", "keras.constraints")
# Namespaces TF 2.21 cannot introspect (built from Keras 2 only): TF 1.15's sources alone.
SOURCE_ONLY = ("layers", "nn.rnn_cell", "estimator", "estimator.export", "estimator.inputs",
               "keras", "keras.layers", "keras.optimizers", "keras.initializers", "keras.losses",
               "keras.metrics", "keras.backend", "keras.models", "keras.utils",
               "keras.callbacks", "keras.activations", "keras.regularizers",
               "keras.constraints")
# The decorators that export a definition to the public API (Keras, Estimator: their own).
EXPORTERS = ("tf_export", "keras_export", "estimator_export")

_PREFIX = {"POSITIONAL_ONLY": "/", "POSITIONAL_OR_KEYWORD": "", "VAR_POSITIONAL": "*",
           "KEYWORD_ONLY": ":", "VAR_KEYWORD": "**"}


def _encode(name: str, kind: str, has_default: bool) -> str:
    return _PREFIX[kind] + name + ("=" if has_default else "")


# TF 2.21 compat.v1 signatures that are not TF 1.15's (checked against v1.15.0 sources).
OVERRIDES: dict[str, tuple[str, list[str]]] = {
    # Generated op wrappers (not in TF's sources) whose ops gained attrs after 1.15;
    # TF 1.15's op registry (tensorflow/core/ops/*.cc) has neither attr.
    "scatter_nd": ("ScatterNd has no bad_indices_policy attr in 1.15 (array_ops.cc)",
                   ["indices", "updates", "shape", "name="]),
    "lin_space": ("LinSpace: 1.15's wrapper is the generated op, without TF 2's axis",
                  ["start", "stop", "num", "name="]),
    "linspace": ("alias of lin_space in 1.15", ["start", "stop", "num", "name="]),
}


def _params(obj: Any) -> list[str] | None:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if inspect.isclass(obj) and params and params[0].name == "self":
        params = params[1:]
    return [_encode(p.name, p.kind.name, p.default is not inspect.Parameter.empty)
            for p in params]


def _from_runtime(table: dict[str, list[str]]) -> None:
    import tensorflow as tf
    v1 = tf.compat.v1
    for ns in NAMESPACES:
        if ns in SOURCE_ONLY:
            continue
        mod = v1
        try:
            for part in filter(None, ns.split(".")):
                mod = getattr(mod, part)
            names = dir(mod)
        except (AttributeError, ImportError) as e:  # Keras-3-backed lazy modules
            print(f"skipped tf.compat.v1.{ns}: {type(e).__name__}: {e}")
            continue
        for name in names:
            if name.startswith("_"):
                continue
            try:
                obj = getattr(mod, name)
            except Exception:  # lazily loaded Keras 3 aliases refuse to load
                continue
            if inspect.ismodule(obj) or not callable(obj):
                continue
            if inspect.isclass(obj) and obj.__init__ is object.__init__:
                continue
            # Proto messages and C++-bound types have no Python signature worth keeping.
            if inspect.isclass(obj) and "google.protobuf" in str(type(obj)):
                continue
            params = _params(obj)
            target = obj if inspect.isfunction(obj) else None
            key = f"{getattr(target, '__module__', '')}:{getattr(target, '__qualname__', '')}"
            params = DEFS.get(key, params)
            qual = f"{ns}.{name}" if ns else name
            if params is not None:
                table[qual] = params
            if inspect.isclass(obj):
                table.update(_runtime_methods(qual, obj))


def _runtime_methods(qual: str, cls: type) -> dict[str, list[str]]:
    """`cls`'s public methods defined by TensorFlow, as "Class.method" (without self)."""
    out: dict[str, list[str]] = {}
    for m in dir(cls):
        if m.startswith("_"):
            continue
        try:
            raw = inspect.getattr_static(cls, m)
        except AttributeError:
            continue
        func = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
        if not inspect.isfunction(func) or not func.__module__.startswith("tensorflow"):
            continue
        try:
            params = list(inspect.signature(func).parameters.values())
        except (TypeError, ValueError):
            continue
        if not isinstance(raw, staticmethod) and params:
            params = params[1:]
        from_115 = DEFS.get(f"{func.__module__}:{func.__qualname__}")
        out[f"{qual}.{m}"] = from_115 if from_115 is not None else [
            _encode(p.name, p.kind.name, p.default is not inspect.Parameter.empty)
            for p in params]
    return out


def _arg_list(args: ast.arguments, drop_self: bool) -> list[str]:
    pos = list(args.posonlyargs) + list(args.args)
    if drop_self and pos and pos[0].arg in ("self", "cls"):
        pos = pos[1:]
    first_default = len(pos) - len(args.defaults)
    out = [_encode(a.arg, "POSITIONAL_OR_KEYWORD", i >= first_default)
           for i, a in enumerate(pos)]
    if args.vararg:
        out.append("*" + args.vararg.arg)
    out += [_encode(a.arg, "KEYWORD_ONLY", d is not None)
            for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg:
        out.append("**" + args.kwarg.arg)
    return out


def _v1_exports(node: ast.AST) -> list[str]:
    """The tf.compat.v1 names a `@tf_export(...)` decorator gives `node`."""
    names: list[str] = []
    for dec in getattr(node, "decorator_list", []):
        if not (isinstance(dec, ast.Call) and getattr(dec.func, "id", "") in EXPORTERS):
            continue
        v1 = [kw.value for kw in dec.keywords if kw.arg == "v1"]
        elts = (v1[0].elts if v1 and isinstance(v1[0], (ast.List, ast.Tuple))
                else [] if v1 else dec.args)  # no v1=: the names serve v1 and v2
        names += [e.value for e in elts if isinstance(e, ast.Constant)]
    return names


def _recorded(name: str) -> bool:
    ns, _, leaf = name.rpartition(".")
    return ns in NAMESPACES and not leaf.startswith("_")


def _source_methods(qual: str, cls: ast.ClassDef) -> dict[str, list[str]]:
    """The public methods `cls` defines itself, as "Class.method" (without self)."""
    out: dict[str, list[str]] = {}
    for item in cls.body:
        if not isinstance(item, ast.FunctionDef) or item.name.startswith("_"):
            continue
        decorators = {getattr(d, "id", getattr(d, "attr", "")) for d in item.decorator_list}
        if decorators & {"property", "setter", "getter", "deleter"}:
            continue
        out[f"{qual}.{item.name}"] = _arg_list(item.args,
                                               drop_self="staticmethod" not in decorators)
    return out


def _init_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> ast.FunctionDef | None:
    """`cls`'s constructor (__init__, or __new__ for namedtuple-based classes such as
    EstimatorSpec), or the one it inherits from a base class of the same module."""
    for wanted in ("__init__", "__new__"):
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == wanted:
                return item
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in classes and base.id != cls.name:
            found = _init_of(classes[base.id], classes)
            if found is not None:
                return found
    return None


# Every def and method in the 1.15 sources read, by "module:qualname": a function TF
# 2.21 exports from the same place (a method inherited from DatasetV2, say) gets 1.15's
# parameters from here rather than 2.21's.
DEFS: dict[str, list[str]] = {}


def _from_sources(repo: str, subdir: str = "tensorflow/python") -> dict[str, list[str]]:
    files = subprocess.run(["git", "-C", repo, "grep", "-l", "-E",
                            "@(tf|keras|estimator)_export", TAG, "--", subdir], check=True,
                           capture_output=True, text=True).stdout.split()
    table: dict[str, list[str]] = {}
    for spec in files:
        path = spec.split(":", 1)[1]
        if not path.endswith(".py") or path.endswith("_test.py"):
            continue
        src = subprocess.run(["git", "-C", repo, "show", f"{TAG}:{path}"], check=True,
                             capture_output=True, text=True).stdout
        body = ast.parse(src).body
        classes = {n.name: n for n in body if isinstance(n, ast.ClassDef)}
        module = path[:-3].replace("/", ".")
        for node in body:
            if isinstance(node, ast.FunctionDef):
                DEFS[f"{module}:{node.name}"] = _arg_list(node.args, drop_self=False)
            elif isinstance(node, ast.ClassDef):
                for meth, params in _source_methods(node.name, node).items():
                    DEFS[f"{module}:{meth}"] = params
        for node in body:
            exported = [n for n in _v1_exports(node) if _recorded(n)]
            if not exported:
                continue
            if isinstance(node, ast.FunctionDef):
                params = _arg_list(node.args, drop_self=False)
            elif isinstance(node, ast.ClassDef):
                for name in exported:
                    table.update(_source_methods(name, node))
                init = _init_of(node, classes)
                if init is None:
                    continue
                params = _arg_list(init.args, drop_self=True)
            else:
                continue
            for name in exported:
                table[name] = params
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", default=DEFAULT_REPO, help="TensorFlow git mirror")
    parser.add_argument("--estimator-repo", default=DEFAULT_ESTIMATOR_REPO,
                        help="tensorflow/estimator git mirror")
    args = parser.parse_args()
    table: dict[str, list[str]] = {}
    sources = _from_sources(args.repo)
    sources.update(_from_sources(args.estimator_repo, "tensorflow_estimator/python"))
    _from_runtime(table)
    for name, params in sources.items():
        if name in table and table[name] != params:
            print(f"TF 1.15 differs from TF 2.21: {name}: {table[name]} -> {params}")
        table[name] = params
    for name, (reason, params) in OVERRIDES.items():
        assert reason, name
        table[name] = params
    table = {k: v for k, v in table.items() if any(p[0] != "*" for p in v)}
    # One line per callable: reviewable diffs without a giant file.
    lines = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in sorted(table.items())]
    OUT.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"wrote {len(table)} signatures to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

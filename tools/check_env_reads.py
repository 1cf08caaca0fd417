"""Fails when a module other than the knob registry (base/knobs.py, knob_types.py) reads a
`TENSORWEAVE_*` variable.

Every setting read from the environment has one home, the knob registry (docs/
configuration.md): it parses, checks and documents the value. This check, run by
`./dev.sh check`, finds reads elsewhere and names them as file:line. A read is a
lookup of a `TENSORWEAVE_*` name: `os.environ.get(K)`, `os.getenv(K)`, `environ[K]`,
`K in environ`, `.pop(K)`/`.setdefault(K)`, where K is a string literal, an f-string
starting with the prefix, a constant assigned one (`CA_ENV = "TENSORWEAVE_TLS_CA"`, in
any scanned file) or a knob's name (`knobs.BULK.name`, or a constant assigned it).
Writing a variable (`os.environ[K] = v`, a child's env dict) is not a read.

    python tools/check_env_reads.py              # scans tensorweave/
    python tools/check_env_reads.py FILE_OR_DIR  # scans those instead
"""
from __future__ import annotations

import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PREFIX = "TENSORWEAVE_"
HOME = os.path.join("tensorweave", "base", "knobs.py")
# The knob types read the values (knob_types.py); the table above names every variable.
HOMES = {HOME, os.path.join("tensorweave", "base", "knob_types.py")}
_LOOKUPS = {"get", "getenv", "pop", "setdefault"}  # methods whose first argument is read


def _python_files(paths: list[str]) -> list[str]:
    found = []
    for path in paths:
        if os.path.isfile(path):
            found.append(path)
        for root, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".py")]
    return [f for f in found if os.path.relpath(os.path.abspath(f), ROOT) not in HOMES]


def _knob_name_attr(node: ast.AST) -> bool:
    """`knobs.X.name` (or `base.knobs.X.name`): the name of a registered knob."""
    return (isinstance(node, ast.Attribute) and node.attr == "name"
            and isinstance(node.value, ast.Attribute) and node.value.attr.isupper()
            and isinstance(node.value.value, (ast.Name, ast.Attribute))
            and (getattr(node.value.value, "id", None) == "knobs"
                 or getattr(node.value.value, "attr", None) == "knobs"))


def _literal(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value if node.value.startswith(PREFIX) else None
    if isinstance(node, ast.JoinedStr) and node.values:
        return _literal(node.values[0]) and ast.unparse(node)
    return None


def constants(trees: dict[str, ast.Module]) -> dict[str, str]:
    """Names assigned a `TENSORWEAVE_*` name anywhere in the scanned files: a literal, a
    knob's name, another such constant or a tuple of them."""
    names: dict[str, str] = {}
    for _ in range(2):  # a constant built from one assigned further down
        for tree in trees.values():
            for node in tree.body:  # module level only: a function's names are its own
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    key = _key(node.value, names)
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names.update({t.id: key for t in targets if key and isinstance(t, ast.Name)})
    return names


def _key(node: ast.AST, names: dict[str, str]) -> str | None:
    """The variable(s) `node` names, if `TENSORWEAVE_*` ones (`names`: what is in scope)."""
    if _knob_name_attr(node):
        return ast.unparse(node)
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        return names.get(node.attr)
    if isinstance(node, ast.Starred):
        return _key(node.value, names)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        keys = [k for k in (_key(e, names) for e in node.elts) if k]
        return ", ".join(keys) or None
    return _literal(node)


def _lookup(node: ast.AST) -> tuple[ast.AST, str] | None:
    """(key, how) when `node` looks a key up in a mapping or the environment."""
    if isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Attribute) and node.func.attr in _LOOKUPS)
            or (isinstance(node.func, ast.Name) and node.func.id == "getenv")):
        return node.args[0], ast.unparse(node.func)
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        return node.slice, ast.unparse(node.value) + "[...]"
    if isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn))
                                             for op in node.ops):
        return node.left, "in " + ast.unparse(node.comparators[0])
    return None


def _scope(func: ast.AST, names: dict[str, str]) -> dict[str, str]:
    """`names` plus what `func`'s own assignments and loops bind to TENSORWEAVE_* names
    (`for n in (CA_ENV, KEY_ENV)`, `names = (*_TLS_ENVS, TOKEN_FILE_ENV)`)."""
    local = dict(names)
    for _ in range(2):  # a loop over a name bound later in the walk order
        for node in ast.walk(func):
            pairs: list[tuple[ast.AST, ast.AST]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, (ast.For, ast.comprehension)):
                pairs = [(node.target, node.iter)]
            for target, value in pairs:
                key = _key(value, local)
                if key and isinstance(target, ast.Name):
                    local[target.id] = key
    return local


def reads(path: str, tree: ast.Module, names: dict[str, str],
          calls: dict[str, list[tuple[int, str]]] | None = None) -> list[str]:
    """"path:line: ..." for each read of a `TENSORWEAVE_*` variable in `tree`.

    A function that looks up one of its parameters is a read where a call (in `calls`:
    function name -> (argument position, variable) of each call that passes one) gives
    it a `TENSORWEAVE_*` name, as `_number(ENV_MAX_CONNECTIONS, 1024)` did.
    """
    found: dict[str, str] = {}
    funcs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for scope in [*funcs, tree]:  # a function's own bindings first
        local = _scope(scope, names) if scope is not tree else names
        params = ([a.arg for a in scope.args.posonlyargs + scope.args.args]
                  if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) else [])
        for node in ast.walk(scope):
            hit = _lookup(node)
            if hit is None:
                continue
            key_node, how = hit
            key = _key(key_node, local)
            if not key and isinstance(key_node, ast.Name) and key_node.id in params:
                index = params.index(key_node.id)
                passed = [k for i, k in (calls or {}).get(scope.name, []) if i == index]
                key = ", ".join(dict.fromkeys(passed)) or None
                how += f" of parameter {key_node.id!r} of {scope.name}()"
            where = f"{os.path.relpath(path, ROOT)}:{node.lineno}"
            if key and where not in found:
                found[where] = (f"{where}: reads {key} ({how}); read it through "
                                "tensorweave.base.knobs instead")
    return list(found.values())


def passed_names(trees: dict[str, ast.Module], names: dict[str, str]
                 ) -> dict[str, list[tuple[int, str]]]:
    """Function name -> (position, variable) for each call that passes a TENSORWEAVE_* name."""
    calls: dict[str, list[tuple[int, str]]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and _lookup(node) is None:
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                for i, arg in enumerate(node.args):
                    key = _key(arg, names)
                    if key:
                        calls.setdefault(name, []).append((i, key))
    return calls


def main(argv: list[str] | None = None) -> int:
    paths = (sys.argv[1:] if argv is None else argv) or [os.path.join(ROOT, "tensorweave")]
    trees, texts = {}, {}
    for f in _python_files(paths):
        with open(f, encoding="utf-8") as fh:
            texts[f] = fh.read()
        trees[f] = ast.parse(texts[f], f)
    names = constants(trees)
    # Only a file that names a TENSORWEAVE_* variable (a literal, knobs.X.name, or a
    # constant bound to one) can read one or pass one on: the walks below, the costly part
    # (a node is walked once per enclosing function), skip the rest (5 s -> ~2 s).
    idents = [re.escape(n) for n in names if not n.startswith("__")]  # not __all__
    named = re.compile(r"TENSORWEAVE|\bknobs\b" + (r"|\b(?:" + "|".join(idents) + r")\b"
                                                    if idents else ""))
    relevant = {f: t for f, t in trees.items() if named.search(texts[f])}
    calls = passed_names(relevant, names)
    found = [line for f, tree in relevant.items() for line in reads(f, tree, names, calls)]
    for line in found:
        print(line, file=sys.stderr)
    if found:
        print(f"{len(found)} read(s) of TENSORWEAVE_* variables outside {HOME}: each setting "
              "is declared and read there (docs/configuration.md).", file=sys.stderr)
        return 1
    print(f"environment reads: none outside {HOME} ({len(trees)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

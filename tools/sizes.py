"""Size check (`./dev.sh check`): no hand-written file over 450 lines, no function over 60.

The idea is tinygrad's sz.py: a limit that a reviewer never has to argue about, so a file
or a function that grows past what one reads in one sitting is split along a real seam
while it is still easy to do.

What is counted, and why:

* Files: every `*.py` under the repository (`.venv*`, `build`, `.git` and caches aside), by
  physical lines. Generated files do not count: `*_pb2.py` (protoc) and any file whose first
  5 lines say "do not edit" (the generated tables, e.g. `python/tf_names.py`); a generator
  writes those, and their size is the data's.
* Functions (and methods, nested functions, lambdas aside): from the `def` line to the last
  line of the body, blank lines and comments included (a reader reads them), the
  docstring excluded. Public TF API functions carry TF's long Google-style docstrings with
  examples, which are documentation, not logic to split. A nested function's lines count
  toward its enclosing function too: that is what the reader of the outer one reads.

Exceptions live in `tools/sizes_allowlist.txt`, one a line: `path  reason` for a file or
`path::function  reason` for a function (`Class.method` for a method). `path` may be a
tail of the real path at a `/` (`raw_rnn.py::raw_rnn`), so an entry survives its file
moving to another package. An entry that matches nothing is reported (so the list stays
short) but does not fail the check.

Example:
    $ python tools/sizes.py                 # exit 1 and one line per violation
    $ python tools/sizes.py --max-function 40 --root some/dir
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_LINES = 450
MAX_FUNCTION_LINES = 60
SKIP_DIRS = {".git", ".venv", ".venv-protos", "build", "dist", "__pycache__", ".mypy_cache",
             ".pytest_cache", ".ruff_cache", ".hypothesis", "node_modules"}
DEFAULT_ALLOWLIST = Path(__file__).with_name("sizes_allowlist.txt")


@dataclass(frozen=True)
class Violation:
    """One thing over its limit: `name` is `path` or `path::function`."""

    name: str
    lines: int
    limit: int

    def __str__(self) -> str:
        what = "function" if "::" in self.name else "file"
        return (f"{self.name}: {self.lines} lines, over the {what} limit of {self.limit}; "
                f"split it along a real seam, or add it with a reason to tools/sizes_allowlist.txt")


def is_generated(path: Path, text: str) -> bool:
    """True for protoc output and files whose first 5 lines say "do not edit"."""
    if path.name.endswith("_pb2.py"):
        return True
    head = "\n".join(text.splitlines()[:5]).lower()
    return "do not edit" in head


def python_files(root: Path) -> list[Path]:
    """Every `*.py` under `root`, skipping virtualenvs, caches and build output."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if any(part in SKIP_DIRS or part.startswith(".venv") for part in rel.parts[:-1]):
            continue
        out.append(path)
    return out


def _docstring_lines(node: ast.AST) -> int:
    body = getattr(node, "body", [])
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        return (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
    return 0


def function_lengths(tree: ast.AST) -> list[tuple[str, int]]:
    """(qualified name, counted lines) for every function in `tree`, methods as `Class.f`."""
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                span = (child.end_lineno or child.lineno) - child.lineno + 1
                out.append((prefix + child.name, span - _docstring_lines(child)))
                visit(child, prefix + child.name + ".")
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def read_allowlist(path: Path) -> dict[str, str]:
    """`{entry: reason}` from the allow-list file; a line without a reason is an error."""
    entries: dict[str, str] = {}
    if not path.exists():
        return entries
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        entry, _, reason = line.partition(" ")
        if not reason.strip():
            raise SystemExit(f"{path}:{number}: {entry!r} has no reason; write "
                             f"'path[::function]  why it may stay over the limit'")
        entries[entry] = reason.strip()
    return entries


def _allowed(name: str, allow: dict[str, str], used: set[str]) -> bool:
    for entry in allow:
        if name == entry or name.endswith("/" + entry):
            used.add(entry)
            return True
    return False


def check(root: Path, allow: dict[str, str], max_file: int = MAX_FILE_LINES,
          max_function: int = MAX_FUNCTION_LINES) -> tuple[list[Violation], list[str]]:
    """The violations under `root` not on `allow`, and the allow-list entries never used."""
    violations: list[Violation] = []
    used: set[str] = set()
    for path in python_files(root):
        text = path.read_text(encoding="utf-8")
        if is_generated(path, text):
            continue
        rel = path.relative_to(root).as_posix()
        n_lines = len(text.splitlines())
        if n_lines > max_file and not _allowed(rel, allow, used):
            violations.append(Violation(rel, n_lines, max_file))
        try:
            tree = ast.parse(text, filename=rel)
        except SyntaxError as e:
            raise SystemExit(f"{rel}: cannot parse ({e}); fix the syntax error first") from e
        for qualname, n in function_lengths(tree):
            name = f"{rel}::{qualname}"
            if n > max_function and not _allowed(name, allow, used):
                violations.append(Violation(name, n, max_function))
    return violations, sorted(set(allow) - used)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--allowlist", type=Path, default=DEFAULT_ALLOWLIST)
    parser.add_argument("--max-file", type=int, default=MAX_FILE_LINES)
    parser.add_argument("--max-function", type=int, default=MAX_FUNCTION_LINES)
    args = parser.parse_args(argv)
    violations, unused = check(args.root, read_allowlist(args.allowlist), args.max_file,
                               args.max_function)
    for entry in unused:
        print(f"sizes: allow-list entry {entry!r} matches nothing over the limit any more; "
              f"remove it from {args.allowlist.name}", file=sys.stderr)
    for v in violations:
        print(v)
    if violations:
        return 1
    print(f"sizes: files <= {args.max_file} lines, functions <= {args.max_function} "
          f"(docstrings aside; {len(read_allowlist(args.allowlist))} allowed exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

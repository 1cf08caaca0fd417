"""RegexReplace, StaticRegexReplace and RegexFullMatch (RE2 semantics on Python `re`).

Patterns are matched on UTF-8 text (as RE2 does: `.` is one character); `\\d`,
`\\w`, `\\s` and `\\b` are ASCII-only, as in RE2. Rewrites use RE2's syntax: `\\0`
is the whole match, `\\1`..`\\9` the groups, `\\\\` a backslash.

It also holds the string family's shared helpers (`check_string`, `string_input`,
`attr_text`, `map_strings`, ...), which split_ops and string_ops import.

Example:
    >>> regex_replace(tf.constant(["a1b22"]), r"(\\d+)", r"<\\1>")   # [b"a<1>b<22>"]
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable

import numpy as np

import tensorweave.ops.io.tf_checkpoint_ops  # noqa: F401 (registers StaticRegexFullMatch)
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.text import text_of
from tensorweave.ops.op_author import REQUIRED, define_op


# ---- shared helpers of the family (formerly _util.py) ----
def check_string(t: Tensor, op_type: str, arg: str) -> None:
    """Raises TypeError naming the tensor when `t` is not a string tensor."""
    if t.dtype.base_dtype != _dt.string:
        raise TypeError(f"{op_type}: {arg} {t.name} must be a string tensor, got "
                        f"{t.dtype.base_dtype.name}; convert numbers with tf.as_string first")


def string_input(value: Any, op_type: str, arg: str) -> Tensor:
    """`value` as a string Tensor (a Python list of str/bytes becomes a Const).

    Raises:
        TypeError: naming the tensor, if it is not of dtype string.
    """
    if isinstance(value, Tensor):
        t = convert_to_tensor(value)
    elif np.size(np.asarray(value, dtype=object)) == 0:
        t = convert_to_tensor(value, dtype=_dt.string)
    else:
        t = convert_to_tensor(value)
    check_string(t, op_type, arg)
    return t


def as_bytes(v: Any) -> bytes:
    """One string element (bytes, str or numpy scalar) as bytes."""
    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8")
    return bytes(v)


attr_text = text_of  # a string attr (str or bytes) as str


def scalar_bytes(x: Any, op_type: str, arg: str) -> bytes:
    """The single string of a scalar input; InvalidArgument-style ValueError otherwise."""
    arr = np.asarray(x, dtype=object)
    if arr.ndim != 0:
        raise ValueError(f"{op_type}: {arg} must be a scalar, got shape {list(arr.shape)}")
    return as_bytes(arr.item())


def map_strings(x: Any, fn: Callable[[bytes], Any], dtype: Any = object) -> np.ndarray:
    """Applies `fn` to every element of a string array, keeping its shape."""
    arr = np.asarray(x, dtype=object)
    out = [fn(as_bytes(v)) for v in arr.reshape(-1)]
    return np.asarray(out, dtype=dtype).reshape(arr.shape)


def utf8_starts(s: bytes) -> list[int]:
    """Byte offsets where UTF-8 characters start (TF counts non-continuation bytes)."""
    return [i for i, b in enumerate(s) if (b & 0xC0) != 0x80]

_ENC = ("utf-8", "surrogateescape")  # invalid UTF-8 bytes survive a round trip


@functools.lru_cache(maxsize=256)
def _compile(pattern: bytes) -> re.Pattern[str]:
    try:
        return re.compile(pattern.decode(*_ENC), re.ASCII)
    except re.error as e:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid pattern: {pattern.decode('utf-8', 'replace')}, "
                        f"error: {e}") from None


Piece = str | int  # literal text, or the number of a group


@functools.lru_cache(maxsize=256)
def _parse_rewrite(rewrite: bytes, groups: int) -> tuple[Piece, ...]:
    text = rewrite.decode(*_ENC)
    pieces: list[Piece] = []
    lit: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\":
            lit.append(c)
            i += 1
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if nxt == "\\":
            lit.append("\\")
        elif nxt.isdigit() and nxt.isascii():
            n = int(nxt)
            if n > groups:
                raise errors.InvalidArgumentError(
                    None, None, f"Invalid rewrite pattern: {text}: it requests group \\{n}, "
                                f"but the regexp only has {groups} parenthesized subexpressions")
            if lit:
                pieces.append("".join(lit))
                lit = []
            pieces.append(n)
        else:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid rewrite pattern: {text}: a backslash must be followed "
                            "by a digit or a backslash")
        i += 2
    if lit:
        pieces.append("".join(lit))
    return tuple(pieces)


def _replace_one(rx: re.Pattern[str], pieces: tuple[Piece, ...], s: bytes,
                 replace_global: bool) -> bytes:
    text = s.decode(*_ENC)
    out: list[str] = []
    pos, last_end = 0, -1
    for m in rx.finditer(text):
        if m.start() == m.end() == last_end:
            continue  # RE2 allows no empty match right where the previous match ended
        out.append(text[pos:m.start()])
        out.extend(p if isinstance(p, str) else (m.group(p) or "") for p in pieces)
        pos = last_end = m.end()
        if not replace_global:
            break
    out.append(text[pos:])
    return "".join(out).encode(*_ENC)


def _replace_all(x: Any, pattern: bytes, rewrite: bytes, replace_global: bool) -> np.ndarray:
    rx = _compile(pattern)
    pieces = _parse_rewrite(rewrite, rx.groups)
    return map_strings(x, lambda s: _replace_one(rx, pieces, s, replace_global))


# ---- RegexReplace -----------------------------------------------------------------------
replace_op = define_op("RegexReplace", inputs=("input", "pattern", "rewrite"),
                       attrs={"replace_global": True})


def _check_scalar(t: Tensor, op_type: str, arg: str) -> None:
    check_string(t, op_type, arg)
    if t.shape.ndims not in (None, 0):
        raise ValueError(f"{op_type}: {arg} {t.name} must be a scalar, got shape {t.shape}")


@replace_op.shape
def _(x: Tensor, pattern: Tensor, rewrite: Tensor, *, replace_global: bool) -> Any:
    check_string(x, "RegexReplace", "input")
    _check_scalar(pattern, "RegexReplace", "pattern")
    _check_scalar(rewrite, "RegexReplace", "rewrite")
    return _dt.string, x.shape


@replace_op.kernel("CPU")
def _(x: Any, pattern: Any, rewrite: Any, *, replace_global: bool) -> np.ndarray:
    return _replace_all(x, scalar_bytes(pattern, "RegexReplace", "pattern"),
                        scalar_bytes(rewrite, "RegexReplace", "rewrite"), bool(replace_global))


replace_op.no_gradient()

# ---- StaticRegexReplace (pattern and rewrite known when the graph is built) -------------
static_replace_op = define_op("StaticRegexReplace", inputs=("input",),
                              attrs={"pattern": REQUIRED, "rewrite": REQUIRED,
                                     "replace_global": True})


@static_replace_op.shape
def _(x: Tensor, *, pattern: str, rewrite: str, replace_global: bool) -> Any:
    check_string(x, "StaticRegexReplace", "input")
    return _dt.string, x.shape


@static_replace_op.kernel("CPU")
def _(x: Any, *, pattern: str, rewrite: str, replace_global: bool) -> np.ndarray:
    return _replace_all(x, as_bytes(attr_text(pattern)), as_bytes(attr_text(rewrite)),
                        bool(replace_global))


static_replace_op.no_gradient()


def regex_replace(input: Any, pattern: Any, rewrite: Any,  # noqa: A002 (TF's name)
                  replace_global: bool = True, name: str | None = None) -> Tensor:
    """`tf.regex_replace`: replaces matches of `pattern` in each string with `rewrite`.

    With Python strings for both `pattern` and `rewrite` this builds TF's
    StaticRegexReplace (the pattern checked now); with tensors, RegexReplace.

    Args:
        input: a string tensor of any shape.
        pattern: an RE2 regular expression (scalar string).
        rewrite: the replacement; `\\1`..`\\9` insert groups, `\\0` the match.
        replace_global: replace every match (default) or only the first.
        name: the op name.

    Raises:
        TypeError: a non-string input, pattern or rewrite (naming it).
        tf.errors.InvalidArgumentError: a bad pattern ("Invalid pattern: <p>, error:
            ...") or rewrite; at run time for tensors, when built for Python strings.

    Example:
        >>> tf.regex_replace(tf.constant(["a-b"]), "(a)-(b)", r"\\2-\\1")   # [b"b-a"]
    """
    x = string_input(input, "RegexReplace", "input")
    g = get_default_graph()
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        _parse_rewrite(as_bytes(rewrite), _compile(as_bytes(pattern)).groups)
        return g.create_op("StaticRegexReplace", [x],
                           {"pattern": attr_text(pattern), "rewrite": attr_text(rewrite),
                            "replace_global": bool(replace_global)},
                           name=name or "StaticRegexReplace").outputs[0]
    p = string_input(pattern, "RegexReplace", "pattern")
    r = string_input(rewrite, "RegexReplace", "rewrite")
    return g.create_op("RegexReplace", [x, p, r], {"replace_global": bool(replace_global)},
                       name=name or "RegexReplace").outputs[0]


# ---- RegexFullMatch ---------------------------------------------------------------------
full_match_op = define_op("RegexFullMatch", inputs=("input", "pattern"))


@full_match_op.shape
def _(x: Tensor, pattern: Tensor) -> Any:
    check_string(x, "RegexFullMatch", "input")
    _check_scalar(pattern, "RegexFullMatch", "pattern")
    return _dt.bool, x.shape


@full_match_op.kernel("CPU")
def _(x: Any, pattern: Any) -> np.ndarray:
    rx = _compile(scalar_bytes(pattern, "RegexFullMatch", "pattern"))
    return map_strings(x, lambda s: rx.fullmatch(s.decode(*_ENC)) is not None, bool)


full_match_op.no_gradient()


def regex_full_match(input: Any, pattern: Any,  # noqa: A002 (TF's name)
                     name: str | None = None) -> Tensor:
    """`tf.strings.regex_full_match`: whether each whole string matches `pattern`.

    A Python-string pattern builds TF's StaticRegexFullMatch (checked now); a
    tensor pattern, RegexFullMatch.

    Raises:
        TypeError: a non-string input or pattern (naming it).
        tf.errors.InvalidArgumentError: a bad pattern, naming it.

    Example:
        >>> tf.strings.regex_full_match(tf.constant(["ab", "abc"]), "a.")   # [True, False]
    """
    x = string_input(input, "RegexFullMatch", "input")
    g = get_default_graph()
    if isinstance(pattern, (str, bytes)):
        _compile(as_bytes(pattern))
        return g.create_op("StaticRegexFullMatch", [x], {"pattern": attr_text(pattern)},
                           name=name or "StaticRegexFullMatch").outputs[0]
    p = string_input(pattern, "RegexFullMatch", "pattern")
    return g.create_op("RegexFullMatch", [x, p], name=name or "RegexFullMatch").outputs[0]

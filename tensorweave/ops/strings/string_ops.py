"""Element-wise string ops: StringLength, Substr, StringStrip, StringLower,
StringUpper, StringToNumber. This module also re-exports every public name of
`tensorweave.ops.strings` (split, regex and join ops live in sibling modules).

All work on string tensors of any shape (numpy object arrays of bytes) and have
no gradient.

Example:
    >>> from tensorweave.ops.strings import string_ops as S
    >>> S.substr(tf.constant(["hello"]), 1, 3)   # [b"ell"]
"""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_tensor, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import broadcast_shapes
from tensorweave.ops.strings.regex_ops import (attr_text, check_string, map_strings,
                                           string_input, utf8_starts)
from tensorweave.ops.strings.regex_ops import regex_full_match as regex_full_match
from tensorweave.ops.strings.regex_ops import regex_replace as regex_replace
from tensorweave.ops.strings.split_ops import reduce_join as reduce_join
from tensorweave.ops.strings.split_ops import split as split
from tensorweave.ops.strings.split_ops import string_split as string_split

_UNITS = ("BYTE", "UTF8_CHAR")


def _check_unit(op_type: str, unit: Any) -> str:
    u = attr_text(unit)
    if u not in _UNITS:
        raise ValueError(f"{op_type}: unit must be one of {list(_UNITS)}, got {u!r}")
    return u


# ---- StringLength -----------------------------------------------------------------------
length_op = define_op("StringLength", inputs=("input",), attrs={"unit": "BYTE"})


@length_op.shape
def _(x: Tensor, *, unit: str) -> Any:
    check_string(x, "StringLength", "input")
    _check_unit("StringLength", unit)
    return _dt.int32, x.shape


@length_op.kernel("CPU")
def _(x: Any, *, unit: str) -> np.ndarray:
    if attr_text(unit) == "BYTE":
        return map_strings(x, len, np.int32)
    return map_strings(x, lambda s: len(utf8_starts(s)), np.int32)


length_op.no_gradient()


def length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """`tf.strings.length`: the length of each string, in bytes or UTF-8 characters.

    Args:
        input: a string tensor of any shape.
        name: the op name.
        unit: "BYTE" (default) or "UTF8_CHAR" (counts UTF-8 lead bytes, as TF).

    Returns:
        An int32 tensor of the input's shape.

    Raises:
        TypeError: `input` is not a string tensor (naming it).
        ValueError: an unknown `unit`.

    Example:
        >>> tf.strings.length(tf.constant(["héllo"]), unit="UTF8_CHAR")   # [5]
    """
    x = string_input(input, "StringLength", "input")
    return create_tensor("StringLength", [x], {"unit": unit},
                         name=name or "StringLength")


# ---- Substr -----------------------------------------------------------------------------
substr_op = define_op("Substr", inputs=("input", "pos", "len"), attrs={"unit": "BYTE"})


@substr_op.shape
def _(x: Tensor, pos: Tensor, ln: Tensor, *, unit: str) -> Any:
    check_string(x, "Substr", "input")
    _check_unit("Substr", unit)
    for t, arg in ((pos, "pos"), (ln, "len")):
        if t.dtype.base_dtype not in (_dt.int32, _dt.int64):
            raise TypeError(f"Substr: {arg} {t.name} must be int32 or int64, got "
                            f"{t.dtype.base_dtype.name}")
    if pos.dtype.base_dtype != ln.dtype.base_dtype:
        raise TypeError(f"Substr: pos {pos.name} ({pos.dtype.base_dtype.name}) and len "
                        f"{ln.name} ({ln.dtype.base_dtype.name}) must have the same dtype")
    if not pos.shape.is_compatible_with(ln.shape):
        raise ValueError(f"Substr: pos and len must have the same shape, got {pos.shape} "
                         f"({pos.name}) and {ln.shape} ({ln.name})")
    return _dt.string, broadcast_shapes(x.shape, pos.shape.merge_with(ln.shape))


def _substr_one(s: bytes, pos: int, ln: int, utf8: bool, index: int) -> bytes:
    starts = utf8_starts(s) if utf8 else None
    size = len(starts) if starts is not None else len(s)
    if abs(pos) > size:
        raise errors.InvalidArgumentError(
            None, None, f"pos {pos} out of range for string b'{s.decode('utf-8', 'replace')}'"
                        f" at index {index}")
    start = size + pos if pos < 0 else pos
    stop = size if ln < 0 else min(size, start + ln)
    if starts is None:
        return s[start:stop]
    lo = starts[start] if start < size else len(s)
    hi = starts[stop] if stop < size else len(s)
    return s[lo:hi]


@substr_op.kernel("CPU")
def _(x: Any, pos: Any, ln: Any, *, unit: str) -> np.ndarray:
    pos, ln = np.asarray(pos), np.asarray(ln)
    if pos.shape != ln.shape:
        raise errors.InvalidArgumentError(
            None, None, f"pos and len should have the same shape, got: "
                        f"{list(pos.shape)} vs. {list(ln.shape)}")
    xs, ps, ls = np.broadcast_arrays(np.asarray(x, dtype=object), pos, ln)
    utf8 = attr_text(unit) == "UTF8_CHAR"
    out = [_substr_one(s if isinstance(s, bytes) else str(s).encode(), int(p), int(n), utf8, i)
           for i, (s, p, n) in enumerate(zip(xs.reshape(-1), ps.reshape(-1), ls.reshape(-1)))]
    return np.asarray(out, dtype=object).reshape(xs.shape)


substr_op.no_gradient()


def substr(input: Any, pos: Any, len: Any, name: str | None = None,  # noqa: A002
           unit: str = "BYTE") -> Tensor:
    """`tf.substr`: the substring of each string starting at `pos`, of at most `len`.

    `pos` and `len` have the same shape and broadcast against `input` (NumPy rules).
    A negative `pos` counts from the end; a negative or too long `len` takes the rest.

    Args:
        input: a string tensor of any shape.
        pos: int32/int64 start positions (bytes or UTF-8 characters, see `unit`).
        len: int32/int64 lengths, same shape and dtype as `pos`.
        name: the op name.
        unit: "BYTE" (default) or "UTF8_CHAR".

    Returns:
        A string tensor of the broadcast shape.

    Raises:
        TypeError: a non-string `input`, or non-integer `pos`/`len`.
        ValueError: `pos` and `len` of different shapes.
        tf.errors.InvalidArgumentError: at run time, a `pos` outside [-size, size],
            naming the position and the string.

    Example:
        >>> tf.substr(tf.constant(["hello", "world"]), [1, 2], [3, 1])   # [b"ell", b"r"]
    """
    x = string_input(input, "Substr", "input")
    p = pos if isinstance(pos, Tensor) else convert_to_tensor(pos)
    n = len if isinstance(len, Tensor) else convert_to_tensor(len)
    return create_tensor("Substr", [x, p, n], {"unit": unit},
                         name=name or "Substr")


# ---- StringStrip ------------------------------------------------------------------------
strip_op = define_op("StringStrip", inputs=("input",))


@strip_op.shape
def _(x: Tensor) -> Any:
    check_string(x, "StringStrip", "input")
    return _dt.string, x.shape


@strip_op.kernel("CPU")
def _(x: Any) -> np.ndarray:
    return map_strings(x, lambda s: s.strip(b" \t\n\v\f\r"))


strip_op.no_gradient()


def string_strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.string_strip`: removes leading and trailing ASCII whitespace of each string.

    Raises:
        TypeError: `input` is not a string tensor (naming it).

    Example:
        >>> tf.string_strip(tf.constant([" a b\\n"]))   # [b"a b"]
    """
    x = string_input(input, "StringStrip", "input")
    return create_tensor("StringStrip", [x],
                         name=name or "StringStrip")


# ---- StringLower, StringUpper -----------------------------------------------------------
def _case_kernel(lower: bool) -> Any:
    def kernel(x: Any, *, encoding: str) -> np.ndarray:
        if attr_text(encoding) == "":  # ASCII letters only, as TF
            return map_strings(x, (lambda s: s.lower()) if lower else (lambda s: s.upper()))

        def convert(s: bytes) -> bytes:
            text = s.decode("utf-8", "surrogateescape")
            return (text.lower() if lower else text.upper()).encode("utf-8", "surrogateescape")
        return map_strings(x, convert)
    return kernel


def _case_shape(op_type: str) -> Any:
    def shape(x: Tensor, *, encoding: str) -> Any:
        check_string(x, op_type, "input")
        if attr_text(encoding) not in ("", "utf-8"):
            raise ValueError(f"{op_type}: only utf-8 or '' (no encoding) is supported, "
                             f"got encoding {attr_text(encoding)!r}")
        return _dt.string, x.shape
    return shape


lower_op = define_op("StringLower", inputs=("input",), attrs={"encoding": ""})
lower_op.shape(_case_shape("StringLower"))
lower_op.kernel("CPU")(_case_kernel(True))
lower_op.no_gradient()

upper_op = define_op("StringUpper", inputs=("input",), attrs={"encoding": ""})
upper_op.shape(_case_shape("StringUpper"))
upper_op.kernel("CPU")(_case_kernel(False))
upper_op.no_gradient()


def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.strings.lower`: lowercases each string.

    Args:
        input: a string tensor of any shape.
        encoding: "" (ASCII letters only) or "utf-8" (Unicode case mapping).
        name: the op name.

    Raises:
        TypeError: `input` is not a string tensor. ValueError: another encoding.

    Example:
        >>> tf.strings.lower(tf.constant(["HeLLo"]))   # [b"hello"]
    """
    x = string_input(input, "StringLower", "input")
    return create_tensor("StringLower", [x], {"encoding": encoding},
                         name=name or "StringLower")


def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """`tf.strings.upper`: uppercases each string ("" ASCII only, or "utf-8").

    Raises:
        TypeError: `input` is not a string tensor. ValueError: another encoding.

    Example:
        >>> tf.strings.upper(tf.constant(["HeLLo"]))   # [b"HELLO"]
    """
    x = string_input(input, "StringUpper", "input")
    return create_tensor("StringUpper", [x], {"encoding": encoding},
                         name=name or "StringUpper")


# ---- StringToNumber ---------------------------------------------------------------------
to_number_op = define_op("StringToNumber", inputs=("string_tensor",),
                         attrs={"out_type": _dt.float32})
_NUMBER_TYPES = (_dt.float32, _dt.float64, _dt.int32, _dt.int64)
_WS = b" \t\n\v\f\r"
_INT = re.compile(rb"[+-]?[0-9]+\Z")
_HEX_FLOAT = re.compile(rb"[+-]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)"
                        rb"([pP][+-]?[0-9]+)?\Z")
_CONVERT_ERROR = "StringToNumberOp could not correctly convert string: "


@to_number_op.shape
def _(x: Tensor, *, out_type: Any) -> Any:
    check_string(x, "StringToNumber", "string_tensor")
    dt = _dt.as_dtype(out_type).base_dtype
    if dt not in _NUMBER_TYPES:
        raise TypeError(f"StringToNumber: out_type must be one of float32, float64, int32, "
                        f"int64; got {dt.name}")
    return dt, x.shape


def _parse_float(s: bytes) -> float:
    # strtod-like: surrounding whitespace, decimal, hex ("0xF"), inf/infinity/nan.
    t = s.strip(_WS)
    if b"_" not in t and t:
        try:
            return float(t)
        except ValueError:
            pass
        if _HEX_FLOAT.match(t):
            return float.fromhex(t.decode("ascii"))
    raise errors.InvalidArgumentError(None, None, _CONVERT_ERROR +
                                      s.decode("utf-8", "replace"))


def _int_parser(bits: int) -> Any:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def parse(s: bytes) -> int:
        t = s.strip(_WS)
        if _INT.match(t):
            v = int(t)
            if lo <= v <= hi:
                return v
        raise errors.InvalidArgumentError(None, None, _CONVERT_ERROR +
                                          s.decode("utf-8", "replace"))
    return parse


@to_number_op.kernel("CPU")
def _(x: Any, *, out_type: Any) -> np.ndarray:
    dt = _dt.as_dtype(out_type).base_dtype
    if dt.is_floating:
        values = map_strings(x, _parse_float, np.float64)
        with np.errstate(over="ignore"):  # beyond float32's range reads as +-inf, as TF
            return values.astype(dt.as_numpy_dtype)
    return map_strings(x, _int_parser(64 if dt == _dt.int64 else 32), dt.as_numpy_dtype)


to_number_op.no_gradient()


def string_to_number(string_tensor: Any = None, out_type: Any = _dt.float32,
                     name: str | None = None, input: Any = None) -> Tensor:  # noqa: A002
    """`tf.string_to_number`: parses each string as a number of `out_type`.

    TF 1.x's arguments: `string_tensor` (`input`: its deprecated name), `out_type`.

    Floats accept what C's strtod does (surrounding whitespace, exponents, hex such
    as "0xF", "inf", "nan"); integers accept an optional sign and decimal digits.

    Args:
        string_tensor: a string tensor of any shape.
        out_type: tf.float32 (default), tf.float64, tf.int32 or tf.int64.
        name: the op name.

    Raises:
        TypeError: a non-string input or an unsupported `out_type`.
        tf.errors.InvalidArgumentError: at run time, "StringToNumberOp could not
            correctly convert string: <s>" for an unparsable or out-of-range string.

    Example:
        >>> tf.string_to_number(tf.constant(["1.5", " -2"]))   # [1.5, -2.0]
    """
    x = string_input(one_of("string_to_number", "string_tensor", string_tensor, "input",
                            input), "StringToNumber", "string_tensor")
    return create_tensor(
        "StringToNumber", [x], {"out_type": _dt.as_dtype(out_type).base_dtype},
        name=name or "StringToNumber")


to_number = string_to_number
strip = string_strip

__all__ = ["length", "lower", "reduce_join", "regex_full_match", "regex_replace", "split",
           "string_split", "string_strip", "string_to_number", "strip", "substr",
           "to_number", "upper"]

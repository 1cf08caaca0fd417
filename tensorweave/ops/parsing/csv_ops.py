"""DecodeCSV (`tf.decode_csv`): CSV records (a string tensor) to one tensor per column.

Parsing follows TF's kernel (RFC 4180-ish): fields split at `field_delim`; with
`use_quote_delim` a field may be quoted, `""` inside quotes being one `"`; a field that
is empty (or equal to `na_value`) takes its column's default, and a column whose default
is empty (`[]`) is required. Errors are InvalidArgumentErrors that name the record (its
flat index and text) and the column, and keep TF's wording.

Example:
    >>> lines = tf.constant(["1.5,2,a", ",,"])
    >>> x, n, s = tf.decode_csv(lines, [[0.0], [-1], ["none"]])
    >>> # x = [1.5, 0.0], n = [2, -1], s = [b"a", b"none"]
"""
from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.ops.op_author import REQUIRED, create_op, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape

_SUPPORTED = (_dt.float32, _dt.float64, _dt.int32, _dt.int64, _dt.string)
_QUOTE, _LF, _CR = ord('"'), ord("\n"), ord("\r")
# TF's safe_strto32/64: C spaces around, an optional "-", ASCII digits ("+" is refused).
_INT = re.compile(rb"[ \t\n\v\f\r]*-?[0-9]+[ \t\n\v\f\r]*")
# Python's float() also reads "1_000" and "infinity", which TF's parser refuses.
_NOT_TF_FLOAT = re.compile(rb"_|infinity", re.IGNORECASE)
_HEX = re.compile(rb"\s*[-+]?0[xX][0-9a-fA-F]+\s*")


decode_csv_op = define_op(
    "DecodeCSV", inputs=("records", "record_defaults*"),
    attrs={"OUT_TYPE": REQUIRED, "field_delim": ",", "use_quote_delim": True,
           "na_value": "", "select_cols": []})
decode_csv_op.no_gradient()  # strings in: nothing to differentiate


def _check_default_shape(i: int, shape: TensorShape) -> None:
    # TF's shape function: a scalar, [] (a required column) or [value].
    if shape.ndims is not None and shape.ndims > 1:
        raise ValueError(f"DecodeCSV: the default of column {i}: Shape must be at most "
                         f"rank 1 but is rank {shape.ndims} (shape {shape}).")
    length = shape.as_list()[0] if shape.ndims == 1 else None
    if length is not None and length > 1:
        raise ValueError(f"DecodeCSV: the default of column {i} has {length} values; give "
                         f"a scalar, [value] or [] (a required column).")


@decode_csv_op.shape
def _(records: Tensor, record_defaults: list[Tensor], *, OUT_TYPE: list[Any],
      field_delim: str, use_quote_delim: bool, na_value: str, select_cols: list[int]) -> Any:
    if len(OUT_TYPE) != len(record_defaults):
        raise ValueError(f"DecodeCSV: {len(record_defaults)} record_defaults for "
                         f"{len(OUT_TYPE)} OUT_TYPE entries.")
    if select_cols and len(select_cols) != len(OUT_TYPE):
        raise ValueError(f"DecodeCSV: {len(select_cols)} select_cols for {len(OUT_TYPE)} "
                         f"columns; select_cols should match output size.")
    for i, (t, d) in enumerate(zip(OUT_TYPE, record_defaults)):
        if _dt.as_dtype(t).base_dtype not in _SUPPORTED:
            raise TypeError(f"DecodeCSV: column {i} has dtype {_dt.as_dtype(t).name}; "
                            "supported are float32, float64, int32, int64 and string.")
        if d.dtype.base_dtype != _dt.as_dtype(t).base_dtype:
            raise TypeError(f"DecodeCSV: the default of column {i} ({d.name}) is "
                            f"{d.dtype.name}, OUT_TYPE says {_dt.as_dtype(t).name}.")
        _check_default_shape(i, d.shape)
    return [(_dt.as_dtype(t).base_dtype, records.shape) for t in OUT_TYPE]


def _fail(message: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"DecodeCSV: {message}")


def _show(record: bytes) -> str:
    return repr(record if len(record) <= 200 else record[:200] + b"...")


def _split(rec: bytes, delim: int, quotes: bool, select: list[int] | None,
           where: Callable[[], str]) -> list[bytes]:
    """The fields of one record, as TF's DecodeCSV splits them (its quirks included: a
    line break where a field starts is skipped, an empty record has no fields)."""
    if not rec:
        return []
    if not ((quotes and _QUOTE in rec) or _LF in rec or _CR in rec):
        fields = rec.split(bytes([delim]))  # the common case: no quotes, no line breaks
        return fields if select is None else [fields[c] for c in select if c < len(fields)]
    out: list[bytes] = []
    i, n, col = 0, len(rec), 0
    while i < n:
        if rec[i] in (_LF, _CR):
            i += 1
            continue
        keep = select is None or select[len(out)] == col
        if quotes and rec[i] == _QUOTE:
            i += 1
            buf = bytearray()
            # A quoted field ends at a quote followed by the delimiter, or the last byte.
            while i < n - 1 and not (rec[i] == _QUOTE and rec[i + 1] == delim):
                if rec[i] != _QUOTE:
                    buf.append(rec[i])
                    i += 1
                elif rec[i + 1] == _QUOTE:
                    buf.append(_QUOTE)
                    i += 2
                else:
                    raise _fail(f"Quote inside a string has to be escaped by another quote "
                                f"({where()}, byte {i}).")
            if not (i < n and rec[i] == _QUOTE and (i == n - 1 or rec[i + 1] == delim)):
                raise _fail(f"Quoted field has to end with quote followed by delim or end "
                            f"({where()}).")
            field = bytes(buf)
            i += 2
        else:
            j = i
            while j < n and rec[j] != delim:
                if (quotes and rec[j] == _QUOTE) or rec[j] in (_LF, _CR):
                    raise _fail(f"Unquoted fields cannot have quotes/CRLFs inside "
                                f"({where()}, byte {j}); quote the field, or pass "
                                f"use_quote_delim=False.")
                j += 1
            field, i = rec[i:j], j + 1
        col += 1
        if keep:
            out.append(field)
            if select is not None and len(out) == len(select):
                return out  # TF stops at the last selected column
    if rec[-1] == delim and (select is None or select[len(out)] == col):
        out.append(b"")  # a trailing delimiter ends with an empty field
    return out


def _number(field: bytes, dtype: Any) -> Any:
    """`field` as a number of `dtype`, or None where TF's parser would refuse it."""
    if dtype in (_dt.int32, _dt.int64):
        if not _INT.fullmatch(field):
            return None
        value = int(field)
        info = np.iinfo(dtype.as_numpy_dtype)
        return value if info.min <= value <= info.max else None
    if _NOT_TF_FLOAT.search(field):
        return None
    try:
        return float(field)
    except ValueError:
        if _HEX.fullmatch(field):  # TF's parser reads hex integers as floats too
            return float(int(field.strip(), 16))
        return None


def _bytes(v: Any) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


@decode_csv_op.kernel("CPU")
def _(records: Any, record_defaults: list[Any], *, OUT_TYPE: list[Any], field_delim: str,
      use_quote_delim: bool, na_value: str, select_cols: list[int]) -> Any:
    types = [_dt.as_dtype(t).base_dtype for t in OUT_TYPE]
    defaults = []
    for i, d in enumerate(record_defaults):
        d = np.asarray(d)
        if d.ndim > 1:
            raise _fail(f"Each record default should be at most rank 1; field {i}'s has "
                        f"shape {list(d.shape)}.")
        if d.size > 1:
            raise _fail(f"There should only be 1 default per field but field {i} has "
                        f"{d.size}; give a scalar, [value] or [] (required).")
        defaults.append(d.reshape(-1)[0] if d.size else None)
    delim = _bytes(field_delim)
    if len(delim) != 1:
        raise _fail(f"field_delim should be only 1 char, got {field_delim!r}.")
    na = _bytes(na_value)
    select = [int(c) for c in select_cols] or None
    arr = np.asarray(records, dtype=object)
    flat = [_bytes(r) for r in arr.reshape(-1)]
    cols: list[list[Any]] = [[] for _ in types]
    for r, rec in enumerate(flat):
        def where(r: int = r, rec: bytes = rec) -> str:
            return f"record {r}: {_show(rec)}"
        fields = _split(rec, delim[0], use_quote_delim, select, where)
        if len(fields) != len(types):
            raise _fail(f"Expect {len(types)} fields but have {len(fields)} in record {r}"
                        f"{' (select_cols ' + str(select) + ')' if select else ''}: "
                        f"{_show(rec)}")
        for f, (field, dtype) in enumerate(zip(fields, types)):
            if not field or field == na:
                if defaults[f] is None:
                    raise _fail(f"Field {f} is required but missing in record {r}! (its "
                                f"default is empty; {where()})")
                cols[f].append(defaults[f])
            elif dtype == _dt.string:
                cols[f].append(field)
            else:
                value = _number(field, dtype)
                if value is None:
                    raise _fail(f"Field {f} in record {r} is not a valid {dtype.name}: "
                                f"{field.decode(errors='replace')!r} ({where()})")
                cols[f].append(value)
    out = []
    for values, dtype in zip(cols, types):
        if dtype == _dt.string:
            col = np.empty(len(values), dtype=object)
            col[:] = [_bytes(v) for v in values]
        else:
            with np.errstate(over="ignore"):  # 1e39 as float32 is inf, as in TF
                col = np.array(values, dtype=dtype.as_numpy_dtype)
        out.append(col.reshape(arr.shape))
    return out[0] if len(out) == 1 else out  # one output is returned bare


def decode_csv(records: Any, record_defaults: Any, field_delim: str = ",",
               use_quote_delim: bool = True, name: str | None = None, na_value: str = "",
               select_cols: Any = None) -> list[Tensor]:
    """`tf.decode_csv`: CSV records to one tensor per column (TF 1.x argument order).

    Args:
        records: a string tensor of any shape, one CSV record (line) per element.
        record_defaults: one default per column, a scalar or a list of one value
            (`[0.0]`, `[0]`, `[""]`, a tensor) whose dtype (float32, float64, int32,
            int64 or string) is the column's; an empty one (`[]`, a zero-size tensor;
            `[]` is float32) makes the column required.
        field_delim: the one-character field separator.
        use_quote_delim: read `"`-quoted fields (with `""` for a quote); if False, `"`
            is an ordinary character.
        name: a name for the op.
        na_value: a field equal to this is missing (takes the default), like "".
        select_cols: ascending column indices to keep (one per default); the other
            columns are not parsed.

    Returns:
        A list of tensors, one per column, each of `records`' shape.

    Raises:
        ValueError: bad select_cols, field_delim or default shapes (at graph building).
        TypeError: a default of an unsupported dtype.
        InvalidArgumentError: at run time, a record with the wrong number of fields, a
            missing required field, an unparsable number or bad quoting; the message
            names the record and column.

    Example:
        >>> x, label = tf.decode_csv(line, record_defaults=[[0.0], [0]])
    """
    if select_cols is not None:
        select_cols = [int(c) for c in select_cols]
        if any(a >= b for a, b in zip(select_cols, select_cols[1:])):
            raise ValueError(f"select_cols is not strictly increasing: {select_cols}.")
        if select_cols and select_cols[0] < 0:
            raise ValueError(f"select_cols contains negative values: {select_cols}.")
        if len(select_cols) != len(record_defaults):
            raise ValueError(f"Length of select_cols and record_defaults do not match: "
                             f"{len(select_cols)} select_cols {select_cols}, "
                             f"{len(record_defaults)} record_defaults.")
    if len(_bytes(field_delim)) != 1:
        raise ValueError(f"decode_csv: field_delim should be only 1 char (byte), got "
                         f"{field_delim!r}.")
    with name_scope(name or "DecodeCSV"):
        recs = convert_to_tensor(records, dtype=_dt.string, name="records")
        defaults = [d if isinstance(d, Tensor) else
                    convert_to_tensor(d, name=f"record_default_{i}")
                    for i, d in enumerate(record_defaults)]
        attrs = {"OUT_TYPE": [d.dtype.base_dtype for d in defaults],
                 "field_delim": field_delim, "use_quote_delim": bool(use_quote_delim),
                 "na_value": na_value, "select_cols": select_cols or []}
        op = create_op("DecodeCSV", [recs, defaults], attrs,
                       name="DecodeCSV")
    return list(op.outputs)


__all__ = ["decode_csv"]

"""The NumPy + protobuf kernel of ParseExample: serialized `tf.train.Example`s to arrays.

Kept apart from the op stanza (parsing_ops.py) because the per-feature loops are long.
Every error names the feature key and the example (its index, or its name when given).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.proto import example_pb2
from tensorweave.kernels import wire_batch

# Which list of a Feature holds each dtype's values.
KIND = {"float32": "float_list", "int64": "int64_list", "string": "bytes_list"}


def _fail(where: str, msg: str, op: str = "ParseExample") -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"{op}: {where}: {msg}")


def _where(names: list[str], b: int, key: str) -> str:
    name = f" ({names[b]})" if b < len(names) and names[b] else ""
    return f"example {b}{name}, key {key!r}"


def decode_examples(serialized: Any, names: list[str]) -> list[Any]:
    """The feature maps of each serialized Example (bytes or str)."""
    out = []
    for b, s in enumerate(np.asarray(serialized, dtype=object).reshape(-1)):
        data = s.encode() if isinstance(s, str) else bytes(s)
        try:
            out.append(example_pb2.Example.FromString(data).features.feature)
        except DecodeError as e:
            where = f"example {b}" + (f" ({names[b]})" if b < len(names) and names[b] else "")
            raise _fail(where, f"could not parse the serialized Example ({len(data)} bytes): "
                        f"{e}. Is it a serialized tf.train.Example?") from e
    return out


def _np_dtype(dtype: Any) -> Any:
    return object if dtype == _dt.string else dtype.as_numpy_dtype


def raw_values(fmap: Any, key: str, want: str, dtype: Any, names: list[str], b: int,
               op: str = "ParseExample") -> Any:
    """The repeated values of feature `key` (a list of kind `want`), or None if missing.

    Hot loop: no arrays per example, and error text is built only on an error."""
    if key not in fmap:
        return None
    return feature_values(fmap[key], want, dtype, lambda: _where(names, b, key), op)


def feature_values(feature: Any, want: str, dtype: Any, where: Callable[[], str],
                   op: str = "ParseExample") -> Any:
    """The values of one Feature (a list of kind `want`); None if it has no list set.

    `where()` names the feature in the error raised when the Feature holds another kind."""
    kind = feature.WhichOneof("kind")
    if kind is None:  # a Feature with no list set carries no values, like a missing one
        return None
    if kind != want:
        raise _fail(where(), f"data types don't match: the Example holds a {kind}, the "
                    f"feature spec asks for {dtype.name} ({want}).", op)
    return getattr(feature, kind).value


def array_of(flat: list[Any], dtype: Any) -> np.ndarray:
    if dtype != _dt.string:
        return np.array(flat, dtype=dtype.as_numpy_dtype)
    arr = np.empty(len(flat), dtype=object)
    arr[:] = flat
    return arr


def parse_sparse(fmaps: list[Any], key: str, dtype: Any, names: list[str],
                 op: str = "ParseExample") -> list[np.ndarray]:
    """VarLenFeature: (indices [n, 2] as (example, position), values [n], shape [B, max])."""
    want, flat, lengths = KIND[dtype.name], [], []
    for b, fmap in enumerate(fmaps):
        # Hot loop, the common case inline: one map read, one list read. A feature of
        # another kind reads as an empty list here; raw_values then names the mismatch.
        feature = fmap.get(key)
        v = getattr(feature, want).value if feature is not None else None
        if not v:
            v = raw_values(fmap, key, want, dtype, names, b, op) if feature is not None else None
        if v:
            lengths.append(len(v))
            flat.extend(v)
        else:
            lengths.append(0)
    return sparse_from_counts(np.asarray(lengths, dtype=np.int64), array_of(flat, dtype))


def sparse_from_counts(counts: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """A VarLenFeature's (indices, values, dense_shape) from each example's value count."""
    n = counts.size
    width = int(counts.max()) if n else 0
    if n and int(counts.min()) == width:  # as many in every example (one each, typically)
        rows = np.repeat(np.arange(n, dtype=np.int64), width)
        positions = np.tile(np.arange(width, dtype=np.int64), n)
    else:
        rows = np.repeat(np.arange(n, dtype=np.int64), counts)
        starts = np.repeat(np.cumsum(counts) - counts, counts)
        positions = np.arange(values.size, dtype=np.int64) - starts
    return [np.stack([rows, positions], axis=1), values,
            np.array([n, width], dtype=np.int64)]


def parse_dense(fmaps: list[Any], key: str, dtype: Any, shape: list[Any], default: Any,
                names: list[str], op: str = "ParseExample") -> np.ndarray:
    """FixedLenFeature: [B] + shape; a missing feature takes `default` (none: an error)."""
    default = np.asarray(default)
    size = int(np.prod(shape)) if shape else 1
    want, flat = KIND[dtype.name], []
    for b, fmap in enumerate(fmaps):
        feature = fmap.get(key)
        if feature is not None:  # the common case inline: present, right kind and size
            v = getattr(feature, want).value
            if len(v) == size and size:
                flat.extend(v)
                continue
        v = raw_values(fmap, key, want, dtype, names, b, op)
        if v is None:
            if default.size == 0:
                raise _fail(_where(names, b, key), f"feature {key!r} ({dtype.name}) is "
                            "required but could not be found; give the FixedLenFeature a "
                            "default_value, or use a VarLenFeature if it may be missing.", op)
            flat.extend(default.reshape(-1).tolist())
        elif len(v) != size:
            raise _fail(_where(names, b, key), f"the Example has {len(v)} values, the "
                        f"FixedLenFeature of shape {list(shape)} needs exactly {size}.", op)
        else:
            flat.extend(v)
    return array_of(flat, dtype).reshape([len(fmaps)] + list(shape))


def parse_sequence(fmaps: list[Any], key: str, dtype: Any, shape: list[Any], pad: Any,
                   names: list[str]) -> np.ndarray:
    """FixedLenSequenceFeature: [B, max rows] + shape[1:], short examples padded with `pad`."""
    row_shape = list(shape[1:])
    row = int(np.prod(row_shape)) if row_shape else 1
    want, per = KIND[dtype.name], []
    for b, fmap in enumerate(fmaps):
        v = raw_values(fmap, key, want, dtype, names, b)
        n = 0 if v is None else len(v)
        if row == 0 or n % row:
            raise _fail(_where(names, b, key), f"the Example has {n} values, not a multiple "
                        f"of the FixedLenSequenceFeature's row shape {row_shape}.")
        per.append(array_of(list(v) if v else [], dtype).reshape([-1] + row_shape))
    longest = max((p.shape[0] for p in per), default=0)
    pad = np.asarray(pad)
    fill = pad.reshape(()) if pad.size == 1 else (b"" if dtype == _dt.string else 0)
    out = np.empty([len(fmaps), longest] + row_shape, dtype=_np_dtype(dtype))
    out[...] = fill
    for b, p in enumerate(per):
        out[b, :p.shape[0]] = p
    return out


def parse_batch(serialized: Any, names: list[str], sparse: list[tuple[str, Any]],
                dense: list[tuple[str, Any, list[Any], Any]]) -> list[Any]:
    """ParseExample's outputs: sparse indices, values, shapes, then the dense values.

    `sparse` holds (key, dtype) pairs, `dense` (key, dtype, dims, default) tuples.
    A batch of same-layout examples takes the wire-format fast path; any other batch,
    and any batch the fast path declines, the general decoder (same results)."""
    out = parse_fast(serialized, sparse, dense)
    return out if out is not None else parse_general(serialized, names, sparse, dense)


def parse_general(serialized: Any, names: list[str], sparse: list[tuple[str, Any]],
                  dense: list[tuple[str, Any, list[Any], Any]]) -> list[Any]:
    """`parse_batch` through protobuf's Example parser, one example at a time."""
    fmaps = decode_examples(serialized, names)
    out = sparse_outputs([parse_sparse(fmaps, k, t, names) for k, t in sparse])
    for key, dtype, dims, default in dense:
        if dims and dims[0] is None:
            out.append(parse_sequence(fmaps, key, dtype, dims, default, names))
        else:
            out.append(parse_dense(fmaps, key, dtype, dims, default, names))
    return out


def parse_fast(serialized: Any, sparse: list[tuple[str, Any]],
               dense: list[tuple[str, Any, list[Any], Any]]) -> list[Any] | None:
    """`parse_batch` from the wire format (wire_batch.py), or None where it declines."""
    if any(dims and dims[0] is None for _, _, dims, _ in dense):
        return None  # FixedLenSequenceFeature: the general decoder pads
    flat = np.asarray(serialized, dtype=object).reshape(-1).tolist()
    table = wire_batch.split_entries(flat)
    if table is None:
        return None
    where: dict[str, int] = {}
    for j, key in enumerate(wire_batch.keys(table)):
        if key is None or key in where:
            return None
        where[key] = j

    wanted = list(sparse) + [(key, dtype) for key, dtype, _, _ in dense]
    if any(key not in where for key, _ in wanted):
        return None  # missing from every example: defaults, or an error
    columns = wire_batch.decode_columns(table, [(where[key], key, dtype)
                                                for key, dtype in wanted])
    if columns is None:
        return None
    out = sparse_outputs([sparse_from_counts(counts, values)
                           for values, counts in columns[:len(sparse)]])
    for (_, _, dims, _), (values, counts) in zip(dense, columns[len(sparse):]):
        size = int(np.prod(dims)) if dims else 1
        if size == 0 or (counts != size).any():
            return None  # a wrong count: the general path names the error
        out.append(values.reshape([len(flat)] + list(dims)))
    return out


def sparse_outputs(parsed: list[list[np.ndarray]]) -> list[Any]:
    """ParseExample's sparse outputs: every indices, then every values, then every shape."""
    return [s[0] for s in parsed] + [s[1] for s in parsed] + [s[2] for s in parsed]

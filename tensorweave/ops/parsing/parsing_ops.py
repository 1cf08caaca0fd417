"""ParseExample (`tf.parse_example`, `tf.parse_single_example`) and DecodeRaw.

Feature specs are TF1's: `FixedLenFeature` -> a dense Tensor [batch] + shape,
`VarLenFeature` -> a SparseTensor with indices (example, position),
`FixedLenSequenceFeature(allow_missing=True)` -> [batch, longest] + shape, padded.

Example:
    >>> feats = tf.parse_example(serialized, {
    ...     "age": tf.FixedLenFeature([], tf.int64, default_value=0),
    ...     "tags": tf.VarLenFeature(tf.string)})
    >>> feats["age"], feats["tags"]          # int64 [batch], SparseTensor
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from tensorweave.framework.arg_aliases import one_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_part, name_scope
from tensorweave.ops.op_author import REQUIRED, create_op, create_tensor, define_op
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.ops.array import shape_ops
from tensorweave.kernels import example_kernel as _k
from tensorweave.ops.parsing import parse_example_v2_ops as _v2  # noqa: F401 - registers
from tensorweave.ops.sparse.sparse_split_softmax_ops import sparse_merge

_SUPPORTED = (_dt.float32, _dt.int64, _dt.string)


class VarLenFeature(collections.namedtuple("VarLenFeature", ["dtype"])):
    """A feature of any number of values per example, parsed to a SparseTensor."""


class FixedLenFeature(collections.namedtuple("FixedLenFeature",
                                             ["shape", "dtype", "default_value"])):
    """A feature of exactly `prod(shape)` values per example, parsed to a dense Tensor."""

    def __new__(cls, shape: Any, dtype: Any, default_value: Any = None) -> "FixedLenFeature":
        return super().__new__(cls, shape, dtype, default_value)


class FixedLenSequenceFeature(collections.namedtuple(
        "FixedLenSequenceFeature", ["shape", "dtype", "allow_missing", "default_value"])):
    """Rows of `shape` values, any number per example; parsed to [batch, longest] + shape."""

    def __new__(cls, shape: Any, dtype: Any, allow_missing: bool = False,
                default_value: Any = None) -> "FixedLenSequenceFeature":
        return super().__new__(cls, shape, dtype, allow_missing, default_value)


class SparseFeature(collections.namedtuple(
        "SparseFeature", ["index_key", "value_key", "dtype", "size", "already_sorted"])):
    """A SparseTensor assembled from an index feature (or one per dimension) and a
    value feature of the same length: indices [example, index...], dense shape
    [batch, size...]. The index and value keys themselves are not returned unless
    asked for.

    Example:
        >>> tf.parse_example(batch, {"sp": tf.SparseFeature("idx", "val", tf.float32, 13)})
    """

    def __new__(cls, index_key: Any, value_key: str, dtype: Any, size: Any,
                already_sorted: bool = False) -> "SparseFeature":
        return super().__new__(cls, index_key, value_key, dtype, size, already_sorted)


def _expand_sparse_features(features: dict[str, Any]
                            ) -> tuple[dict[str, Any], list[tuple[str, Any, list, list]]]:
    """The specs with each SparseFeature replaced by VarLenFeatures of its keys, and
    per SparseFeature (key, spec, index keys, sizes)."""
    if not isinstance(features, dict):
        return features, []
    plain = {k: v for k, v in features.items() if not isinstance(v, SparseFeature)}
    merges = []
    for key in sorted(set(features) - set(plain)):
        spec = features[key]
        index_keys = [spec.index_key] if isinstance(spec.index_key, str) else list(
            spec.index_key)
        sizes = [spec.size] if isinstance(spec.size, (int, np.integer)) else list(spec.size)
        if not index_keys or len(index_keys) != len(sizes):
            raise ValueError(f"Feature {key!r}: SparseFeature needs one size per index key, "
                             f"got index_key {spec.index_key!r} and size {spec.size!r}.")
        wanted = [(k, VarLenFeature(_dt.int64)) for k in index_keys] + \
            [(spec.value_key, VarLenFeature(spec.dtype))]
        for k, var_len in wanted:
            have = plain.setdefault(k, var_len)
            if not isinstance(have, VarLenFeature) or \
                    _dt.as_dtype(have.dtype) != _dt.as_dtype(var_len.dtype):
                raise ValueError(f"Feature {key!r}: SparseFeature reads {k!r} as "
                                 f"VarLenFeature({_dt.as_dtype(var_len.dtype).name}), which "
                                 f"conflicts with {features.get(k, have)!r} asked for "
                                 f"{k!r}.")
        merges.append((key, spec, index_keys, sizes))
    return plain, merges


def _merge_sparse_features(result: dict[str, Any], features: dict[str, Any],
                           merges: list[tuple[str, Any, list, list]]) -> dict[str, Any]:
    merged = {key: sparse_merge([result[k] for k in index_keys], result[spec.value_key],
                                sizes, name=f"SparseFeature_{name_part(key)}",
                                already_sorted=spec.already_sorted)
              for key, spec, index_keys, sizes in merges}
    out = {k: v for k, v in result.items() if k in features}
    out.update(merged)
    return out


# ---- ParseExample ----------------------------------------------------------------------
# TF's interface (so exported SavedModels run in TF and TF's import here): the keys are
# scalar string inputs; outputs are every sparse feature's indices, then values, then
# dense_shape, then every dense value. A dense shape with leading dim None (-1) is a
# FixedLenSequenceFeature; an empty dense default marks a required feature.
parse_example_op = define_op(
    "ParseExample",
    inputs=("serialized", "names", "sparse_keys*", "dense_keys*", "dense_defaults*"),
    attrs={"sparse_types": REQUIRED, "Tdense": REQUIRED, "dense_shapes": REQUIRED})
parse_example_op.no_gradient()  # strings in, parsed values out: nothing to differentiate


@parse_example_op.shape
def _(serialized: Tensor, names: Tensor, sparse_keys: list[Tensor], dense_keys: list[Tensor],
      dense_defaults: list[Tensor], *, sparse_types: list[Any], Tdense: list[Any],
      dense_shapes: list[Any]) -> Any:
    if serialized.shape.ndims not in (None, 1):
        raise ValueError(f"ParseExample: serialized must be a vector of strings, got "
                         f"{serialized.name} of shape {serialized.shape}.")
    if not len(sparse_keys) == len(sparse_types) or \
            not len(dense_keys) == len(Tdense) == len(dense_shapes) == len(dense_defaults):
        raise ValueError(f"ParseExample: {len(sparse_keys)} sparse keys for "
                         f"{len(sparse_types)} sparse_types; {len(dense_keys)} dense keys, "
                         f"{len(Tdense)} Tdense, {len(dense_shapes)} dense_shapes and "
                         f"{len(dense_defaults)} dense_defaults.")
    batch = serialized.shape.as_list()[0] if serialized.shape.ndims == 1 else None
    n = len(sparse_keys)
    out: list[Any] = [(_dt.int64, TensorShape([None, 2]))] * n
    out += [(t, TensorShape([None])) for t in sparse_types]
    out += [(_dt.int64, TensorShape([2]))] * n
    for t, s in zip(Tdense, dense_shapes):
        dims = as_shape(s).as_list()
        out.append((t, TensorShape([batch] + dims if not dims or dims[0] is not None
                                   else [batch, None] + dims[1:])))
    return out


def _key(value: Any) -> str:
    v = np.asarray(value, dtype=object).reshape(())[()]
    return v.decode() if isinstance(v, bytes) else str(v)


@parse_example_op.kernel("CPU")
def _(serialized: Any, names: Any, sparse_keys: list[Any], dense_keys: list[Any],
      dense_defaults: list[Any], *, sparse_types: list[Any], Tdense: list[Any],
      dense_shapes: list[Any]) -> Any:
    label = [n.decode() if isinstance(n, bytes) else str(n)
             for n in np.asarray(names, dtype=object).reshape(-1)]
    out = _k.parse_batch(
        serialized, label, [(_key(k), t) for k, t in zip(sparse_keys, sparse_types)],
        [(_key(k), t, as_shape(s).as_list(), d)
         for k, t, s, d in zip(dense_keys, Tdense, dense_shapes, dense_defaults)])
    return out[0] if len(out) == 1 else out  # one output is returned bare


def check_dtype(key: str, spec: Any) -> Any:
    dtype = _dt.as_dtype(spec.dtype).base_dtype
    if dtype not in _SUPPORTED:
        raise ValueError(f"Feature {key!r}: dtype {dtype.name} is not supported by "
                         "parse_example; use float32, int64 or string.")
    return dtype


def dense_default(key: str, spec: Any, dtype: Any, shape: TensorShape) -> Tensor:
    if isinstance(spec, FixedLenSequenceFeature):
        pad = spec.default_value
        return convert_to_tensor(np.zeros(0) if pad is None else pad, dtype=dtype,
                                 name=f"padding_{name_part(key)}")
    if spec.default_value is None:  # an empty default marks the feature as required
        return convert_to_tensor(np.zeros(0), dtype=dtype, name=f"required_{name_part(key)}")
    value = np.asarray(spec.default_value, dtype=object if dtype == _dt.string
                       else dtype.as_numpy_dtype)
    want = int(np.prod([int(d) for d in shape.as_list() if d is not None]))
    if value.size != want:
        raise ValueError(f"Feature {key!r}: default_value {spec.default_value!r} has "
                         f"{value.size} values, the shape {shape} needs {want}.")
    return convert_to_tensor(value.reshape(shape.as_list()), dtype=dtype,
                             name=f"key_{name_part(key)}")  # TF's name


def _split_features(features: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    if not isinstance(features, dict) or not features:
        raise ValueError(f"parse_example needs a non-empty dict of feature specs, got "
                         f"{features!r}.")
    sparse, dense = [], []
    for key in sorted(features):
        spec = features[key]
        if not isinstance(spec, (VarLenFeature, FixedLenFeature, FixedLenSequenceFeature)):
            raise ValueError(f"Feature {key!r}: unsupported spec {spec!r}; use "
                             "FixedLenFeature, VarLenFeature, FixedLenSequenceFeature or "
                             "SparseFeature.")
        dtype = check_dtype(key, spec)
        if isinstance(spec, VarLenFeature):
            sparse.append((key, dtype))
        else:
            shape = as_shape(spec.shape)
            if not shape.is_fully_defined():
                raise ValueError(f"Feature {key!r}: shape {spec.shape!r} must be fully "
                                 "defined.")
            if isinstance(spec, FixedLenSequenceFeature):
                if not spec.allow_missing:
                    raise ValueError(f"Feature {key!r}: parse_example needs "
                                     "FixedLenSequenceFeature(..., allow_missing=True).")
                dense.append((key, dtype, TensorShape([None] + shape.as_list()),
                              dense_default(key, spec, dtype, shape)))
            else:
                dense.append((key, dtype, shape, dense_default(key, spec, dtype, shape)))
    return sparse, dense


def parse_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                  example_names: Any = None) -> dict[str, Any]:
    """`tf.parse_example`: a batch of serialized `tf.train.Example`s to a dict of tensors.

    Args:
        serialized: a string vector of serialized Example protos.
        features: key -> FixedLenFeature | VarLenFeature | FixedLenSequenceFeature |
            SparseFeature.
        name: a name for the op.
        example_names: optional names of the examples, used in error messages.

    Returns:
        key -> Tensor (fixed-length features) or SparseTensor (VarLenFeature,
        SparseFeature).

    Raises:
        ValueError: an unsupported or malformed feature spec (named by key).

    Example:
        >>> tf.parse_example(batch, {"x": tf.FixedLenFeature([2], tf.float32)})["x"]
    """
    requested = features
    features, merges = _expand_sparse_features(features)
    sparse, dense = _split_features(features)
    with name_scope(name or "ParseExample"):
        ser = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        names = convert_to_tensor([] if example_names is None else example_names,
                                  dtype=_dt.string, name="names")
        sparse_keys = [convert_to_tensor(k, dtype=_dt.string, name="sparse_keys")
                       for k, _ in sparse]
        dense_keys = [convert_to_tensor(d[0], dtype=_dt.string, name="dense_keys")
                      for d in dense]
        attrs = {"sparse_types": [t for _, t in sparse], "Tdense": [d[1] for d in dense],
                 "dense_shapes": [d[2] for d in dense]}
        outs = create_op(
            "ParseExample", [ser, names, sparse_keys, dense_keys, [d[3] for d in dense]],
            attrs, name="ParseExample").outputs
    n = len(sparse)
    result: dict[str, Any] = {}
    for i, (key, _) in enumerate(sparse):
        result[key] = SparseTensor(outs[i], outs[n + i], outs[2 * n + i])
    for j, d in enumerate(dense):
        result[d[0]] = outs[3 * n + j]
    return _merge_sparse_features(result, requested, merges) if merges else result


def parse_single_example(serialized: Any, features: dict[str, Any], name: str | None = None,
                         example_names: Any = None) -> dict[str, Any]:
    """`tf.parse_single_example`: one serialized Example (a scalar string) to tensors.

    Dense features have the spec's shape (no batch dimension); a VarLenFeature's
    SparseTensor has indices [n, 1] and dense_shape [n values].

    Example:
        >>> tf.parse_single_example(record, {"y": tf.FixedLenFeature([], tf.int64)})["y"]
    """
    with name_scope(name or "ParseSingleExample"):
        ser = shape_ops.reshape(convert_to_tensor(serialized, dtype=_dt.string), [1])
        names = None if example_names is None else shape_ops.reshape(
            convert_to_tensor(example_names, dtype=_dt.string), [1])
        batch = parse_example(ser, features, example_names=names)
        out: dict[str, Any] = {}
        for key, value in batch.items():
            if isinstance(value, SparseTensor):
                out[key] = SparseTensor(value.indices[:, 1:], value.values,
                                        value.dense_shape[1:])
            else:
                out[key] = shape_ops.squeeze(value, axis=[0])
    return out


# ---- DecodeRaw --------------------------------------------------------------------------
decode_raw_op = define_op("DecodeRaw", inputs=("bytes",),
                          attrs={"out_type": REQUIRED, "little_endian": True})
decode_raw_op.no_gradient()  # its input is a string


@decode_raw_op.shape
def _(data: Tensor, *, out_type: Any, little_endian: bool) -> Any:
    if data.shape.ndims is None:
        return out_type, TensorShape(None)
    return out_type, TensorShape(data.shape.as_list() + [None])


@decode_raw_op.kernel("CPU")
def _(data: Any, *, out_type: Any, little_endian: bool) -> Any:
    arr = np.asarray(data, dtype=object)
    dt = np.dtype(out_type.as_numpy_dtype).newbyteorder("<" if little_endian else ">")
    flat = [bytes(s.encode() if isinstance(s, str) else s) for s in arr.reshape(-1)]
    lengths = {len(s) for s in flat}
    if any(n % dt.itemsize for n in lengths):
        raise errors.InvalidArgumentError(
            None, None, f"DecodeRaw: input sizes {sorted(lengths)} are not multiples of "
            f"{dt.itemsize}, the size of {out_type.name}.")
    if len(lengths) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"DecodeRaw: every element must have the same length, got byte "
            f"lengths {sorted(lengths)}.")
    width = lengths.pop() // dt.itemsize if lengths else 0
    rows = [np.frombuffer(s, dtype=dt) for s in flat]
    out = np.stack(rows) if rows else np.empty((0, width), dt)
    return out.astype(out_type.as_numpy_dtype).reshape(arr.shape + (width,))


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: str | None = None, bytes: Any = None) -> Tensor:  # noqa: A002
    """`tf.decode_raw`: each string's bytes reinterpreted as a vector of `out_type`.

    TF 1.x's arguments: `input_bytes` (`bytes` is its deprecated name), `out_type`.

    Example:
        >>> tf.decode_raw(tf.constant([b"\\x01\\x00\\x02\\x00"]), tf.int16)   # [[1, 2]]
    """
    if out_type is None:
        raise ValueError("decode_raw: out_type is required (the element dtype, e.g. "
                         "tf.uint8).")
    data = convert_to_tensor(one_of("decode_raw", "input_bytes", input_bytes, "bytes", bytes),
                             dtype=_dt.string)
    return create_tensor(
        "DecodeRaw", [data], {"out_type": _dt.as_dtype(out_type).base_dtype,
              "little_endian": bool(little_endian)},
        name=name or "DecodeRaw")


__all__ = [
    "FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "VarLenFeature", "decode_raw",
    "parse_example", "parse_single_example",
]

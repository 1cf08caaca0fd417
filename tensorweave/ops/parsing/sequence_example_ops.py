"""`tf.parse_single_sequence_example` and `tf.io.parse_sequence_example`.

The ops are TF 1.15's: ParseSingleSequenceExample (one scalar string; keys are scalar
string inputs) and ParseSequenceExample (a vector of strings; keys are attrs, and it
also returns each dense feature list's length per example). `context_features` take
FixedLenFeature / VarLenFeature (read like an Example's features);
`sequence_features` take FixedLenSequenceFeature (one row of `shape` per step) /
VarLenFeature (a SparseTensor indexed [step, position], batched [example, step, pos]).

Example:
    >>> context, lists = tf.parse_single_sequence_example(record,
    ...     context_features={"label": tf.FixedLenFeature([], tf.int64)},
    ...     sequence_features={"tokens": tf.FixedLenSequenceFeature([], tf.int64)})
    >>> lists["tokens"]                      # int64 [time]
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.kernels import sequence_example_kernel as _sk
from tensorweave.ops.parsing.parsing_ops import (
    FixedLenFeature, FixedLenSequenceFeature, VarLenFeature, check_dtype, dense_default)

_TYPE_ATTRS: dict[str, Any] = {
    "context_sparse_types": [], "Tcontext_dense": [], "feature_list_dense_types": [],
    "context_dense_shapes": [], "feature_list_sparse_types": [],
    "feature_list_dense_shapes": []}

# ---- ParseSingleSequenceExample ----------------------------------------------------------
# Outputs: context sparse indices/values/shapes, context dense values, then the same four
# groups for the feature lists. An empty context default marks a required feature.
single_op = define_op(
    "ParseSingleSequenceExample",
    inputs=("serialized", "feature_list_dense_missing_assumed_empty", "context_sparse_keys*",
            "context_dense_keys*", "feature_list_sparse_keys*", "feature_list_dense_keys*",
            "context_dense_defaults*", "debug_name"),
    attrs=dict(_TYPE_ATTRS))
single_op.no_gradient()  # strings in, parsed values out

# ---- ParseSequenceExample (a batch; keys and the may-be-missing list are attrs) -----------
batch_op = define_op(
    "ParseSequenceExample", inputs=("serialized", "debug_name", "context_dense_defaults*"),
    attrs={"feature_list_dense_missing_assumed_empty": [], "context_sparse_keys": [],
           "context_dense_keys": [], "feature_list_sparse_keys": [],
           "feature_list_dense_keys": [], "Ncontext_sparse": 0, "Ncontext_dense": 0,
           "Nfeature_list_sparse": 0, "Nfeature_list_dense": 0, **_TYPE_ATTRS})
batch_op.no_gradient()


def _out_shapes(batch: list[Any], rank: int, attrs: dict[str, Any], lengths: bool) -> list[Any]:
    """Static outputs; `batch` is [] for the single form, [B] for the batch one."""
    out: list[Any] = []
    for prefix, types in (("context", attrs["context_sparse_types"]),
                          ("feature_list", attrs["feature_list_sparse_types"])):
        width = rank + (1 if prefix == "context" else 2)
        sparse = [(_dt.int64, TensorShape([None, width]))] * len(types)
        sparse += [(t, TensorShape([None])) for t in types]
        sparse += [(_dt.int64, TensorShape([width]))] * len(types)
        if prefix == "context":
            dense = [(t, TensorShape(batch + as_shape(s).as_list()))
                     for t, s in zip(attrs["Tcontext_dense"], attrs["context_dense_shapes"])]
        else:
            dense = [(t, TensorShape(batch + [None] + as_shape(s).as_list())) for t, s in
                     zip(attrs["feature_list_dense_types"], attrs["feature_list_dense_shapes"])]
        out += sparse + dense
    if lengths:
        out += [(_dt.int64, TensorShape(batch))] * len(attrs["feature_list_dense_types"])
    return out


@single_op.shape
def _(serialized: Tensor, *args: Any, **attrs: Any) -> Any:
    if serialized.shape.ndims not in (None, 0):
        raise ValueError(f"ParseSingleSequenceExample: serialized must be a scalar string, got "
                         f"{serialized.name} of shape {serialized.shape}; use "
                         "tf.io.parse_sequence_example for a batch.")
    return _out_shapes([], 0, attrs, lengths=False)


@batch_op.shape
def _(serialized: Tensor, debug_name: Tensor, defaults: list[Tensor], **attrs: Any) -> Any:
    if serialized.shape.ndims not in (None, 1):
        raise ValueError(f"ParseSequenceExample: serialized must be a vector of strings, got "
                         f"{serialized.name} of shape {serialized.shape}.")
    batch = serialized.shape.as_list()[0] if serialized.shape.ndims == 1 else None
    return _out_shapes([batch], 1, attrs, lengths=True)


def _strings(value: Any) -> list[str]:
    return [v.decode() if isinstance(v, bytes) else str(v)
            for v in np.asarray(value, dtype=object).reshape(-1)]


def _specs(keys: list[list[str]], defaults: list[Any], missing: Any, attrs: dict[str, Any]
           ) -> _sk.SequenceSpecs:
    cs, cd, fs, fd = keys
    return _sk.SequenceSpecs(
        list(zip(cs, attrs["context_sparse_types"])),
        [(k, t, as_shape(s).as_list(), d) for k, t, s, d in
         zip(cd, attrs["Tcontext_dense"], attrs["context_dense_shapes"], defaults)],
        list(zip(fs, attrs["feature_list_sparse_types"])),
        [(k, t, as_shape(s).as_list()) for k, t, s in
         zip(fd, attrs["feature_list_dense_types"], attrs["feature_list_dense_shapes"])],
        frozenset(_strings(missing)))


def _bare(out: list[Any]) -> Any:
    return out[0] if len(out) == 1 else out  # one output is returned bare


@single_op.kernel("CPU")
def _(serialized: Any, missing: Any, cs: list[Any], cd: list[Any], fs: list[Any],
      fd: list[Any], defaults: list[Any], debug_name: Any, **attrs: Any) -> Any:
    specs = _specs([[k for key in g for k in _strings(key)] for g in (cs, cd, fs, fd)],
                   defaults, missing, attrs)
    op = "ParseSingleSequenceExample"
    context, lists, _ = _sk.parse_sequence_batch(
        np.asarray(serialized, dtype=object).reshape(1), _strings(debug_name), specs, op)
    context, lists = _sk.unbatch(specs, context, lists)
    return _bare(context + lists)


@batch_op.kernel("CPU")
def _(serialized: Any, debug_name: Any, defaults: list[Any], **attrs: Any) -> Any:
    keys = [_strings(attrs[f"{g}_keys"]) for g in
            ("context_sparse", "context_dense", "feature_list_sparse", "feature_list_dense")]
    specs = _specs(keys, defaults, attrs["feature_list_dense_missing_assumed_empty"], attrs)
    context, lists, lengths = _sk.parse_sequence_batch(
        serialized, _strings(debug_name), specs, "ParseSequenceExample")
    return _bare(context + lists + lengths)


# ---- Python API ----------------------------------------------------------------------------
def _split(context_features: Any, sequence_features: Any) -> dict[str, Any]:
    """Sorted (key, dtype[, shape, default]) lists per group, as TF orders them."""
    if not (context_features or sequence_features):
        raise ValueError("Missing features: give context_features and/or sequence_features "
                         "(a non-empty dict of feature specs).")
    groups: dict[str, Any] = {"cs": [], "cd": [], "fs": [], "fd": [], "missing": []}
    for key in sorted(context_features or {}):
        spec = context_features[key]
        if not isinstance(spec, (FixedLenFeature, VarLenFeature)):
            raise ValueError(f"Context feature {key!r}: unsupported spec {spec!r}; context "
                             "features take FixedLenFeature or VarLenFeature.")
        dtype = check_dtype(key, spec)
        if isinstance(spec, VarLenFeature):
            groups["cs"].append((key, dtype))
            continue
        shape = as_shape(spec.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Context feature {key!r}: shape {spec.shape!r} must be fully "
                             "defined.")
        groups["cd"].append((key, dtype, shape, dense_default(key, spec, dtype, shape)))
    for key in sorted(sequence_features or {}):
        spec = sequence_features[key]
        if not isinstance(spec, (FixedLenSequenceFeature, VarLenFeature)):
            raise ValueError(f"Sequence feature {key!r}: unsupported spec {spec!r}; sequence "
                             "features take FixedLenSequenceFeature or VarLenFeature.")
        dtype = check_dtype(key, spec)
        if isinstance(spec, VarLenFeature):
            groups["fs"].append((key, dtype))
            continue
        if spec.default_value is not None:
            raise ValueError(f"Sequence feature {key!r}: default_value must be None (a "
                             f"FixedLenSequenceFeature of a SequenceExample pads with zeros), "
                             f"got {spec.default_value!r}.")
        shape = as_shape(spec.shape)
        if not shape.is_fully_defined():
            raise ValueError(f"Sequence feature {key!r}: shape {spec.shape!r} must be fully "
                             "defined.")
        groups["fd"].append((key, dtype, shape))
        if spec.allow_missing:
            groups["missing"].append(key)
    return groups


def _type_attrs(g: dict[str, Any]) -> dict[str, Any]:
    return {"context_sparse_types": [t for _, t in g["cs"]],
            "Tcontext_dense": [d[1] for d in g["cd"]],
            "feature_list_dense_types": [d[1] for d in g["fd"]],
            "context_dense_shapes": [d[2] for d in g["cd"]],
            "feature_list_sparse_types": [t for _, t in g["fs"]],
            "feature_list_dense_shapes": [d[2] for d in g["fd"]]}


def _dicts(g: dict[str, Any], outs: list[Any], lengths: bool) -> tuple[dict[str, Any], ...]:
    """TF's result dicts from the op's flat outputs (context, then feature lists, lengths)."""
    result, pos = [], 0
    for sparse, dense in ((g["cs"], g["cd"]), (g["fs"], g["fd"])):
        n = len(sparse)
        part: dict[str, Any] = {k: SparseTensor(outs[pos + i], outs[pos + n + i],
                                                outs[pos + 2 * n + i])
                                for i, (k, _) in enumerate(sparse)}
        part.update({d[0]: outs[pos + 3 * n + j] for j, d in enumerate(dense)})
        result.append(part)
        pos += 3 * n + len(dense)
    if lengths:
        result.append({d[0]: outs[pos + j] for j, d in enumerate(g["fd"])})
    return tuple(result)


def parse_single_sequence_example(
        serialized: Any, context_features: dict[str, Any] | None = None,
        sequence_features: dict[str, Any] | None = None, example_name: Any = None,
        name: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """`tf.parse_single_sequence_example`: one serialized SequenceExample to tensors.

    Args:
        serialized: a scalar string, a serialized `tf.train.SequenceExample`.
        context_features: key -> FixedLenFeature | VarLenFeature (the context).
        sequence_features: key -> FixedLenSequenceFeature | VarLenFeature (feature lists).
            A FixedLenSequenceFeature gives [steps] + shape; without `allow_missing`
            its feature list must be present. A VarLenFeature gives a SparseTensor
            indexed (step, position).
        example_name: an optional scalar string naming the example in errors.
        name: a name for the op.

    Returns:
        (context dict, feature_lists dict) of Tensors and SparseTensors.

    Raises:
        ValueError: no features, an unsupported or malformed spec (named by key), or a
            FixedLenSequenceFeature with a default_value.

    Example:
        >>> ctx, seq = tf.parse_single_sequence_example(record,
        ...     sequence_features={"tok": tf.FixedLenSequenceFeature([], tf.int64)})
    """
    g = _split(context_features, sequence_features)
    with name_scope(name or "ParseSingleSequenceExample"):
        ser = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        missing = convert_to_tensor(np.array(g["missing"], dtype=object).reshape(-1),
                                    dtype=_dt.string,
                                    name="feature_list_dense_missing_assumed_empty")
        keys = [[convert_to_tensor(k[0], dtype=_dt.string, name=f"{grp}_key") for k in g[grp]]
                for grp in ("cs", "cd", "fs", "fd")]
        debug = convert_to_tensor("" if example_name is None else example_name,
                                  dtype=_dt.string, name="debug_name")
        outs = create_op(
            "ParseSingleSequenceExample",
            [ser, missing, *keys, [d[3] for d in g["cd"]], debug], _type_attrs(g),
            name="ParseSingleSequenceExample").outputs
    context, lists = _dicts(g, outs, lengths=False)
    return context, lists


def parse_sequence_example(
        serialized: Any, context_features: dict[str, Any] | None = None,
        sequence_features: dict[str, Any] | None = None, example_names: Any = None,
        name: str | None = None) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """`tf.io.parse_sequence_example`: a batch of serialized SequenceExamples to tensors.

    Dense feature lists come out [batch, longest] + shape, zero-padded (b"" for strings);
    the third dict holds each one's true length per example (int64 [batch]).
    VarLenFeature feature lists are SparseTensors indexed (example, step, position).

    Args:
        serialized: a string vector of serialized `tf.train.SequenceExample`s.
        context_features: key -> FixedLenFeature | VarLenFeature.
        sequence_features: key -> FixedLenSequenceFeature | VarLenFeature.
        example_names: optional names of the examples, used in error messages.
        name: a name for the op.

    Returns:
        (context dict, feature_lists dict, feature_list lengths dict).

    Raises:
        ValueError: as `parse_single_sequence_example`.

    Example:
        >>> ctx, seq, lengths = tf.io.parse_sequence_example(batch,
        ...     sequence_features={"tok": tf.FixedLenSequenceFeature([], tf.int64)})
    """
    g = _split(context_features, sequence_features)
    attrs = _type_attrs(g)
    attrs.update(feature_list_dense_missing_assumed_empty=list(g["missing"]),
                 Ncontext_sparse=len(g["cs"]), Ncontext_dense=len(g["cd"]),
                 Nfeature_list_sparse=len(g["fs"]), Nfeature_list_dense=len(g["fd"]),
                 **{f"{n}_keys": [k[0] for k in g[grp]] for n, grp in (
                     ("context_sparse", "cs"), ("context_dense", "cd"),
                     ("feature_list_sparse", "fs"), ("feature_list_dense", "fd"))})
    with name_scope(name or "ParseSequenceExample"):
        ser = convert_to_tensor(serialized, dtype=_dt.string, name="serialized")
        debug = convert_to_tensor([] if example_names is None else example_names,
                                  dtype=_dt.string, name="debug_name")
        outs = create_op(
            "ParseSequenceExample", [ser, debug, [d[3] for d in g["cd"]]], attrs,
            name="ParseSequenceExample").outputs
    context, lists, lengths = _dicts(g, outs, lengths=True)
    return context, lists, lengths


__all__ = ["parse_sequence_example", "parse_single_sequence_example"]

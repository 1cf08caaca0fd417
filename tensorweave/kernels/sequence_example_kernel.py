"""The NumPy + protobuf kernel of the SequenceExample parsing ops.

A `tf.train.SequenceExample` is a context (a Features map, read exactly as an
Example's features by example_kernel.py) and feature lists: key -> one Feature per
time step. Every op here (ParseSingleSequenceExample, ParseSequenceExample,
ParseSequenceExampleV2) runs `parse_sequence_batch` over a batch; the single form is a
batch of one whose batch dimension the op drops (`unbatch`).

Every error names the op, the example (index and name) and the feature key.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.proto import example_pb2
from tensorweave.kernels import example_kernel as _k


class SequenceSpecs(NamedTuple):
    """What to parse. Sparse: (key, dtype); dense: (key, dtype, shape, default)."""

    context_sparse: list[tuple[str, Any]]
    context_dense: list[tuple[str, Any, list[Any], Any]]
    feature_list_sparse: list[tuple[str, Any]]
    feature_list_dense: list[tuple[str, Any, list[Any]]]
    missing_assumed_empty: frozenset[str]


def _label(names: list[str], b: int) -> str:
    return f"sequence example {b}" + (f" ({names[b]})" if b < len(names) and names[b] else "")


def _fail(op: str, where: str, msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"{op}: {where}: {msg}")


def decode(serialized: Any, names: list[str], op: str) -> list[Any]:
    """Each serialized SequenceExample (bytes or str), parsed."""
    out = []
    for b, s in enumerate(np.asarray(serialized, dtype=object).reshape(-1)):
        data = s.encode() if isinstance(s, str) else bytes(s)
        try:
            out.append(example_pb2.SequenceExample.FromString(data))
        except DecodeError as e:
            raise _fail(op, _label(names, b), f"could not parse the serialized SequenceExample "
                        f"({len(data)} bytes): {e}. Is it a serialized "
                        "tf.train.SequenceExample?") from e
    return out


def _steps(seq: Any, key: str) -> Any:
    lists = seq.feature_lists.feature_list
    return lists[key].feature if key in lists else None


def _step_values(op: str, names: list[str], b: int, key: str, t: int, step: Any,
                 dtype: Any) -> Any:
    where = lambda: f"{_label(names, b)}, feature list {key!r}, step {t}"  # noqa: E731
    return _k.feature_values(step, _k.KIND[dtype.name], dtype, where, op)


def feature_list_sparse(seqs: list[Any], key: str, dtype: Any, names: list[str],
                        op: str) -> list[np.ndarray]:
    """VarLenFeature of a feature list: indices [n, 3] (example, step, position),
    values [n], dense_shape [B, most steps, most values in a step]. Never required."""
    step_b, step_t, counts, flat = [], [], [], []
    for b, seq in enumerate(seqs):
        for t, step in enumerate(_steps(seq, key) or ()):
            v = _step_values(op, names, b, key, t, step, dtype)
            step_b.append(b)
            step_t.append(t)
            counts.append(len(v) if v else 0)
            if v:
                flat.extend(v)
    n = np.asarray(counts, dtype=np.int64)
    which = np.repeat(np.arange(n.size), n)  # the step each value belongs to
    position = np.arange(int(n.sum()), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
    indices = np.stack([np.asarray(step_b, np.int64)[which],
                        np.asarray(step_t, np.int64)[which], position], axis=1)
    most_steps = max((len(_steps(s, key) or ()) for s in seqs), default=0)
    shape = np.array([len(seqs), most_steps, int(n.max()) if n.size else 0], np.int64)
    return [indices.reshape(-1, 3), _k.array_of(flat, dtype), shape]


def feature_list_dense(seqs: list[Any], key: str, dtype: Any, shape: list[Any],
                       names: list[str], missing_ok: bool, op: str
                       ) -> tuple[np.ndarray, np.ndarray]:
    """FixedLenSequenceFeature: ([B, most steps] + shape, padded with 0 / b""; lengths [B])."""
    size = int(np.prod(shape)) if shape else 1
    per, lengths = [], []
    for b, seq in enumerate(seqs):
        steps = _steps(seq, key)
        if steps is None and not missing_ok:
            raise _fail(op, _label(names, b), f"feature list {key!r} is required but could "
                        "not be found; use FixedLenSequenceFeature(..., allow_missing=True) "
                        "if it may be missing (it then parses as zero steps).")
        flat: list[Any] = []
        for t, step in enumerate(steps or ()):
            v = _step_values(op, names, b, key, t, step, dtype)
            if (len(v) if v else 0) != size:
                raise _fail(op, f"{_label(names, b)}, feature list {key!r}, step {t}",
                            f"the step has {len(v) if v else 0} values, the "
                            f"FixedLenSequenceFeature of shape {list(shape)} needs exactly "
                            f"{size} a step.")
            flat.extend(v)
        lengths.append(len(steps or ()))
        per.append(_k.array_of(flat, dtype).reshape([lengths[-1]] + list(shape)))
    out = np.zeros([len(seqs), max(lengths, default=0)] + list(shape),
                   dtype=object if dtype == _dt.string else dtype.as_numpy_dtype)
    if dtype == _dt.string:
        out[...] = b""
    for b, p in enumerate(per):
        out[b, :p.shape[0]] = p
    return out, np.asarray(lengths, dtype=np.int64)


def parse_sequence_batch(serialized: Any, names: list[str], specs: SequenceSpecs,
                         op: str) -> tuple[list[Any], list[Any], list[Any]]:
    """Context outputs (sparse indices, values, shapes, then dense values), feature-list
    outputs (the same layout) and each dense feature list's lengths, over a batch."""
    seqs = decode(serialized, names, op)
    fmaps = [s.context.feature for s in seqs]
    where = f"{op} context"
    context = _k.sparse_outputs([_k.parse_sparse(fmaps, k, t, names, where)
                                 for k, t in specs.context_sparse])
    context += [_k.parse_dense(fmaps, k, t, s, d, names, where)
                for k, t, s, d in specs.context_dense]
    lists = _k.sparse_outputs([feature_list_sparse(seqs, k, t, names, op)
                    for k, t in specs.feature_list_sparse])
    dense = [feature_list_dense(seqs, k, t, s, names, k in specs.missing_assumed_empty, op)
             for k, t, s in specs.feature_list_dense]
    return context, lists + [d[0] for d in dense], [d[1] for d in dense]


def unbatch(specs: SequenceSpecs, context: list[Any], lists: list[Any]
            ) -> tuple[list[Any], list[Any]]:
    """A batch of one's outputs without the batch dimension (the single-example form)."""
    def drop(outs: list[Any], n_sparse: int) -> list[Any]:
        idx = [i[:, 1:] for i in outs[:n_sparse]]
        shapes = [s[1:] for s in outs[2 * n_sparse:3 * n_sparse]]
        return idx + outs[n_sparse:2 * n_sparse] + shapes + [d[0] for d in outs[3 * n_sparse:]]
    return (drop(context, len(specs.context_sparse)),
            drop(lists, len(specs.feature_list_sparse)))


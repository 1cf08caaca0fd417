"""Dataset transformations TF1 input pipelines chain after the sources: `flat_map` and
`interleave` (a function of an element that returns a Dataset), `shard`,
`padded_batch`, and `Dataset.list_files`.

A nested function returns a *Dataset*, not tensors: it is traced once on symbolic
elements like `map`'s function, and the returned pipeline's graph inputs (a file
name, a `tf.data.TFRecordDataset`'s compression type, the tensors its own `map`
captures) become the traced function's outputs. Per input element the function is
run and the nested pipeline iterates over those values, as TF builds one iterator
of the nested dataset per element.

Example:
    >>> files = tf.data.Dataset.list_files("/data/train-*.tfrecord", shuffle=True)
    >>> ds = files.interleave(tf.data.TFRecordDataset, cycle_length=4)
    >>> ds = ds.shard(num_workers, task_index).padded_batch(32, padded_shapes=[None])
"""
from __future__ import annotations

import glob as _glob
import itertools
import os
from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.text import text_of
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.data.dataset import Dataset, Element, Env, register_impl
from tensorweave.data.nest import Spec, pack, sparse_starts
from tensorweave.data.transforms import CapturedInputs, _trace, pass_rng
from tensorweave.ops.random.random_ops import get_seed


def interleave_iters(sources: Iterator[Iterator[Any]], cycle: int, block: int = 1
                     ) -> Iterator[Any]:
    """TF's interleave order: `cycle` open sources, `block` items from each in turn;
    a finished source's slot takes the next source when the round comes back to it."""
    slots: list[Iterator[Any] | None] = [None] * cycle
    idx, taken, n_open, inputs_left = 0, 0, 0, True
    while inputs_left or n_open:
        source = slots[idx]
        if source is not None:
            try:
                item = next(source)
            except StopIteration:
                slots[idx], n_open, taken = None, n_open - 1, 0
                idx = (idx + 1) % cycle
                continue
            yield item
            taken += 1
            if taken == block:
                taken, idx = 0, (idx + 1) % cycle
        elif inputs_left:
            slots[idx] = next(sources, None)
            inputs_left = slots[idx] is not None
            n_open += inputs_left
        else:
            taken, idx = 0, (idx + 1) % cycle


def _positive(value: Any, what: str, name: str) -> int:
    n = int(value)
    if n < 1:
        raise ValueError(f"Dataset.{what}: {name} must be >= 1, got {value!r}.")
    return n


@register_impl
class InterleaveDataset(Dataset):
    """`flat_map` (cycle 1, block 1) and `interleave` of a Dataset-valued function."""

    def __init__(self, dataset: Dataset, fn: Callable[..., Any], cycle_length: Any,
                 block_length: Any, what: str) -> None:
        # None / AUTOTUNE: as many open sources as cores, as TF >= 1.15 chooses
        self._cycle = (os.cpu_count() or 1) if cycle_length in (None, -1) else _positive(
            cycle_length, what, "cycle_length")
        self._block = _positive(block_length, what, "block_length")
        made: list[Dataset] = []

        def inputs_of(*args: Any) -> tuple[Tensor, ...]:
            inner = fn(*args)
            if not isinstance(inner, Dataset):
                raise TypeError(f"The function given to Dataset.{what} must return a "
                                f"Dataset (e.g. tf.data.TFRecordDataset(filename)), it "
                                f"returned {inner!r}.")
            made.append(inner)
            return tuple(inner._all_inputs())

        self._fg, _ = _trace(dataset, inputs_of, what)
        self._captured = CapturedInputs(self._fg)
        self._inner = made[0]
        super().__init__(self._inner._structure, self._captured.inputs, [dataset])

    _live_inputs = True   # captures passed per element (CapturedInputs)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        def nested() -> Iterator[Iterator[Element]]:
            for elem in self._children[0]._iter(env):
                inner = env.call(self._fg, self._captured.args(elem, values))
                yield self._inner._iter(env.nested(self._inner._node_values(inner)))
        yield from interleave_iters(nested(), self._cycle, self._block)


@register_impl
class ShardDataset(Dataset):
    def __init__(self, dataset: Dataset, num_shards: Any, index: Any) -> None:
        self._n = _positive(num_shards, "shard", "num_shards")
        self._i = int(index)
        if not 0 <= self._i < self._n:
            raise ValueError(f"Dataset.shard: index must be in [0, num_shards={self._n}), "
                             f"got {index!r} (pass the task index, num_shards the number "
                             f"of workers).")
        super().__init__(dataset._structure, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        return itertools.islice(self._children[0]._iter(env), self._i, None, self._n)


def _default_padding(spec: Spec) -> Any:
    return b"" if spec.dtype.base_dtype == _dt.string else 0


@register_impl
class PaddedBatchDataset(Dataset):
    def __init__(self, dataset: Dataset, batch_size: Any, padded_shapes: Any,
                 padding_values: Any, drop_remainder: bool) -> None:
        self._n = _positive(batch_size, "padded_batch", "batch_size")
        self._drop = bool(drop_remainder)
        specs = dataset._specs()
        if sparse_starts(dataset._structure):
            raise TypeError("Dataset.padded_batch does not take SparseTensor elements; "
                            "use batch() for them.")
        shapes = [as_shape(s) for s in _leaves(padded_shapes, dataset._structure,
                                                 "padded_shapes")]
        pads = [_default_padding(s) for s in specs] if padding_values is None else \
            _leaves(padding_values, dataset._structure, "padding_values")
        for spec, shape in zip(specs, shapes):
            if not shape.is_compatible_with(spec.shape) and not (
                    spec.shape.ndims is None or shape.ndims == spec.shape.ndims):
                raise ValueError(f"Dataset.padded_batch: padded shape {shape} does not fit "
                                 f"elements of shape {spec.shape}.")
        self._shapes = [s.as_list() if s.ndims is not None else None for s in shapes]
        # Padding values may be tensors (TF 1.x wants them so): inputs of the node,
        # their values read when the iterator starts.
        pad_inputs = [p if isinstance(p, Tensor) else convert_to_tensor(
            p, dtype=s.dtype.base_dtype, name="padding_value") for p, s in zip(pads, specs)]
        for p, s in zip(pad_inputs, specs):
            if p.dtype.base_dtype != s.dtype.base_dtype or p.shape.ndims not in (None, 0):
                raise ValueError(f"Dataset.padded_batch: padding value {p.name} must be a "
                                 f"{s.dtype.name} scalar like its component, got "
                                 f"{p.dtype.name} with shape {p.shape}.")
        lead = [self._n if self._drop else None]
        structure = pack(dataset._structure, [
            Spec(s.dtype, TensorShape(lead + [None if d is None or d < 0 else d for d in sh])
                 if sh is not None else TensorShape(None))
            for s, sh in zip(specs, self._shapes)])
        super().__init__(structure, pad_inputs, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        pads = [np.asarray(v) for v in values]
        it = self._children[0]._iter(env)
        while True:
            chunk = list(itertools.islice(it, self._n))
            if not chunk or (self._drop and len(chunk) < self._n):
                return
            yield tuple(self._pad(i, [np.asarray(e[i]) for e in chunk], pads[i])
                        for i in range(len(chunk[0])))

    def _pad(self, i: int, parts: list[np.ndarray], pad: np.ndarray) -> np.ndarray:
        want = self._shapes[i]
        rank = parts[0].ndim
        if want is None:
            want = [None] * rank
        if any(p.ndim != len(want) for p in parts):
            raise errors.InvalidArgumentError(
                None, None, f"padded_batch: component {i} has rank {parts[0].ndim}, but "
                f"its padded shape {want} has rank {len(want)}")
        target = []
        for d, w in enumerate(want):
            biggest = max(p.shape[d] for p in parts)
            if w is not None and w >= 0 and biggest > w:
                raise errors.InvalidArgumentError(
                    None, None, f"padded_batch: component {i} has size {biggest} in "
                    f"dimension {d}, larger than its padded shape {want}: attempted to pad "
                    f"to a smaller size than the input element")
            target.append(biggest if w is None or w < 0 else w)
        out = np.full([len(parts)] + target, pad, dtype=parts[0].dtype)
        for j, p in enumerate(parts):
            out[(j,) + tuple(slice(0, n) for n in p.shape)] = p
        return out


def _leaves(value: Any, structure: Any, what: str) -> list[Any]:
    """`value` as one leaf per component of `structure` (a single value for a single
    component; a shape given as a list is one leaf)."""
    if not isinstance(structure, (tuple, dict)):
        return [value]
    if isinstance(structure, dict):
        if not isinstance(value, dict) or set(value) != set(structure):
            raise ValueError(f"Dataset.padded_batch: {what} must be a dict with the keys "
                             f"{sorted(structure)}, got {value!r}.")
        return [x for k in sorted(structure) for x in _leaves(value[k], structure[k], what)]
    if not isinstance(value, (tuple, list)) or len(value) != len(structure):
        raise ValueError(f"Dataset.padded_batch: {what} must have one entry per component "
                         f"({len(structure)}), got {value!r}.")
    return [x for v, s in zip(value, structure) for x in _leaves(v, s, what)]


@register_impl
class ListFilesDataset(Dataset):
    """The files matching a glob pattern (or patterns), sorted, shuffled if asked."""

    def __init__(self, file_pattern: Any, shuffle: Any, seed: Any) -> None:
        pattern = convert_to_tensor(file_pattern, dtype=_dt.string, name="file_pattern")
        if pattern.shape.ndims not in (None, 0, 1):
            raise ValueError(f"Dataset.list_files: file_pattern must be a string or a list "
                             f"of strings, got shape {pattern.shape}.")
        self._shuffle = True if shuffle is None else bool(shuffle)
        self._seeds = get_seed(seed)
        super().__init__(Spec(_dt.string, TensorShape([])), [pattern])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        patterns = [text_of(p) for p in np.asarray(values[0], dtype=object).reshape(-1)]
        files = sorted({f for p in patterns for f in _glob.glob(p)})
        if not files:
            raise errors.InvalidArgumentError(
                None, None, f"Dataset.list_files: no files match {patterns}; expected "
                f"the pattern to match at least one file (check the path and the glob)")
        if self._shuffle:
            order = pass_rng(env, self, self._seeds).permutation(len(files))
            files = [files[i] for i in order]
        for f in files:
            yield (np.array(f.encode(), dtype=object),)

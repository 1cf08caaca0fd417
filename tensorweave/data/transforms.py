"""Dataset transformations: map, filter, batch, shuffle, repeat, cache, take, skip,
prefetch, zip and concatenate. Each is a node over its input(s) producing flat NumPy elements.
"""
from __future__ import annotations

import itertools
import queue
import threading
from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.data.dataset import (Dataset, Element, Env, int_args, register_impl,
                                             resolve_ints, snapshot)
from tensorweave.data.nest import (
    SparseParts, Spec, flatten, lists_to_tuples, map_sparse_aware, map_structure, pack,
    parts_to_sparse, sparse_starts, sparse_to_parts)
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.func_graph import func_graph_from_py_func
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.ops.random.random_ops import get_seed
from tensorweave.runtime.step import StepState


def _trace(dataset: Dataset, fn: Callable[..., Any], what: str) -> tuple[Any, Any]:
    """Traces `fn` on placeholders for one element; returns (FuncGraph, result structure)."""
    specs = dataset._specs()
    whole_sparse = isinstance(dataset._structure, SparseParts)

    def with_sparse(*args: Any) -> Any:
        # SparseTensors travel as SparseParts; the user's function sees SparseTensors.
        if whole_sparse:  # an element that is one SparseTensor arrives as its 3 parts
            args = (SparseParts(*args),)
        return sparse_to_parts(fn(*parts_to_sparse(args)))

    fg = func_graph_from_py_func(f"dataset_{what}", with_sparse,
                                 [(s.dtype, s.shape) for s in specs],
                                 get_default_graph(), structured_args=dataset._structure)
    result = lists_to_tuples(fg.structured_outputs)
    for leaf in flatten(result):
        if not isinstance(leaf, Tensor):
            raise TypeError(f"The function given to Dataset.{what} must return tensors (or "
                            f"nested tuples/dicts of them); it returned {leaf!r}.")
    fg._finish()
    return fg, result


def _takes_ref(op: Any, t: Tensor) -> bool:
    """Whether `op` takes `t` at an input it reads by reference (a queue's handle)."""
    pos = 0
    for spec in op.op_def.inputs:
        n = int(op._attrs.get(op.op_def.list_attr(spec.name), 0)) if spec.is_list else 1
        if spec.is_ref and any(x is t for x in op._inputs[pos:pos + n]):
            return True
        pos += n
    return False


def _read_of(t: Tensor) -> Tensor:
    """The variable reference `t` reads (a variable's "read" snapshot, read_value()),
    or `t` itself: a read captured by a dataset function is done per call."""
    op = t.op
    if op.type == "Identity" and op._inputs and op._inputs[0].dtype.is_ref_dtype:
        return op._inputs[0]
    return t


class CapturedInputs:
    """How a traced function's captured tensors are passed, per call (per element).

    A capture some op of the body takes by reference (a queue to dequeue from, a
    table) is passed as the live object; any other is read at each call, so a
    captured variable (or a read of one: `v.value()`, `v.read_value()`, `v + 1`)
    gives the element its current value. TF runs dataset functions per element
    the same way.

    `inputs` are the node's input tensors: the captured ones, a variable's
    reference in place of a read of it.
    """

    def __init__(self, fg: Any) -> None:
        self.inputs = [_read_of(outer) for outer, _inner in fg.captures]
        self.live = [any(_takes_ref(op, inner) for op in inner._consumers)
                     for _outer, inner in fg.captures]

    def args(self, elem: Element, values: list[Any]) -> list[Any]:
        return list(elem) + [v if live else snapshot(v) for v, live in zip(values, self.live)]


class _FunctionNode(Dataset):
    """A node calling a traced function per element, with captured tensors as inputs."""

    _live_inputs = True

    def __init__(self, dataset: Dataset, fn: Callable[..., Any], what: str) -> None:
        self._fg, result = _trace(dataset, fn, what)
        self._result = result
        self._captured = CapturedInputs(self._fg)
        super().__init__(None, self._captured.inputs, [dataset])

    def _calls(self, env: Env, values: list[Any]) -> Iterator[tuple[Element, list[Any]]]:
        for elem in self._children[0]._iter(env):
            yield elem, env.call(self._fg, self._captured.args(elem, values))


@register_impl
class MapDataset(_FunctionNode):
    def __init__(self, dataset: Dataset, fn: Callable[..., Any]) -> None:
        super().__init__(dataset, fn, "map")
        self._structure = map_structure(lambda t: Spec(t.dtype.base_dtype, t.shape),
                                        self._result)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        for _, out in self._calls(env, values):
            yield tuple(np.asarray(v) for v in out)


@register_impl
class FilterDataset(_FunctionNode):
    def __init__(self, dataset: Dataset, predicate: Callable[..., Any]) -> None:
        super().__init__(dataset, predicate, "filter")
        out = self._result
        if not isinstance(out, Tensor) or out.dtype.base_dtype != _dt.bool or \
                not out.shape.is_compatible_with(TensorShape([])):
            raise ValueError(f"Dataset.filter's predicate must return a scalar bool tensor, "
                             f"got {out!r}.")
        self._structure = dataset._structure

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        for elem, out in self._calls(env, values):
            if bool(np.asarray(out[0])):
                yield elem


@register_impl
class BatchDataset(Dataset):
    def __init__(self, dataset: Dataset, batch_size: int, drop_remainder: bool) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
        self._n = int(batch_size)
        self._drop = bool(drop_remainder)
        lead = [self._n if self._drop else None]
        structure = map_sparse_aware(
            lambda s: Spec(s.dtype, TensorShape(None) if s.shape.ndims is None
                           else TensorShape(lead + s.shape.as_list())),
            _batched_sparse_specs, dataset._structure)
        self._sparse = sparse_starts(dataset._structure)
        super().__init__(structure, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        it = self._children[0]._iter(env)
        while True:
            chunk = list(itertools.islice(it, self._n))
            if not chunk or (self._drop and len(chunk) < self._n):
                return
            out: list[np.ndarray] = []
            while len(out) < len(chunk[0]):
                i = len(out)
                if i in self._sparse:
                    out.extend(_batch_sparse(i, [e[i:i + 3] for e in chunk]))
                else:
                    out.append(_stack(i, [e[i] for e in chunk]))
            yield tuple(out)


def _stack(i: int, parts: list[np.ndarray]) -> np.ndarray:
    first = parts[0].shape
    if first == () and all(p.shape == () for p in parts):
        # Scalars (records, labels): one array from their items; np.stack of hundreds
        # of 0-d arrays cost ~50 us a batch. dtypes are promoted as np.stack does.
        dtype = np.result_type(*{p.dtype for p in parts})
        out = np.empty(len(parts), dtype=dtype)
        out[:] = [p[()] for p in parts]
        return out
    for j, p in enumerate(parts):
        if p.shape != first:
            raise errors.InvalidArgumentError(
                None, None, f"Cannot batch tensors with different shapes in component {i}. "
                f"First element had shape {list(first)} and element {j} had shape "
                f"{list(p.shape)}. Make the shapes equal (e.g. with a map) before batching.")
    return np.stack(parts)


def _batched_sparse_specs(parts: SparseParts) -> SparseParts:
    rank = parts.dense_shape.shape.as_list()[0] if parts.dense_shape.shape.ndims == 1 else None
    rank = None if rank is None else rank + 1
    return SparseParts(Spec(_dt.int64, TensorShape([None, rank])),
                       Spec(parts.values.dtype, TensorShape([None])),
                       Spec(_dt.int64, TensorShape([rank])))


def _batch_sparse(i: int, parts: list[tuple[Any, ...]]) -> list[np.ndarray]:
    """SparseTensor elements -> one SparseTensor with a leading batch dimension; each
    other dimension is the largest of the elements' (as TF batches SparseTensors)."""
    shapes = [np.asarray(p[2], dtype=np.int64) for p in parts]
    if len({s.size for s in shapes}) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"Cannot batch SparseTensors of different ranks in component {i}: "
            f"dense shapes {[s.tolist() for s in shapes]}.")
    indices = [np.concatenate([np.full((len(p[0]), 1), j, np.int64),
                               np.asarray(p[0], np.int64).reshape(len(p[0]), s.size)], axis=1)
               for j, (p, s) in enumerate(zip(parts, shapes))]
    return [np.concatenate(indices).reshape(-1, shapes[0].size + 1),
            np.concatenate([np.asarray(p[1]) for p in parts]),
            np.concatenate([[len(parts)], np.max(np.stack(shapes), axis=0)]).astype(np.int64)]


@register_impl
class ShuffleDataset(Dataset):
    def __init__(self, dataset: Dataset, buffer_size: int, seed: int | None,
                 reshuffle_each_iteration: bool) -> None:
        if int(buffer_size) < 1:
            raise ValueError(f"shuffle buffer_size must be >= 1, got {buffer_size}.")
        self._buffer_size = int(buffer_size)
        self._seeds = get_seed(seed)
        self._reshuffle = reshuffle_each_iteration
        super().__init__(dataset._structure, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        uniform = _uniforms(pass_rng(env, self, self._seeds, self._reshuffle))
        buf: list[Element] = []
        for elem in self._children[0]._iter(env):
            if len(buf) < self._buffer_size:
                buf.append(elem)
                continue
            j = int(next(uniform) * len(buf))
            out, buf[j] = buf[j], elem
            yield out
        while buf:
            j = int(next(uniform) * len(buf))
            buf[j], buf[-1] = buf[-1], buf[j]
            yield buf.pop()


def pass_rng(env: Env, node: Dataset, seeds: tuple[Any, Any], reshuffle: bool = True
             ) -> np.random.Generator:
    """The random stream of `node`'s next pass over its input. Each pass (under
    repeat) gets its own stream; a seed makes every stream, and so the whole order,
    the same in every session."""
    epoch = env.epochs.get(id(node), 0)
    env.epochs[id(node)] = epoch + 1
    s1, s2 = seeds
    if s1 is None and s2 is None:
        return np.random.default_rng()
    entropy: Any = [s1, s2, epoch if reshuffle else 0]
    return np.random.default_rng(entropy)


def _uniforms(rng: np.random.Generator) -> Iterator[float]:
    """Uniform draws in [0, 1), drawn 1024 at a time: one Generator call an element
    cost ~1 us, a quarter of a millisecond for each batch of 256."""
    while True:
        yield from rng.random(1024).tolist()


@register_impl
class RepeatDataset(Dataset):
    def __init__(self, dataset: Dataset, count: Any) -> None:
        self._count, inputs = int_args([-1 if count is None else count], "Dataset.repeat")
        super().__init__(dataset._structure, inputs, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        count = resolve_ints(self._count, values)[0]
        passes = itertools.count() if count < 0 else range(count)
        for _ in passes:
            produced = False
            for elem in self._children[0]._iter(env):
                produced = True
                yield elem
            if not produced:
                return  # repeating an empty dataset forever would hang get_next


@register_impl
class CacheDataset(Dataset):
    def __init__(self, dataset: Dataset, filename: str) -> None:
        if filename:
            raise ValueError(f"Dataset.cache(filename={filename!r}): only the in-memory cache "
                             "is offered; call cache() without a filename.")
        super().__init__(dataset._structure, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        cached = env.caches.get(id(self))
        if cached is not None:
            yield from cached
            return
        # As TF: only a pass that reaches the end of the input fills the cache.
        seen = []
        for elem in self._children[0]._iter(env):
            seen.append(elem)
            yield elem
        env.caches[id(self)] = seen


@register_impl
class TakeDataset(Dataset):
    def __init__(self, dataset: Dataset, count: Any) -> None:
        self._count, inputs = int_args([count], "Dataset.take")
        super().__init__(dataset._structure, inputs, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        it = self._children[0]._iter(env)
        count = resolve_ints(self._count, values)[0]
        return it if count < 0 else itertools.islice(it, count)


@register_impl
class SkipDataset(Dataset):
    def __init__(self, dataset: Dataset, count: Any) -> None:
        self._count, inputs = int_args([count], "Dataset.skip")
        super().__init__(dataset._structure, inputs, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        it = self._children[0]._iter(env)
        count = resolve_ints(self._count, values)[0]
        if count < 0:
            return iter(())
        return itertools.islice(it, count, None)


@register_impl
class PrefetchDataset(Dataset):
    AUTOTUNE_BUFFER = 2  # what buffer_size=-1 (AUTOTUNE) holds: enough to hide one step

    def __init__(self, dataset: Dataset, buffer_size: Any) -> None:
        # A tensor (e.g. a placeholder, as TF allows) is read when the iterator starts.
        self._buffer_size: int | None = None
        inputs: list[Tensor] = []
        if isinstance(buffer_size, Tensor):
            if not buffer_size.dtype.is_integer or buffer_size.shape.ndims not in (None, 0):
                raise TypeError(f"prefetch's buffer_size must be an integer scalar, got "
                                f"{buffer_size.name} ({buffer_size.dtype.name}, shape "
                                f"{buffer_size.shape}).")
            inputs = [buffer_size]
        else:
            self._buffer_size = _prefetch_size(buffer_size, errors_cls=None)
        super().__init__(dataset._structure, inputs=inputs, children=[dataset])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        size = self._buffer_size if self._buffer_size is not None else \
            _prefetch_size(values[0], errors_cls=errors.InvalidArgumentError)
        if size == 0:
            yield from self._children[0]._iter(env)
            return
        # The thread gets its own step (no deadline, never cancelled by a get_next
        # step ending) and stops when this generator is closed or dropped.
        items: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=size)
        stop = threading.Event()
        source = self._children[0]._iter(env.detached(StepState()))
        threading.Thread(target=_produce, args=(source, items, stop), daemon=True,
                         name="tw-prefetch").start()
        try:
            while True:
                kind, item = items.get()
                if kind == "element":
                    yield item
                elif kind == "end":
                    return
                else:
                    raise item
        finally:
            stop.set()


def _prefetch_size(value: Any, errors_cls: Any) -> int:
    """buffer_size as a count of elements; -1 (AUTOTUNE) is a small buffer."""
    n = int(value)
    if n < -1:
        msg = f"prefetch buffer_size must be >= -1 (tf.data.experimental.AUTOTUNE), got {n}."
        raise ValueError(msg) if errors_cls is None else errors_cls(None, None, msg)
    return PrefetchDataset.AUTOTUNE_BUFFER if n == -1 else n


def _produce(source: Iterator[Element], items: "queue.Queue[tuple[str, Any]]",
             stop: threading.Event) -> None:
    """PrefetchDataset's thread: fills `items` from `source` until it ends or fails."""
    def put(entry: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    try:
        for elem in source:
            if not put(("element", elem)):
                return
        put(("end", None))
    except BaseException as e:  # raised by the consumer's get_next, in order
        put(("error", e))
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()


@register_impl
class ZipDataset(Dataset):
    def __init__(self, datasets: Any) -> None:
        parts = flatten(datasets)
        if not parts or not all(isinstance(d, Dataset) for d in parts):
            raise TypeError(f"Dataset.zip needs a (nested) tuple or dict of Datasets, got "
                            f"{datasets!r}.")
        self._sizes = [len(d._specs()) for d in parts]
        structure = pack(datasets, [d._structure for d in parts])
        super().__init__(structure, children=parts)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        for elems in zip(*(c._iter(env) for c in self._children)):
            yield tuple(v for e in elems for v in e)


@register_impl
class ConcatenateDataset(Dataset):
    def __init__(self, first: Dataset, second: Dataset) -> None:
        a, b = first._specs(), second._specs()
        if [s.dtype for s in a] != [s.dtype for s in b]:
            raise TypeError(f"Cannot concatenate datasets of types {first.output_types} and "
                            f"{second.output_types}.")
        structure = pack(first._structure, [
            Spec(x.dtype, x.shape if x.shape == y.shape else _common(x.shape, y.shape))
            for x, y in zip(a, b)])
        super().__init__(structure, children=[first, second])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        return itertools.chain(self._children[0]._iter(env), self._children[1]._iter(env))


def _common(a: TensorShape, b: TensorShape) -> TensorShape:
    if a.ndims is None or b.ndims is None or a.ndims != b.ndims:
        return TensorShape(None)
    return TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])

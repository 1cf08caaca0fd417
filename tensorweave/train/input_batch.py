"""The TF1 batchers: `tf.train.batch`, `batch_join`, `shuffle_batch`,
`shuffle_batch_join` and their `maybe_*` forms (which keep only the examples whose
`keep_input` is True).

Each builds a queue (FIFOQueue, PaddingFIFOQueue with `dynamic_pad`, or
RandomShuffleQueue), a QueueRunner feeding it (one thread per enqueue op: `num_threads`
copies of one, or one per input list for the joins), a summary of how full it is
(TF's tags: `fraction_of_<capacity>_full`, `fraction_over_<min>_of_<span>_full`) and
the dequeue. Inputs are a list, a tuple or a dict of tensors and SparseTensors (one
example each, or a batch each with `enqueue_many`); the result has the same
structure. The last batch is dropped unless `allow_smaller_final_batch`.

Example:
    >>> image, label = tf.train.slice_input_producer([images, labels])
    >>> images_b, labels_b = tf.train.shuffle_batch(
    ...     [image, label], batch_size=32, capacity=1000, min_after_dequeue=500)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.sparse_tensor import SparseTensor, SparseTensorValue
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape
from tensorweave.data_flow.data_flow_ops import (
    FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue)
from tensorweave.ops.math import math_ops
from tensorweave.summary import summary
from tensorweave.train.input_sparse import (
    SparseInfo, restore_sparse, select_kept, static_keep, store_sparse, validate_keep_input)
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner


def _sorted_keys(d: dict) -> list[Any]:
    # TF orders a dict's components by str(key), so keys of mixed types sort too.
    return sorted(d, key=str)


def _as_list(tensors: Any) -> list[Any]:
    if isinstance(tensors, dict):
        return [tensors[k] for k in _sorted_keys(tensors)]
    if isinstance(tensors, (list, tuple)):
        return list(tensors)
    return [tensors]


def _as_list_list(tensors_list: Sequence[Any]) -> list[list[Any]]:
    if not tensors_list:
        raise ValueError("Expected at least one set of tensors (batch_join needs a list of "
                         "input lists, one per thread).")
    if isinstance(tensors_list[0], dict):
        keys = set(tensors_list[0])
        for i, d in enumerate(tensors_list[1:], 1):
            if not isinstance(d, dict) or set(d) != keys:
                got = sorted(map(str, d)) if isinstance(d, dict) else type(d).__name__
                raise ValueError("All dictionaries in tensors_list must have the same keys: "
                                 f"list 0 has {sorted(map(str, keys))}, list {i} has {got}.")
    return [_as_list(t) for t in tensors_list]


def _as_structure(original: Any, outputs: list[Any]) -> Any:
    if isinstance(original, dict):
        return dict(zip(_sorted_keys(original), outputs))
    if isinstance(original, (list, tuple)):
        # TF 1.x hands back a one-component list's batch unwrapped.
        return outputs[0] if len(outputs) == 1 else outputs
    return outputs[0]


def _convert(tensor_list: list[Any], what: str) -> list[Any]:
    out = []
    for t in tensor_list:
        if isinstance(t, SparseTensorValue):
            t = SparseTensor.from_value(t)
        out.append(t if isinstance(t, SparseTensor) else convert_to_tensor(t))
    if not out:
        raise ValueError(f"Expected at least one tensor in {what}().")
    return out


def _dtypes(stored: list[list[Tensor]]) -> list[Any]:
    types = [t.dtype.base_dtype for t in stored[0]]
    for other in stored[1:]:
        other_types = [t.dtype.base_dtype for t in other]
        if other_types != types:
            raise TypeError("Expected types to be consistent: "
                            f"{', '.join(x.name for x in types)} vs. "
                            f"{', '.join(x.name for x in other_types)}.")
    return types


def _element_shape(t: Any, enqueue_many: bool) -> TensorShape:
    if isinstance(t, SparseTensor):
        return TensorShape([1])  # one handle per example
    if t.shape.ndims is None:
        raise ValueError(f"Cannot infer Tensor's rank: {t} (give it a static rank, e.g. with "
                         "set_shape, or pass `shapes=`).")
    if enqueue_many:
        if t.shape.ndims == 0:
            raise ValueError(f"enqueue_many needs {t.name} to have a leading batch dimension, "
                             "but it is a scalar.")
        return TensorShape(t.shape.as_list()[1:])
    return t.shape


def _shapes(lists: list[list[Any]], shapes: Any, enqueue_many: bool) -> list[TensorShape]:
    if shapes is not None:
        return [as_shape(s) for s in shapes]
    merged = [_element_shape(t, enqueue_many) for t in lists[0]]
    for tl in lists[1:]:
        for i, t in enumerate(tl):
            shape = _element_shape(t, enqueue_many)
            # The queue takes the first list's shapes (as TF does), once the others
            # are known to be compatible with them.
            if not merged[i].is_compatible_with(shape):
                raise ValueError(f"Shapes of component {i} differ between the input lists: "
                                 f"{merged[i]} vs. {shape} ({t}).")
    return merged


def _prepare(lists: list[list[Any]], keep: Tensor, enqueue_many: bool
             ) -> tuple[list[list[Tensor]], bool, list[SparseInfo]]:
    """Per input list, what is enqueued (and whether with enqueue_many); sparse infos."""
    keep_all = static_keep(keep)
    infos: list[SparseInfo] | None = None
    stored_lists = []
    for i, tl in enumerate(lists):
        if keep_all:
            stored, got = store_sparse(tl, enqueue_many, infos)
        else:
            stored, got = select_kept(tl, keep, enqueue_many, infos)
        if infos is None:
            infos = got
        else:
            infos = [a.merge_with(b, f"input list 0 vs. input list {i}")
                     for a, b in zip(infos, got)]
        stored_lists.append(stored)
    assert infos is not None
    return stored_lists, enqueue_many or not keep_all, infos


def _batcher(kind: str, tensors_list: list[Any], original: Any, batch_size: Any,
             keep_input: Any, make_queue: Callable[[list[Any], list[TensorShape]], QueueBase],
             fullness: Callable[[QueueBase], tuple[str, Tensor]], threads: int | None,
             enqueue_many: bool, shapes: Any, allow_smaller_final_batch: bool,
             name: str | None) -> Any:
    lists = _as_list_list(tensors_list)
    flat = [t for tl in lists for t in tl if not isinstance(t, SparseTensor)]
    with name_scope(name, kind, flat) as scope:
        lists = [_convert(tl, "batch_join" if "join" in kind else "batch") for tl in lists]
        keep = validate_keep_input(keep_input, enqueue_many)
        stored, many, infos = _prepare(lists, keep, enqueue_many)
        types = _dtypes(stored)
        queue = make_queue(types, _shapes(lists, shapes, enqueue_many))
        enqueue = queue.enqueue_many if many else queue.enqueue
        if threads is None:  # the joins: one thread per input list
            ops = [enqueue(sl) for sl in stored]
        else:
            ops = [enqueue(stored[0])] * max(1, int(threads))
        add_queue_runner(QueueRunner(queue, ops))
        tag, value = fullness(queue)
        summary.scalar(tag, value)
        dequeue = queue.dequeue_up_to if allow_smaller_final_batch else queue.dequeue_many
        out = dequeue(batch_size, name=scope)
        out = restore_sparse(out if isinstance(out, list) else [out], infos)
        return _as_structure(original, out)


def _fifo_fullness(capacity: int) -> Callable[[QueueBase], tuple[str, Tensor]]:
    def f(queue: QueueBase) -> tuple[str, Tensor]:
        return (f"fraction_of_{capacity}_full",
                math_ops.cast(queue.size(), _dt.float32) * (1.0 / capacity))
    return f


def _shuffle_fullness(capacity: int, min_after_dequeue: int
                      ) -> Callable[[QueueBase], tuple[str, Tensor]]:
    def f(queue: QueueBase) -> tuple[str, Tensor]:
        span = capacity - min_after_dequeue
        over = math_ops.maximum(0, queue.size() - min_after_dequeue)
        return (f"fraction_over_{min_after_dequeue}_of_{span}_full",
                math_ops.cast(over, _dt.float32) * (1.0 / span))
    return f


def _fifo(capacity: int, dynamic_pad: bool, shared_name: str | None
          ) -> Callable[[list[Any], list[TensorShape]], QueueBase]:
    def make(types: list[Any], shapes: list[TensorShape]) -> QueueBase:
        if dynamic_pad:
            return PaddingFIFOQueue(capacity, types, shapes=shapes, shared_name=shared_name)
        return FIFOQueue(capacity, types, shapes=shapes, shared_name=shared_name)
    return make


def _shuffle(capacity: int, min_after_dequeue: int, seed: int | None,
             shared_name: str | None) -> Callable[[list[Any], list[TensorShape]], QueueBase]:
    if capacity <= min_after_dequeue:
        raise ValueError(f"capacity {capacity} must be bigger than min_after_dequeue "
                         f"{min_after_dequeue}.")

    def make(types: list[Any], shapes: list[TensorShape]) -> QueueBase:
        return RandomShuffleQueue(capacity, min_after_dequeue, types, shapes=shapes, seed=seed,
                                  shared_name=shared_name)
    return make


# ---- the public batchers ------------------------------------------------------------------
def batch(tensors: Any, batch_size: Any, num_threads: int = 1, capacity: int = 32,
          enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
          allow_smaller_final_batch: bool = False, shared_name: str | None = None,
          name: str | None = None) -> Any:
    """Batches `tensors` through a FIFOQueue filled by `num_threads` QueueRunner threads.

    Args:
        tensors: a list, tuple or dict of tensors and SparseTensors (one example
            each, or a batch each with `enqueue_many`).
        batch_size: examples per batch.
        capacity: the queue's capacity.
        shapes: per-component example shapes (default: the static shapes).
        dynamic_pad: pad components of varying shape to the batch's largest
            (PaddingFIFOQueue; strings pad with b"", numbers with 0).
        allow_smaller_final_batch: hand out the last, smaller batch instead of
            dropping it (the batch dimension is then None statically).
        shared_name: share the queue across sessions under this name.

    Returns:
        The batches, structured like `tensors`.

    Raises:
        ValueError: no tensors, a dense tensor of unknown rank and no `shapes`.

    Example:
        >>> xb, yb = tf.train.batch([x, y], batch_size=32, capacity=100)
    """
    return _batcher("batch", [tensors], tensors, batch_size, True,
                    _fifo(capacity, dynamic_pad, shared_name), _fifo_fullness(capacity),
                    num_threads, enqueue_many, shapes, allow_smaller_final_batch, name)


def maybe_batch(tensors: Any, keep_input: Any, batch_size: Any, num_threads: int = 1,
                capacity: int = 32, enqueue_many: bool = False, shapes: Any = None,
                dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                shared_name: str | None = None, name: str | None = None) -> Any:
    """Like `batch`, keeping only examples whose `keep_input` is True.

    Args:
        keep_input: a bool scalar (the example, or the whole batch with
            `enqueue_many`) or, with `enqueue_many`, a bool vector (per example).

    Raises:
        ValueError: `keep_input` of unknown rank, rank > 1, or a vector without
            `enqueue_many`.

    Example:
        >>> xb = tf.train.maybe_batch([x], keep_input=label > 0, batch_size=32)
    """
    return _batcher("batch", [tensors], tensors, batch_size, keep_input,
                    _fifo(capacity, dynamic_pad, shared_name), _fifo_fullness(capacity),
                    num_threads, enqueue_many, shapes, allow_smaller_final_batch, name)


def batch_join(tensors_list: Sequence[Any], batch_size: Any, capacity: int = 32,
               enqueue_many: bool = False, shapes: Any = None, dynamic_pad: bool = False,
               allow_smaller_final_batch: bool = False, shared_name: str | None = None,
               name: str | None = None) -> Any:
    """Batches examples from several input lists (one QueueRunner thread each) into one
    FIFOQueue: e.g. one reader per file, mixed into the same batches.

    Args:
        tensors_list: lists (or dicts with the same keys) of tensors of the same
            dtypes and compatible shapes.

    Raises:
        ValueError: dicts with different keys, or SparseTensors in different places.
        TypeError: the lists' dtypes differ.

    Example:
        >>> xb, yb = tf.train.batch_join([[x1, y1], [x2, y2]], batch_size=32)
    """
    return _batcher("batch_join", list(tensors_list), _first(tensors_list), batch_size, True,
                    _fifo(capacity, dynamic_pad, shared_name), _fifo_fullness(capacity),
                    None, enqueue_many, shapes, allow_smaller_final_batch, name)


def maybe_batch_join(tensors_list: Sequence[Any], keep_input: Any, batch_size: Any,
                     capacity: int = 32, enqueue_many: bool = False, shapes: Any = None,
                     dynamic_pad: bool = False, allow_smaller_final_batch: bool = False,
                     shared_name: str | None = None, name: str | None = None) -> Any:
    """`batch_join`, keeping only examples whose `keep_input` is True (see `maybe_batch`).

    Example:
        >>> xb = tf.train.maybe_batch_join([[x1], [x2]], keep_input=True, batch_size=8)
    """
    return _batcher("batch_join", list(tensors_list), _first(tensors_list), batch_size,
                    keep_input, _fifo(capacity, dynamic_pad, shared_name),
                    _fifo_fullness(capacity), None, enqueue_many, shapes,
                    allow_smaller_final_batch, name)


def shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                  num_threads: int = 1, seed: int | None = None, enqueue_many: bool = False,
                  shapes: Any = None, allow_smaller_final_batch: bool = False,
                  shared_name: str | None = None, name: str | None = None) -> Any:
    """Like `batch`, through a RandomShuffleQueue that keeps `min_after_dequeue` examples
    (until its input ends) to draw each batch at random from.

    Raises:
        ValueError: `capacity` is not bigger than `min_after_dequeue`.

    Example:
        >>> xb, yb = tf.train.shuffle_batch([x, y], 32, capacity=1000, min_after_dequeue=500)
    """
    return _batcher("shuffle_batch", [tensors], tensors, batch_size, True,
                    _shuffle(capacity, min_after_dequeue, seed, shared_name),
                    _shuffle_fullness(capacity, min_after_dequeue), num_threads,
                    enqueue_many, shapes, allow_smaller_final_batch, name)


def maybe_shuffle_batch(tensors: Any, batch_size: Any, capacity: int, min_after_dequeue: int,
                        keep_input: Any, num_threads: int = 1, seed: int | None = None,
                        enqueue_many: bool = False, shapes: Any = None,
                        allow_smaller_final_batch: bool = False,
                        shared_name: str | None = None, name: str | None = None) -> Any:
    """`shuffle_batch`, keeping only examples whose `keep_input` is True.

    Example:
        >>> xb = tf.train.maybe_shuffle_batch([x], 32, 1000, 500, keep_input=y > 0)
    """
    return _batcher("shuffle_batch", [tensors], tensors, batch_size, keep_input,
                    _shuffle(capacity, min_after_dequeue, seed, shared_name),
                    _shuffle_fullness(capacity, min_after_dequeue), num_threads,
                    enqueue_many, shapes, allow_smaller_final_batch, name)


def shuffle_batch_join(tensors_list: Sequence[Any], batch_size: Any, capacity: int,
                       min_after_dequeue: int, seed: int | None = None,
                       enqueue_many: bool = False, shapes: Any = None,
                       allow_smaller_final_batch: bool = False,
                       shared_name: str | None = None, name: str | None = None) -> Any:
    """`batch_join` through a RandomShuffleQueue (see `shuffle_batch`).

    Example:
        >>> xb = tf.train.shuffle_batch_join([[x1], [x2]], 32, 1000, 500)
    """
    return _batcher("shuffle_batch_join", list(tensors_list), _first(tensors_list),
                    batch_size, True, _shuffle(capacity, min_after_dequeue, seed, shared_name),
                    _shuffle_fullness(capacity, min_after_dequeue), None, enqueue_many,
                    shapes, allow_smaller_final_batch, name)


def maybe_shuffle_batch_join(tensors_list: Sequence[Any], batch_size: Any, capacity: int,
                             min_after_dequeue: int, keep_input: Any, seed: int | None = None,
                             enqueue_many: bool = False, shapes: Any = None,
                             allow_smaller_final_batch: bool = False,
                             shared_name: str | None = None, name: str | None = None) -> Any:
    """`shuffle_batch_join`, keeping only examples whose `keep_input` is True.

    Example:
        >>> xb = tf.train.maybe_shuffle_batch_join([[x1], [x2]], 32, 1000, 500, True)
    """
    return _batcher("shuffle_batch_join", list(tensors_list), _first(tensors_list),
                    batch_size, keep_input,
                    _shuffle(capacity, min_after_dequeue, seed, shared_name),
                    _shuffle_fullness(capacity, min_after_dequeue), None, enqueue_many,
                    shapes, allow_smaller_final_batch, name)


def _first(tensors_list: Sequence[Any]) -> Any:
    if not tensors_list:
        raise ValueError("Expected at least one input in batch_join(): tensors_list is "
                         "empty.")
    return tensors_list[0]


__all__ = ["batch", "maybe_batch", "batch_join", "maybe_batch_join", "shuffle_batch",
           "maybe_shuffle_batch", "shuffle_batch_join", "maybe_shuffle_batch_join"]

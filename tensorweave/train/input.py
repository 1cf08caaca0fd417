"""Queue-based input pipelines: producers (`input_producer`, `string_input_producer`,
`range_input_producer`, `slice_input_producer`), `limit_epochs`, and the batchers
(`batch`, `shuffle_batch`, the joins and the `maybe_*` forms, in `input_batch`), each
fed by QueueRunner threads.

`num_epochs` counts with a LOCAL variable, so run `tf.local_variables_initializer()`
before starting the queue runners (as in TF 1.x). When the input runs out the
producer's queue is closed, the batcher drains it, and the final dequeue raises
tf.errors.OutOfRangeError: the normal end of training.

Example:
    >>> x, y = tf.train.slice_input_producer([features, labels], num_epochs=2)
    >>> xb, yb = tf.train.batch([x, y], batch_size=32)
    >>> sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
    >>> coord = tf.train.Coordinator()
    >>> threads = tf.train.start_queue_runners(sess, coord)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, control_dependencies, name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.ops.array import gather, shape, size
from tensorweave.ops.array import range as _range
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.data_flow.count_ops import count_up_to
from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.ops.math import math_ops
from tensorweave.ops.random.random_ops import random_shuffle
from tensorweave.state.variables import Variable
from tensorweave.summary import summary
from tensorweave.train.input_batch import (  # noqa: F401  (tf.train's names live here too)
    batch, batch_join, maybe_batch, maybe_batch_join, maybe_shuffle_batch,
    maybe_shuffle_batch_join, shuffle_batch, shuffle_batch_join)
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner


def limit_epochs(tensor: Any, num_epochs: int | None = None, name: str | None = None) -> Tensor:
    """`tensor`, which raises OutOfRangeError after being evaluated `num_epochs` times.

    Uses a local variable "epochs": run `tf.local_variables_initializer()` first.

    Raises:
        ValueError: if num_epochs is not positive.

    Example:
        >>> t = tf.train.limit_epochs(tf.constant([1, 2]), num_epochs=3)
    """
    if num_epochs is None:
        return convert_to_tensor(tensor)
    if num_epochs <= 0:
        raise ValueError(f"num_epochs must be > 0 not {num_epochs} (use None for unlimited).")
    with name_scope(name, "limit_epochs", [tensor]) as scope:
        tensor = convert_to_tensor(tensor)
        counter = Variable(0, name="epochs", trainable=False, dtype=_dt.int64,
                           collections=[GraphKeys.LOCAL_VARIABLES])
        counted = count_up_to(counter, num_epochs)
        with control_dependencies([counted]):
            return identity(tensor, name=scope)


def input_producer(input_tensor: Any, element_shape: Any = None, num_epochs: int | None = None,
                   shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                   shared_name: str | None = None, summary_name: str | None = None,
                   name: str | None = None, cancel_op: Any = None) -> FIFOQueue:
    """A queue fed with the rows of `input_tensor`, `num_epochs` times (forever if None).

    Args:
        input_tensor: a tensor whose rows become the queue's elements.
        element_shape: the rows' shape, if not known statically.
        shuffle: shuffle the rows within each epoch.
        summary_name: if given, a scalar summary of how full the queue is.
        name: the queue's name (default: "fifo_queue" in an "input_producer" scope).

    Returns:
        The FIFOQueue (a QueueRunner feeding it is in QUEUE_RUNNERS).

    Raises:
        ValueError: the rows' shape is neither fully defined nor given.

    Example:
        >>> q = tf.train.input_producer(tf.constant([1, 2, 3]), num_epochs=1)
        >>> x = q.dequeue()
    """
    with name_scope(name, "input_producer", [input_tensor]):
        input_tensor = convert_to_tensor(input_tensor, name="input_tensor")
        rows = input_tensor.shape.with_rank_at_least(1)[1:]
        element_shape = rows.merge_with(as_shape(element_shape)) \
            if element_shape is not None else rows
        if not element_shape.is_fully_defined():
            raise ValueError("Either `input_tensor` must have a fully defined shape or "
                             f"`element_shape` must be specified: the rows of "
                             f"{input_tensor.name} have shape {element_shape}.")
        if shuffle:
            input_tensor = random_shuffle(input_tensor, seed=seed)
        input_tensor = limit_epochs(input_tensor, num_epochs)
        q = FIFOQueue(capacity, [input_tensor.dtype.base_dtype], shapes=[element_shape],
                      shared_name=shared_name, name=name or "fifo_queue")
        enq = q.enqueue_many([input_tensor])
        add_queue_runner(QueueRunner(q, [enq], cancel_op=cancel_op))
        if summary_name is not None:
            summary.scalar(summary_name,
                           math_ops.cast(q.size(), _dt.float32) * (1.0 / capacity))
        return q


def string_input_producer(string_tensor: Any, num_epochs: int | None = None,
                          shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                          shared_name: str | None = None, name: str | None = None,
                          cancel_op: Any = None) -> FIFOQueue:
    """A queue of strings (e.g. file names) for `num_epochs` epochs.

    An empty list is refused here; a tensor that turns out empty at run time
    fails the producer's Assert, which closes the queue (readers then see
    OutOfRangeError).

    Raises:
        ValueError: if `string_tensor` is an empty Python list.

    Example:
        >>> filenames = tf.train.string_input_producer(["a.csv", "b.csv"], num_epochs=1)
    """
    not_null_err = "string_input_producer requires a non-null input tensor"
    if isinstance(string_tensor, (list, tuple, np.ndarray)) and not len(string_tensor):
        raise ValueError(f"{not_null_err}: got an empty list of strings.")
    with name_scope(name, "input_producer", [string_tensor]) as scope:
        string_tensor = convert_to_tensor(string_tensor, dtype=_dt.string)
        with control_dependencies([Assert(math_ops.greater(size(string_tensor), 0),
                                          [not_null_err])]):
            string_tensor = identity(string_tensor)
        return input_producer(string_tensor, [], num_epochs, shuffle, seed, capacity,
                              shared_name, summary_name=f"fraction_of_{capacity}_full",
                              name=scope, cancel_op=cancel_op)


def range_input_producer(limit: Any, num_epochs: int | None = None, shuffle: bool = True,
                         seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None) -> FIFOQueue:
    """A queue of the integers 0..limit-1 for `num_epochs` epochs.

    Example:
        >>> i = tf.train.range_input_producer(10, shuffle=False).dequeue()
    """
    with name_scope(name, "input_producer", [limit]) as scope:
        r = _range(convert_to_tensor(limit, dtype=_dt.int32))
        return input_producer(r, [], num_epochs, shuffle, seed, capacity, shared_name,
                              summary_name=f"fraction_of_{capacity}_full", name=scope)


def slice_input_producer(tensor_list: Sequence[Any], num_epochs: int | None = None,
                         shuffle: bool = True, seed: int | None = None, capacity: int = 32,
                         shared_name: str | None = None, name: str | None = None
                         ) -> list[Tensor]:
    """One row of each tensor in `tensor_list` per dequeue (rows stay aligned).

    Returns:
        A list of tensors, one per input, each a single row.

    Raises:
        ValueError: if tensor_list is empty.

    Example:
        >>> x, y = tf.train.slice_input_producer([images, labels], shuffle=True)
    """
    if not tensor_list:
        raise ValueError("Expected at least one tensor in slice_input_producer(): "
                         "tensor_list is empty.")
    with name_scope(name, "input_producer", list(tensor_list)):
        tensors = [convert_to_tensor(t) for t in tensor_list]
        range_size = shape(tensors[0])[0]
        q = range_input_producer(range_size, num_epochs, shuffle, seed, capacity, shared_name)
        index = q.dequeue()
        return [gather(t, index) for t in tensors]

__all__ = ["limit_epochs", "input_producer", "string_input_producer", "range_input_producer",
           "slice_input_producer", "batch", "maybe_batch", "batch_join", "maybe_batch_join",
           "shuffle_batch", "maybe_shuffle_batch", "shuffle_batch_join",
           "maybe_shuffle_batch_join"]

"""`tf.estimator.inputs.numpy_input_fn`: an input_fn over in-memory numpy arrays.

TF 1.x feeds the arrays through a queue and queue runners; here they go through
`tf.data` (from_tensor_slices, shuffle, repeat, batch) and a one-shot iterator,
which gives the same batches and the same end of input (OutOfRangeError after
`num_epochs`).

Example:
    >>> train_input_fn = tf.estimator.inputs.numpy_input_fn(
    ...     x={"x": train_data}, y=train_labels, batch_size=100, num_epochs=None,
    ...     shuffle=True)
    >>> classifier.train(input_fn=train_input_fn, steps=20000)
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from tensorweave.data.dataset import Dataset

__all__ = ["numpy_input_fn"]


def _as_arrays(value: Any, what: str) -> Any:
    if isinstance(value, Mapping):
        if not value:
            raise ValueError(f"{what} cannot be an empty dict.")
        return {str(k): np.asarray(v) for k, v in value.items()}
    return np.asarray(value)


def _length(value: Any) -> int:
    arrays = value.values() if isinstance(value, dict) else [value]
    lengths = {len(a) for a in arrays}
    if len(lengths) != 1:
        raise ValueError(f"Length of tensors in x and y is mismatched: every array must "
                         f"have the same first dimension, got lengths {sorted(lengths)}.")
    return lengths.pop()


def numpy_input_fn(x: Any, y: Any = None, batch_size: int = 128, num_epochs: int | None = 1,
                   shuffle: Any = None, queue_capacity: int = 1000,
                   num_threads: int = 1) -> Callable[[], Any]:
    """An input_fn giving batches of `x` (features) and `y` (labels).

    Args:
        x: a numpy array (one feature) or a dict of name -> array.
        y: labels: an array, a dict of arrays, or None (features only).
        batch_size: examples per batch (the last one of an epoch may be smaller).
        num_epochs: passes over the data (None: forever).
        shuffle: whether to shuffle (required, as in TF 1.x).
        queue_capacity: the shuffle buffer (TF's queue capacity).
        num_threads: accepted for TF 1.x compatibility; batches come from one
            iterator whatever the value.

    Returns:
        A function of no arguments returning (features, labels) tensors, or
        features alone when `y` is None.

    Raises:
        ValueError: shuffle not given as a bool, arrays of different lengths,
            x and y sharing a key, or a non-positive batch size.

    Example:
        >>> fn = tf.estimator.inputs.numpy_input_fn({"x": xs}, ys, shuffle=False)
    """
    if not isinstance(shuffle, (bool, np.bool_)):
        raise ValueError(f"shuffle must be provided and explicitly set as boolean (it is "
                         f"recommended to set it as True for training); got {shuffle!r}.")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}.")
    features = _as_arrays(x, "x")
    labels = None if y is None else _as_arrays(y, "y")
    if isinstance(features, dict) and isinstance(labels, dict):
        shared = sorted(set(features) & set(labels))
        if shared:
            raise ValueError(f"{shared} duplicate keys are found in both x and y; rename "
                             "the labels or the features.")
    _length(features)
    if labels is not None and _length(labels) != _length(features):
        raise ValueError(f"Length of tensors in x and y is mismatched: x has "
                         f"{_length(features)} examples, y {_length(labels)}.")

    def input_fn() -> Any:
        elements = features if labels is None else (features, labels)
        ds = Dataset.from_tensor_slices(elements)
        if shuffle:
            ds = ds.shuffle(queue_capacity)
        ds = ds.repeat(num_epochs).batch(batch_size)
        return ds.make_one_shot_iterator().get_next()

    return input_fn

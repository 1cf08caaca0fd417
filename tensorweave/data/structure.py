"""`tf.data.get_output_types/shapes/classes` (TF 1.15's `tf.compat.v1.data` functions).

They read the element structure of a Dataset or an Iterator, as the
`output_types`/`output_shapes`/`output_classes` properties TF 1.x had on both:
nested like the elements, a `tf.DType`, `tf.TensorShape` or class per component.

Example:
    >>> ds = tf.data.Dataset.from_tensor_slices(({"x": [[1.0, 2.0]]}, [3]))
    >>> tf.data.get_output_types(ds)
    ({'x': tf.float32}, tf.int32)
"""
from __future__ import annotations

from typing import Any

from tensorweave.data.dataset import HasStructure


def _structured(dataset_or_iterator: Any, what: str) -> HasStructure:
    if not isinstance(dataset_or_iterator, HasStructure):
        raise TypeError(f"tf.data.{what} needs a tf.data.Dataset or Iterator, got "
                        f"{type(dataset_or_iterator).__name__} {dataset_or_iterator!r}.")
    return dataset_or_iterator


def get_output_types(dataset_or_iterator: Any) -> Any:
    """The `tf.DType` of each component of the elements (nested like them).

    Raises:
        TypeError: `dataset_or_iterator` is neither a Dataset nor an Iterator.

    Example:
        >>> tf.data.get_output_types(tf.data.Dataset.range(3))
        tf.int64
    """
    return _structured(dataset_or_iterator, "get_output_types").output_types


def get_output_shapes(dataset_or_iterator: Any) -> Any:
    """The static `tf.TensorShape` of each component (a SparseTensor's dense shape).

    Raises:
        TypeError: `dataset_or_iterator` is neither a Dataset nor an Iterator.

    Example:
        >>> tf.data.get_output_shapes(tf.data.Dataset.range(3).batch(2))
        TensorShape([Dimension(None)])
    """
    return _structured(dataset_or_iterator, "get_output_shapes").output_shapes


def get_output_classes(dataset_or_iterator: Any) -> Any:
    """The class of each component: `tf.Tensor` or `tf.SparseTensor`.

    Raises:
        TypeError: `dataset_or_iterator` is neither a Dataset nor an Iterator.

    Example:
        >>> tf.data.get_output_classes(tf.data.Dataset.range(3))
        <class 'tensorweave.framework.tensor.Tensor'>
    """
    return _structured(dataset_or_iterator, "get_output_classes").output_classes


__all__ = ["get_output_classes", "get_output_shapes", "get_output_types"]

"""`tf.data.experimental` (and TF 1.10-1.12's `tf.contrib.data`): fused and parallel
transformations, used as `dataset.apply(...)`.

Each returns a function of a Dataset. The fused ones give the same elements in the
same order as the transformations they fuse (map then batch; shuffle then repeat),
and `parallel_interleave` gives `interleave`'s deterministic order (reads are not
parallel here: `sloppy` and the buffer sizes are accepted and do not change it).

Example:
    >>> ds = files.apply(tf.data.experimental.parallel_interleave(
    ...     tf.data.TFRecordDataset, cycle_length=4))
    >>> ds = ds.apply(tf.data.experimental.shuffle_and_repeat(10000))
    >>> ds = ds.apply(tf.data.experimental.map_and_batch(parse_fn, 256))
    >>> ds = ds.prefetch(tf.data.experimental.AUTOTUNE)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.data.csv_dataset import CsvDataset as CsvDataset
from tensorweave.data.csv_dataset import make_csv_dataset as make_csv_dataset
from tensorweave.framework import dtypes as _dt
from tensorweave.data.dataset import Dataset
from tensorweave.data.readers import TFRecordDataset
from tensorweave.readers.readers import ReaderBase
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.parsing.parsing_ops import parse_example

_INT64_MAX = int(np.iinfo(np.int64).max)
_INT64_MIN = int(np.iinfo(np.int64).min)

# `Dataset.prefetch(AUTOTUNE)` buffers a few elements (PrefetchDataset.AUTOTUNE_BUFFER).
AUTOTUNE = -1

Transformation = Callable[[Dataset], Dataset]


def map_and_batch(map_func: Callable[..., Any], batch_size: int,
                  num_parallel_batches: int | None = None, drop_remainder: bool = False,
                  num_parallel_calls: int | None = None) -> Transformation:
    """`dataset.map(map_func).batch(batch_size, drop_remainder)` as one transformation.

    Example:
        >>> ds = ds.apply(tf.data.experimental.map_and_batch(parse_fn, 256))
    """
    if num_parallel_batches is not None and num_parallel_calls is not None:
        raise ValueError("map_and_batch: give num_parallel_batches or num_parallel_calls, "
                         "not both.")
    return lambda ds: ds.map(map_func).batch(batch_size, drop_remainder)


def shuffle_and_repeat(buffer_size: int, count: int | None = None,
                       seed: int | None = None) -> Transformation:
    """`dataset.shuffle(buffer_size, seed).repeat(count)`: each pass reshuffled.

    Example:
        >>> ds = ds.apply(tf.data.experimental.shuffle_and_repeat(10000, seed=1))
    """
    return lambda ds: ds.shuffle(buffer_size, seed).repeat(count)


def parallel_interleave(map_func: Callable[..., Any], cycle_length: int,
                        block_length: int = 1, sloppy: bool | None = False,
                        buffer_output_elements: int | None = None,
                        prefetch_input_elements: int | None = None) -> Transformation:
    """`dataset.interleave(map_func, cycle_length, block_length)` (same order).

    Example:
        >>> files.apply(tf.data.experimental.parallel_interleave(
        ...     tf.data.TFRecordDataset, cycle_length=8))
    """
    return lambda ds: ds.interleave(map_func, cycle_length, block_length)


# TF1's "legacy function" map traces map_func as a Defun; ours traces every map function
# the same way, so the two give the same dataset.
map_and_batch_with_legacy_function = map_and_batch


def unbatch() -> Transformation:
    """Splits each element along its first dimension into that many elements.

    Each component of an element must have the same first dimension (as in TF).

    Example:
        >>> ds = tf.data.Dataset.from_tensors([[1, 2], [3, 4]])
        >>> ds.apply(tf.data.experimental.unbatch())   # [1, 2], [3, 4]
    """
    def slices(*components: Any) -> Dataset:
        return Dataset.from_tensor_slices(components[0] if len(components) == 1
                                          else components)
    return lambda ds: ds.flat_map(slices)


def enumerate_dataset(start: int = 0) -> Transformation:
    """Pairs each element with its int64 index, counting from `start`.

    Example:
        >>> tf.data.Dataset.from_tensor_slices(["a", "b"]).apply(
        ...     tf.data.experimental.enumerate_dataset(10))   # (10, b"a"), (11, b"b")
    """
    return lambda ds: Dataset.zip((Dataset.range(int(start), _INT64_MAX), ds))


def Counter(start: int = 0, step: int = 1, dtype: Any = _dt.int64) -> Dataset:  # noqa: N802
    """An endless Dataset of `start, start + step, start + 2*step, ...` (scalars of `dtype`).

    Raises:
        ValueError: `step` is 0 (TF's Counter would repeat `start` forever; ask for
            `tf.data.Dataset.from_tensors(start).repeat()` instead).

    Example:
        >>> tf.data.experimental.Counter(start=5, step=-1)   # 5, 4, 3, ...
    """
    if int(step) == 0:
        raise ValueError("tf.data.experimental.Counter(step=0): use "
                         "tf.data.Dataset.from_tensors(start).repeat() for a constant.")
    end = _INT64_MAX if int(step) > 0 else _INT64_MIN
    ds = Dataset.range(int(start), end, int(step))
    dtype = _dt.as_dtype(dtype)
    return ds if dtype == _dt.int64 else ds.map(lambda x: cast(x, dtype))


def parse_example_dataset(features: dict[str, Any],
                          num_parallel_calls: int = 1) -> Transformation:
    """Parses each element, a batch (vector) of serialized `tf.train.Example`s, with
    `tf.parse_example(serialized, features)`.

    Example:
        >>> ds = tf.data.TFRecordDataset(files).batch(32).apply(
        ...     tf.data.experimental.parse_example_dataset(
        ...         {"x": tf.FixedLenFeature([2], tf.float32)}))
    """
    if features is None:
        raise ValueError("parse_example_dataset needs a `features` dict (feature key -> "
                         "FixedLenFeature/VarLenFeature/SparseFeature).")
    return lambda ds: ds.map(lambda serialized: parse_example(serialized, features))


def _shuffle_and_repeat(ds: Dataset, num_epochs: int | None, shuffle: bool,
                        buffer_size: int, seed: int | None) -> Dataset:
    if shuffle:
        ds = ds.shuffle(buffer_size, seed)
    return ds.repeat(num_epochs) if num_epochs != 1 else ds


def make_batched_features_dataset(
        file_pattern: Any, batch_size: int, features: dict[str, Any],
        reader: Any = TFRecordDataset, label_key: str | None = None,
        reader_args: list[Any] | None = None, num_epochs: int | None = None,
        shuffle: bool = True, shuffle_buffer_size: int = 10000, shuffle_seed: int | None = None,
        prefetch_buffer_size: int | None = None, reader_num_threads: int | None = None,
        parser_num_threads: int | None = None, sloppy_ordering: bool = False,
        drop_final_batch: bool = False) -> Dataset:
    """A Dataset of dicts of feature tensors (and labels, with `label_key`) read from the
    files matching `file_pattern`, batched and parsed with `tf.parse_example(features)`.

    As in TF: the files are listed (shuffled when `shuffle`), read with `reader(filename,
    *reader_args)` (`reader_num_threads` files at a time, interleaved), the records
    shuffled and repeated `num_epochs` times (None: forever), batched (the last partial
    batch dropped when `drop_final_batch` or when repeating forever, so the batch size is
    static), parsed, and prefetched. A reader giving (key, value) string pairs is read
    for its values.

    Raises:
        TypeError: `reader` is a `tf.ReaderBase` class (a queue-based reader).
        ValueError: `label_key` is not a key of `features`.

    Example:
        >>> ds = tf.data.experimental.make_batched_features_dataset(
        ...     files, 128, {"age": tf.FixedLenFeature([], tf.int64)}, num_epochs=1,
        ...     shuffle=False)
    """
    if isinstance(reader, type) and issubclass(reader, ReaderBase):
        raise TypeError(f"make_batched_features_dataset: `reader` must return a Dataset; "
                        f"{reader.__name__} is a tf.ReaderBase. Pass a Dataset class such as "
                        "tf.data.TFRecordDataset instead of tf.TFRecordReader.")
    if label_key is not None and label_key not in features:
        raise ValueError(f"The `label_key` provided ({label_key!r}) must be one of the "
                         f"`features` keys: {sorted(features)}.")
    args = list(reader_args or [])
    ds = Dataset.list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    ds = ds.interleave(lambda filename: reader(filename, *args),
                       cycle_length=int(reader_num_threads or 1), block_length=1)
    if ds.output_types == (_dt.string, _dt.string):  # (key, value) records: the values
        ds = ds.map(lambda _key, value: value)
    ds = _shuffle_and_repeat(ds, num_epochs, shuffle, shuffle_buffer_size, shuffle_seed)
    ds = ds.batch(batch_size, drop_remainder=bool(drop_final_batch or num_epochs is None))
    ds = ds.map(lambda serialized: parse_example(serialized, features))
    if label_key is not None:
        key = label_key
        ds = ds.map(lambda parsed: ({k: v for k, v in parsed.items() if k != key},
                                    parsed[key]))
    return ds.prefetch(AUTOTUNE if prefetch_buffer_size is None else prefetch_buffer_size)


__all__ = ["AUTOTUNE", "Counter", "CsvDataset", "enumerate_dataset",
           "make_batched_features_dataset", "make_csv_dataset", "map_and_batch",
           "map_and_batch_with_legacy_function", "parallel_interleave",
           "parse_example_dataset", "shuffle_and_repeat", "unbatch"]

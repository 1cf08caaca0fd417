"""File-reading Dataset sources: `tf.data.TFRecordDataset`.

Example:
    >>> ds = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], compression_type="GZIP")
    >>> ds = ds.batch(32).map(lambda rec: tf.parse_example(rec, spec))
"""
from __future__ import annotations

from itertools import chain
from typing import Any, Iterator

import os

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import file_access as _files
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.tfrecord import compression_name, read_records
from tensorweave.ops.dataset.dataset import Dataset, Element, Env
from tensorweave.ops.dataset.structure import Spec


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


class TFRecordDataset(Dataset):
    """The records of one or more TFRecord files, each a scalar string element.

    Args:
        filenames: a file name (str or path), a list of them, a string tensor (scalar
            or vector), or a Dataset of scalar file names.
        compression_type: None or "" (none), "GZIP" or "ZLIB"; a string tensor too.
        buffer_size: the read buffer in bytes (a performance hint; reads are buffered
            by Python's file objects either way).
        num_parallel_reads: read this many files at once, interleaving their records
            one at a time in file order (TF's deterministic interleave); default one
            file after another.

    Example:
        >>> rec = tf.data.TFRecordDataset(path).make_one_shot_iterator().get_next()
    """

    def __init__(self, filenames: Any, compression_type: Any = None, buffer_size: Any = None,
                 num_parallel_reads: Any = None) -> None:
        inputs, children = _filename_source(filenames)
        self._compression: str | None = None
        if isinstance(compression_type, Tensor):
            inputs.append(compression_type)
        else:
            self._compression = compression_name(compression_type)
        parallel = 1 if num_parallel_reads is None else int(num_parallel_reads)
        if parallel < 1:
            raise ValueError(f"TFRecordDataset: num_parallel_reads must be >= 1, got "
                             f"{num_parallel_reads!r}.")
        self._parallel = parallel
        super().__init__(Spec(_dt.string, TensorShape([])), inputs, children)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        rest = list(values)  # env's list is reused by a repeat: never consume it
        if self._children:  # a Dataset of file names, read as they come
            files: Iterator[str] = (_text(np.asarray(e[0], dtype=object).reshape(())[()])
                                    for e in self._children[0]._iter(env))
        else:
            files = iter([_text(f) for f in np.asarray(rest.pop(0), dtype=object).reshape(-1)])
        compression = self._compression if self._compression is not None else \
            compression_name(_text(np.asarray(rest[0], dtype=object).reshape(())[()]))
        readers = (read_records(_allowed(env, f), compression) for f in files)
        records = chain.from_iterable(readers) if self._parallel == 1 else \
            _interleave(readers, self._parallel)
        for rec in records:
            yield (np.array(rec, dtype=object),)


def _allowed(env: Env, path: str) -> str:
    """`path` if the task's file policy lets its ops read it (framework/file_access.py)."""
    ctx = env.ctx
    policy = ctx.library.device.file_policy if ctx is not None else None
    what = f"TFRecordDataset in {ctx.type} {ctx.name} on {ctx.device}" if ctx is not None \
        else "TFRecordDataset"
    return _files.check_path(policy, path, "read", what)


def _filename_source(filenames: Any) -> tuple[list[Tensor], list[Dataset]]:
    """(inputs, children) for file names given as a Dataset, a tensor, or Python values."""
    if isinstance(filenames, Dataset):
        if filenames.output_types != _dt.string or filenames.output_shapes.ndims not in (0, None):
            raise TypeError(f"TFRecordDataset: a Dataset of file names must have scalar "
                            f"tf.string elements, got {filenames.output_types} with shape "
                            f"{filenames.output_shapes}.")
        return [], [filenames]
    if not isinstance(filenames, Tensor):
        if isinstance(filenames, (list, tuple)):
            filenames = [os.fspath(f) if isinstance(f, os.PathLike) else f for f in filenames]
        elif isinstance(filenames, os.PathLike):
            filenames = os.fspath(filenames)
        try:
            filenames = convert_to_tensor(filenames, dtype=_dt.string, name="filenames")
        except (TypeError, ValueError) as e:
            raise TypeError(f"TFRecordDataset: filenames must be strings (a name, a list, "
                            f"a string tensor or a Dataset of names), got {filenames!r}: {e}"
                            ) from e
    if filenames.dtype.base_dtype != _dt.string or filenames.shape.ndims not in (None, 0, 1):
        raise TypeError(f"TFRecordDataset: filenames must be a string scalar or vector, "
                        f"got {filenames.name} ({filenames.dtype.name}, shape "
                        f"{filenames.shape}).")
    return [filenames], []


def _interleave(readers: Iterator[Iterator[bytes]], cycle: int) -> Iterator[bytes]:
    """TF's interleave with block length 1: round-robin over `cycle` slots; an exhausted
    slot is refilled with the next file when the round comes back to it."""
    pending = readers
    slots: list[Iterator[bytes] | None] = [None] * cycle
    idx, n_open, inputs_left = 0, 0, True
    while inputs_left or n_open:
        reader = slots[idx]
        if reader is not None:
            try:
                yield next(reader)
            except StopIteration:
                slots[idx], n_open = None, n_open - 1
            idx = (idx + 1) % cycle
        elif inputs_left:
            slots[idx] = next(pending, None)
            inputs_left = slots[idx] is not None
            n_open += inputs_left
        else:
            idx = (idx + 1) % cycle

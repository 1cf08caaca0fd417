"""File-reading Dataset sources: `tf.data.TFRecordDataset`, and `_FileDataset`, the file
handling it shares with TextLineDataset and FixedLengthRecordDataset (text_readers.py).

Example:
    >>> ds = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], compression_type="GZIP")
    >>> ds = ds.batch(32).map(lambda rec: tf.parse_example(rec, spec))
"""
from __future__ import annotations

from itertools import chain
from typing import Any, Iterator

import os

import numpy as np

from tensorweave.framework.text import text_of
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.tfrecord import compression_name, read_records
from tensorweave.data.dataset import Dataset, Element, Env
from tensorweave.data.nested import interleave_iters
from tensorweave.data.nest import Spec


class _Fed:
    """A reader argument given as a tensor: its value is input `index` of the dataset."""

    def __init__(self, index: int) -> None:
        self.index = index


def _runtime_error(message: str) -> Exception:
    return errors.InvalidArgumentError(None, None, message)


class _FileDataset(Dataset):
    """What the file sources share: file names (Python values, a tensor or a Dataset),
    reader arguments that may be tensors fed at iterator initialization, and reading
    several files at once in TF's interleave order. Subclasses read one file (`_read`)
    and check their arguments (`_check`)."""

    def __init__(self, filenames: Any, compression_type: Any, num_parallel_reads: Any,
                 **args: Any) -> None:
        kind = type(self).__name__
        inputs, children = _filename_source(filenames, kind)
        # name -> a Python value, or _Fed: where its tensor's value is in `_generate`'s list
        self._args: dict[str, Any] = {}
        for key, value in dict(args, compression_type=compression_type).items():
            if isinstance(value, Tensor):
                self._args[key] = _Fed(len(inputs))
                inputs.append(value)
            else:
                self._args[key] = compression_name(value) if key == "compression_type" \
                    else value
        parallel = 1 if num_parallel_reads is None else int(num_parallel_reads)
        if parallel < 1:
            raise ValueError(f"{kind}: num_parallel_reads must be >= 1, got "
                             f"{num_parallel_reads!r}.")
        self._parallel = parallel
        self._check({k: v for k, v in self._args.items() if not isinstance(v, _Fed)},
                    ValueError)  # Python values are checked now; fed ones when fed
        super().__init__(Spec(_dt.string, TensorShape([])), inputs, children)

    def _check(self, args: dict[str, Any], error: Any) -> None:
        """Raises `error(message)` for a bad reader argument (a subclass's ranges)."""

    def _read(self, path: str, args: dict[str, Any]) -> Iterator[bytes]:
        raise NotImplementedError(type(self).__name__)

    def _resolve(self, values: list[Any]) -> dict[str, Any]:
        """The reader arguments with fed tensors' values in place, checked."""
        args = {}
        for key, value in self._args.items():
            if isinstance(value, _Fed):
                fed = np.asarray(values[value.index], dtype=object).reshape(())[()]
                value = compression_name(text_of(fed)) if key == "compression_type" \
                    else int(fed)
            args[key] = value
        if any(isinstance(v, _Fed) for v in self._args.values()):
            self._check(args, _runtime_error)
        return args

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        if self._children:  # a Dataset of file names, read as they come
            files: Iterator[str] = (text_of(np.asarray(e[0], dtype=object).reshape(())[()])
                                    for e in self._children[0]._iter(env))
        else:  # env's list is reused by a repeat: read it, never consume it
            files = iter([text_of(f) for f in np.asarray(values[0], dtype=object).reshape(-1)])
        args = self._resolve(values)
        kind = type(self).__name__
        readers = (self._read(_allowed(env, f, kind), args) for f in files)
        records = chain.from_iterable(readers) if self._parallel == 1 else \
            interleave_iters(readers, self._parallel)
        for rec in records:
            yield (np.array(rec, dtype=object),)


class TFRecordDataset(_FileDataset):
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
        super().__init__(filenames, compression_type, num_parallel_reads)

    def _read(self, path: str, args: dict[str, Any]) -> Iterator[bytes]:
        return read_records(path, args["compression_type"])


def _allowed(env: Env, path: str, kind: str) -> str:
    """`path` if the task's file policy lets its ops read it (framework/file_access.py)."""
    ctx = env.ctx
    policy = ctx.library.device.file_policy if ctx is not None else None
    what = f"{kind} in {ctx.type} {ctx.name} on {ctx.device}" if ctx is not None else kind
    return _files.check_path(policy, path, "read", what)


def _filename_source(filenames: Any, kind: str) -> tuple[list[Tensor], list[Dataset]]:
    """(inputs, children) for file names given as a Dataset, a tensor, or Python values."""
    if isinstance(filenames, Dataset):
        if filenames.output_types != _dt.string or filenames.output_shapes.ndims not in (0, None):
            raise TypeError(f"{kind}: a Dataset of file names must have scalar "
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
            raise TypeError(f"{kind}: filenames must be strings (a name, a list, "
                            f"a string tensor or a Dataset of names), got {filenames!r}: {e}"
                            ) from e
    if filenames.dtype.base_dtype != _dt.string or filenames.shape.ndims not in (None, 0, 1):
        raise TypeError(f"{kind}: filenames must be a string scalar or vector, "
                        f"got {filenames.name} ({filenames.dtype.name}, shape "
                        f"{filenames.shape}).")
    return [filenames], []

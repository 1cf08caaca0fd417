"""`tf.data.experimental.CsvDataset` and `make_csv_dataset`: CSV files as Datasets.

Each file is read line by line (`TextLineDataset`) and each line parsed with
`tf.decode_csv`, so a quoted field cannot span lines here (TF's CsvDataset
allows that). `make_csv_dataset` finds column names in the header and column
types in the first rows, as TF does, then batches dicts of columns.

Example:
    >>> ds = tf.data.experimental.make_csv_dataset("/data/titanic-*.csv", batch_size=32,
    ...                                            label_name="survived", num_epochs=1)
    >>> features, labels = ds.make_one_shot_iterator().get_next()
"""
from __future__ import annotations

import collections
import csv
import gzip
import io
from typing import Any, Iterable, Iterator

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant, convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array import reshape
from tensorweave.data.dataset import Dataset
from tensorweave.data.text_readers import TextLineDataset
from tensorweave.ops.parsing.csv_ops import decode_csv
from tensorweave.platform import gfile

def CsvDataset(filenames: Any, record_defaults: Any, compression_type: Any = None,  # noqa: N802
               buffer_size: Any = None, header: bool = False, field_delim: str = ",",
               use_quote_delim: bool = True, na_value: str = "",
               select_cols: Any = None) -> Dataset:
    """The records of CSV files: each element a tuple of one scalar per (selected) column.

    `record_defaults` gives each column's default and dtype (`[0.0]`, `[""]`, a dtype,
    or an empty value for a required column); `header` skips each file's first line.

    Example:
        >>> ds = tf.data.experimental.CsvDataset("a.csv", [[0.0], [""]], header=True)
    """
    defaults = [constant([], dtype=d) if isinstance(d, _dt.DType) else d
                for d in record_defaults]
    if header:  # each file read on its own, without its first line
        files = Dataset.from_tensor_slices(reshape(convert_to_tensor(filenames, _dt.string),
                                                   [-1]))
        lines = files.flat_map(lambda f: TextLineDataset(
            f, compression_type=compression_type, buffer_size=buffer_size).skip(1))
    else:
        lines = TextLineDataset(filenames, compression_type=compression_type,
                                buffer_size=buffer_size)

    def parse(line: Tensor) -> tuple[Tensor, ...]:
        return tuple(decode_csv(line, defaults, field_delim=field_delim,
                                use_quote_delim=use_quote_delim, na_value=na_value,
                                select_cols=select_cols))
    return lines.map(parse)


def _open(name: str, compression_type: str | None) -> Any:
    if compression_type == "GZIP":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=gfile.GFile(name, "rb")), newline="")
    if compression_type not in (None, ""):
        raise ValueError(f"make_csv_dataset: compression_type {compression_type!r} is not "
                         "supported for reading the column names and types; give "
                         "column_names and column_defaults.")
    return gfile.GFile(name, "r")


def _rows(names: list[str], csv_kwargs: dict[str, Any], header: bool, num_cols: int,
          compression_type: str | None) -> Iterator[list[str]]:
    for name in names:
        with _open(name, compression_type) as f:
            reader = csv.reader(f, **csv_kwargs)
            if header:
                next(reader, None)
            for row in reader:
                if len(row) != num_cols:
                    raise ValueError(f"Problem inferring types: a CSV row of {name} has "
                                     f"{len(row)} fields, expected {num_cols}: {row!r}")
                yield row


def _infer_type(text: str, na_value: str, prev: _dt.DType | None) -> _dt.DType | None:
    """The narrowest of int32 < int64 < float32 < float64 < string that holds `text` and
    every value seen before (`prev`)."""
    if text in ("", na_value):
        return prev

    def fits(dtype: _dt.DType) -> bool:
        try:
            if dtype in (_dt.int32, _dt.int64):
                big = int(text)
                info = np.iinfo(dtype.as_numpy_dtype)
                return info.min <= big <= info.max
            if dtype in (_dt.float32, _dt.float64):  # as TF: below +inf (no NaN, no +inf)
                return bool(dtype.as_numpy_dtype(text) < np.inf)
        except (ValueError, OverflowError):
            return False
        return True
    for i, dtype in enumerate(_CSV_TYPES_ORDER):
        if fits(dtype) and (prev is None or prev in _CSV_TYPES_ORDER[:i + 1]):
            return dtype
    return _dt.string


_CSV_TYPES_ORDER = (_dt.int32, _dt.int64, _dt.float32, _dt.float64, _dt.string)


def _column_names(names: list[str], csv_kwargs: dict[str, Any],
                  compression_type: str | None) -> list[str]:
    headers = []
    for name in names:
        with _open(name, compression_type) as f:
            row = next(csv.reader(f, **csv_kwargs), None)
        if row is None:
            raise ValueError(f"make_csv_dataset: {name} has no header line (empty file?).")
        headers.append(row)
    if any(h != headers[0] for h in headers[1:]):
        raise ValueError(f"make_csv_dataset: files have different column names in the "
                         f"header row: {sorted({tuple(h) for h in headers})}")
    return headers[0]


def _select(select_columns: list[Any], column_names: list[str]) -> list[int]:
    out = []
    for v in select_columns:
        if isinstance(v, int):
            if not 0 <= v < len(column_names):
                raise ValueError(f"Column index {v} specified in select_columns out of "
                                 f"valid range [0, {len(column_names)}).")
            out.append(v)
        elif v in column_names:
            out.append(column_names.index(v))
        else:
            raise ValueError(f"Value {v!r} specified in select_columns not a valid column "
                             f"index or name; columns: {column_names}")
    if len(set(out)) != len(out):
        raise ValueError(f"select_columns contains duplicate columns: {select_columns}")
    return sorted(out)


def _matching_files(file_pattern: Any) -> list[str]:
    """The files of one pattern or a list of them, sorted; ValueError when none match."""
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    names = sorted(n for p in patterns for n in gfile.Glob(p))
    if not names:
        raise ValueError(f"make_csv_dataset: no files match {file_pattern!r}.")
    return names


def _inferred_defaults(rows: Iterable[list[str]], cols: list[int], na_value: str,
                       num_rows: int | None) -> list[Tensor]:
    """A default per column in `cols`, of the narrowest type (int32, int64, float32,
    float64, string) every one of the first `num_rows` rows (None: all) fits."""
    types: list[_dt.DType | None] = [None] * len(cols)
    for i, row in enumerate(rows):
        if num_rows is not None and i >= num_rows:
            break
        types = [_infer_type(row[c], na_value, t) for c, t in zip(cols, types)]
    return [constant([""] if (t or _dt.string) == _dt.string else [0], dtype=t or _dt.string)
            for t in types]


def make_csv_dataset(
        file_pattern: Any, batch_size: int, column_names: list[str] | None = None,
        column_defaults: list[Any] | None = None, label_name: str | None = None,
        select_columns: list[Any] | None = None, field_delim: str = ",",
        use_quote_delim: bool = True, na_value: str = "", header: bool = True,
        num_epochs: int | None = None, shuffle: bool = True, shuffle_buffer_size: int = 10000,
        shuffle_seed: int | None = None, prefetch_buffer_size: int | None = None,
        num_parallel_reads: int | None = None, sloppy: bool = False,
        num_rows_for_inference: int | None = 100, compression_type: str | None = None,
        ignore_errors: bool = False) -> Dataset:
    """Batches of CSV records as (OrderedDict of column name -> tensor[, label]).

    Column names come from the header line (which must then be the same in every
    file) and column types from the first `num_rows_for_inference` rows (None: all),
    unless given; the records are shuffled and repeated `num_epochs` times (None:
    forever, with full batches only), batched and prefetched, as in TF.

    Raises:
        ValueError: no file matches, names cannot be inferred, a duplicate or unknown
            column, `label_name` not a column, or `ignore_errors=True` (skipping bad
            records is not built).

    Example:
        >>> ds = tf.data.experimental.make_csv_dataset("train.csv", 64, label_name="y",
        ...                                            num_epochs=1, shuffle=False)
    """
    if ignore_errors:
        raise ValueError("make_csv_dataset(ignore_errors=True) is not built in tensorweave "
                         "(tf.data.experimental.ignore_errors is not available); clean the "
                         "files or leave ignore_errors False.")
    names = _matching_files(file_pattern)
    csv_kwargs = {"delimiter": field_delim,
                  "quoting": csv.QUOTE_MINIMAL if use_quote_delim else csv.QUOTE_NONE}
    if column_names is None:
        if not header:
            raise ValueError("Cannot infer column names without a header line.")
        column_names = _column_names(names, csv_kwargs, compression_type)
    if len(column_names) != len(set(column_names)):
        raise ValueError(f"Cannot have duplicate column names: {column_names}")
    selected = _select(list(select_columns), column_names) if select_columns is not None \
        else None
    if column_defaults is None:
        cols = selected if selected is not None else list(range(len(column_names)))
        rows = _rows(names, csv_kwargs, header, len(column_names), compression_type)
        column_defaults = _inferred_defaults(rows, cols, na_value, num_rows_for_inference)
    if selected is not None and len(column_defaults) != len(selected):
        raise ValueError("If specified, column_defaults and select_columns must have same "
                         f"length: {len(column_defaults)} and {len(selected)}.")
    if selected is not None and len(column_names) > len(selected):
        column_names = [column_names[i] for i in selected]
    if label_name is not None and label_name not in column_names:
        raise ValueError(f"`label_name` provided must be one of the columns: {label_name!r} "
                         f"is not in {column_names}.")

    files = Dataset.from_tensor_slices(names)
    if shuffle:
        files = files.shuffle(len(names), shuffle_seed)
    defaults = list(column_defaults)
    ds = files.interleave(lambda f: CsvDataset(
        f, defaults, compression_type=compression_type, header=header,
        field_delim=field_delim, use_quote_delim=use_quote_delim, na_value=na_value,
        select_cols=selected), cycle_length=int(num_parallel_reads or 1), block_length=1)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        ds = ds.repeat(num_epochs)
    ds = ds.batch(batch_size, drop_remainder=num_epochs is None)
    keys = list(column_names)

    def to_dict(*columns: Tensor) -> Any:
        features = collections.OrderedDict(zip(keys, columns))
        if label_name is not None:
            return features, features.pop(label_name)
        return features
    return ds.map(to_dict).prefetch(-1 if prefetch_buffer_size is None
                                    else prefetch_buffer_size)


__all__ = ["CsvDataset", "make_csv_dataset"]

"""`categorical_column_with_vocabulary_file`: ids are line numbers of a vocabulary file,
read by a lookup table at `tf.tables_initializer()` time (as TF), not at graph build.

Example:
    >>> q = categorical_column_with_vocabulary_file("query", "vocab.txt", num_oov_buckets=5)
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.lookup.vocab_tables import index_table_from_file
from tensorweave.ops.math import math_ops
from tensorweave.ops.parsing.parsing_ops import VarLenFeature
from tensorweave.feature_column.builder import FeatureBuilder, map_values
from tensorweave.feature_column.categorical import (
    CategoricalColumn, _check_dtype, _check_key, _ids_input)

__all__ = ["VocabularyFileCategoricalColumn", "categorical_column_with_vocabulary_file"]

@dataclass(frozen=True)
class VocabularyFileCategoricalColumn(CategoricalColumn):
    """Ids = line numbers of `vocabulary_file` (TF's _VocabularyFileCategoricalColumn)."""

    key: str
    vocabulary_file: str
    vocabulary_size: int
    num_oov_buckets: int
    default_value: int
    dtype: Any

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.key

    @property
    def _num_buckets(self) -> int:
        return self.vocabulary_size + self.num_oov_buckets

    @property
    def num_buckets(self) -> int:
        """The number of ids this column gives (TF's public `num_buckets`)."""
        return self._num_buckets

    @property
    def _parse_example_spec(self) -> dict[str, Any]:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, builder: FeatureBuilder) -> SparseTensor:
        sp = _ids_input(builder, self.key, self.dtype)
        key_dtype = self.dtype
        if self.dtype.is_integer:
            # The file's keys are parsed as int64 (as TF), so every integer input is too.
            key_dtype = _dt.int64
            sp = map_values(sp, math_ops.cast(sp.values, _dt.int64))
        # A table, not a constant vocabulary: the file is read when tables are
        # initialized (on the worker, at run time), exactly as TF does.
        table = index_table_from_file(
            vocabulary_file=self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
            vocab_size=self.vocabulary_size, default_value=self.default_value,
            key_dtype=key_dtype, name=f"{self.key}_lookup")
        return table.lookup(sp)


def _count_lines(path: str) -> int:
    # As TF's `sum(1 for _ in gfile.GFile(path))`: a last line without '\n' counts too.
    with open(path, "rb") as f:
        data = f.read()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def categorical_column_with_vocabulary_file(key: str, vocabulary_file: str,
                                            vocabulary_size: int | None = None,
                                            num_oov_buckets: int = 0,
                                            default_value: int | None = None,
                                            dtype: Any = _dt.string
                                            ) -> VocabularyFileCategoricalColumn:
    """A categorical column whose ids are line numbers of a vocabulary file.

    Line i (0-based) of the file is id i; only the first `vocabulary_size` lines are
    used (all when None, counted now, so the file must exist at graph construction).
    A value not in the vocabulary gets `vocabulary_size + Fingerprint64(value) %
    num_oov_buckets` (integers hashed as their decimal string) with buckets, else
    `default_value` (-1 when None, which drops the value from lookups). With an
    integer `dtype` the file's lines are parsed as int64. The file is read by a lookup
    table: run `tf.tables_initializer()` (a Scaffold does) before using the ids.

    Args:
        key: the feature name.
        vocabulary_file: path of the vocabulary, one value per line.
        vocabulary_size: number of leading lines to use; None: all of them.
        num_oov_buckets: number of out-of-vocabulary buckets after the vocabulary.
        default_value: id of out-of-vocabulary values when there are no buckets.
        dtype: tf.string or an integer dtype of the feature values.

    Returns:
        A VocabularyFileCategoricalColumn with `vocabulary_size + num_oov_buckets` ids.

    Raises:
        ValueError: no file, a missing file with no `vocabulary_size`, a size < 1,
            negative buckets, both buckets and `default_value`, or a bad dtype.

    Example:
        >>> states = categorical_column_with_vocabulary_file(
        ...     "states", "/us/states.txt", vocabulary_size=50, num_oov_buckets=5)
    """
    _check_key(key)
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        if not os.path.isfile(vocabulary_file):
            raise ValueError(f"vocabulary_file {vocabulary_file} in {key} does not exist.")
        vocabulary_size = _count_lines(vocabulary_file)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size {vocabulary_size} in {key} "
                         f"(vocabulary_file {vocabulary_file}).")
    if num_oov_buckets:
        if default_value is not None:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in "
                             f"{key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")
    dt = _check_dtype(dtype, key)
    return VocabularyFileCategoricalColumn(
        key, vocabulary_file, int(vocabulary_size), int(num_oov_buckets or 0),
        -1 if default_value is None else int(default_value), dt)

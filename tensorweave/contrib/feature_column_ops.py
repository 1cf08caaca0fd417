"""`tf.contrib.layers.input_from_feature_columns` and `weighted_sum_from_feature_columns`:
a DNN's first layer and a linear model from feature columns, contrib's way (DeepRec's
EmbeddingVariable columns of `feature_column.py`, and `tf.feature_column`'s columns).

Columns are visited in contrib's order (`feature_column.sort_key`), each under a
variable scope named after it, inside `input_from_feature_columns` or
`weighted_sum_from_feature_columns` (or `scope`).

Example:
    >>> ids = tf.contrib.layers.sparse_column_with_embedding("user", dtype=tf.int64)
    >>> logits, col_vars, bias = tf.contrib.layers.weighted_sum_from_feature_columns(
    ...     features, [ids, tf.contrib.layers.real_valued_column("age")], num_outputs=1)
"""
from __future__ import annotations

from typing import Any

from tensorweave.contrib.feature_column import ContribEmbeddingColumn, sort_key
from tensorweave.feature_column.builder import FeatureBuilder
from tensorweave.feature_column.categorical import CategoricalColumn
from tensorweave.feature_column.dense import DenseColumn
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph_defaults import GraphKeys, add_to_collection
from tensorweave.framework.tensor import Tensor
from tensorweave.nn_impl.embedding_sparse import safe_embedding_lookup_sparse
from tensorweave.ops import array as array_ops
from tensorweave.ops.math import math_ops
from tensorweave.ops.nn.layer_ops import bias_add
from tensorweave.state.init_ops import zeros_initializer
from tensorweave.state.variable_scope import get_variable, variable_scope

__all__ = ["input_from_feature_columns", "weighted_sum_from_feature_columns"]


def _checked(feature_columns: Any) -> list[Any]:
    """The columns in contrib's order; ValueError for a dict, nothing, or two columns of
    one name (their variables would collide)."""
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict. Pass a list "
                         "of columns, e.g. list(columns.values()).")
    cols = list(dict.fromkeys(feature_columns or []))   # a set in TF: duplicates merge
    if not cols:
        raise ValueError("feature_columns must not be empty.")
    names = [getattr(c, "name", None) for c in cols]
    for c, n in zip(cols, names):
        if n is None or not hasattr(c, "_transform_feature"):
            raise ValueError(f"Items of feature_columns must be feature columns "
                             f"(tf.contrib.layers or tf.feature_column). Given: {c!r}")
        if names.count(n) > 1:
            raise ValueError(f"Duplicate feature column key found for column: {n}. "
                             "This usually means that the column is almost identical to "
                             "another column, and one must be discarded.")
    return sorted(cols, key=sort_key)


def _add_to(collections: Any, variables: list[Any]) -> None:
    # As contrib: the variables join `weight_collections` (all are global already).
    for name in collections or []:
        if name != GraphKeys.GLOBAL_VARIABLES:
            for v in variables:
                add_to_collection(name, v)


def _parts(table: Any) -> list[Any]:
    return list(table) if isinstance(table, list) else [table]


def _flat(t: Tensor, width: int | None) -> Tensor:
    # [batch, width]: a column's per-example output flattened (width -1: as it comes).
    return array_ops.reshape(t, array_ops.stack([array_ops.shape(t)[0],
                                                 -1 if width is None else width]))


def input_from_feature_columns(columns_to_tensors: dict[str, Any], feature_columns: Any,
                               weight_collections: Any = None, trainable: bool = True,
                               scope: Any = None,
                               cols_to_outs: dict[Any, Tensor] | None = None) -> Tensor:
    """Contrib's DNN input layer: the columns' dense outputs, [batch, sum of widths].

    An `embedding_column` of a `sparse_column_with_embedding` column looks its ids up in
    the EmbeddingVariable `<scope>/<col>_embedding/weights`; real-valued (and
    `tf.feature_column` dense) columns pass through. `cols_to_outs`, if a dict, receives
    each column's [batch, width] part.

    Raises:
        ValueError: no columns, a dict of them, duplicate names, or a column a DNN
            cannot take (a sparse column: wrap it in `embedding_column`).

    Example:
        >>> net = tf.contrib.layers.input_from_feature_columns(
        ...     features, [tf.contrib.layers.embedding_column(user_ids, 8)])
    """
    if cols_to_outs is not None and not isinstance(cols_to_outs, dict):
        raise ValueError("cols_to_outs must be a dict unless None")
    builder = FeatureBuilder(columns_to_tensors)
    outputs = []
    with variable_scope(scope, default_name="input_from_feature_columns",
                        values=list(columns_to_tensors.values())):
        for col in _checked(feature_columns):
            if not isinstance(col, DenseColumn):
                raise ValueError(f"Error creating input layer for column: {col.name}. A "
                                 "sparse column is not supported in DNN; wrap it in "
                                 "embedding_column.")
            with variable_scope(None, default_name=col.name):
                t = col._get_dense_tensor(builder, weight_collections, trainable)
            outputs.append(_flat(t, col._variable_shape.num_elements()))
            if cols_to_outs is not None:
                cols_to_outs[col] = outputs[-1]
        return array_ops.concat(outputs, 1)


def _column_sum(col: Any, builder: FeatureBuilder, num_outputs: int,
                trainable: bool) -> tuple[list[Any], Tensor]:
    """(the column's weight variables, its [batch, num_outputs] weighted sum)."""
    if isinstance(col, ContribEmbeddingColumn):
        raise ValueError(f"Error creating weighted sum for column: {col.name}. Column "
                         f"{col.name} is not supported in linear models. Please use "
                         "sparse_column.")
    if isinstance(col, CategoricalColumn):
        ids, weights = col._get_sparse_tensors(builder)
        make_ev = getattr(col, "_embedding_table", None)
        if make_ev is not None:
            # DeepRec: an EmbeddingVariable `weights` of dimension num_outputs, from 0.
            table = make_ev(num_outputs, zeros_initializer(), trainable, name="weights")
        else:
            table = get_variable("weights", shape=[col._num_buckets, num_outputs],
                                 dtype=_dt.float32, initializer=zeros_initializer(),
                                 trainable=trainable)
        combiner = getattr(col, "combiner", "sum")
        return _parts(table), safe_embedding_lookup_sparse(
            table, ids, weights, combiner=combiner, name=f"{col.name}_weights")
    width = col._variable_shape.num_elements()
    x = _flat(col._get_dense_tensor(builder, None, trainable), width)
    w = get_variable("weight", shape=[width, num_outputs], dtype=_dt.float32,
                     initializer=zeros_initializer(), trainable=trainable)
    return [w], math_ops.matmul(x, w, name="matmul")


def weighted_sum_from_feature_columns(columns_to_tensors: dict[str, Any],
                                      feature_columns: Any, num_outputs: int,
                                      weight_collections: Any = None,
                                      trainable: bool = True, scope: Any = None
                                      ) -> tuple[Tensor, dict[Any, list[Any]], Any]:
    """Contrib's linear model: (predictions [batch, num_outputs], column -> its weight
    variables, the bias variable).

    A `sparse_column_with_embedding` column's weights are an EmbeddingVariable
    `<scope>/<col>/weights` of dimension `num_outputs` (a row per id seen, from 0), its
    ids combined by the column's combiner ("sum"); a real-valued column multiplies
    `<scope>/<col>/weight` [width, num_outputs]; the bias is `<scope>/bias_weight`.

    Raises:
        ValueError: no columns, a dict of them, duplicate names, or an
            `embedding_column` (linear models take the sparse column itself).

    Example:
        >>> logits, _, bias = tf.contrib.layers.weighted_sum_from_feature_columns(
        ...     features, [user_ids], num_outputs=1)
    """
    builder = FeatureBuilder(columns_to_tensors)
    column_to_variable: dict[Any, list[Any]] = {}
    sums = []
    with variable_scope(scope, default_name="weighted_sum_from_feature_columns",
                        values=list(columns_to_tensors.values())):
        for col in _checked(feature_columns):
            with variable_scope(None, default_name=col.name):
                variables, out = _column_sum(col, builder, num_outputs, trainable)
            _add_to(weight_collections, variables)
            column_to_variable[col] = variables
            sums.append(array_ops.reshape(out, [-1, num_outputs]))
        bias = get_variable("bias_weight", shape=[num_outputs], dtype=_dt.float32,
                            initializer=zeros_initializer(), trainable=trainable)
        _add_to(weight_collections, [bias])
        total = math_ops.add_n(sums) if len(sums) > 1 else sums[0]
        return bias_add(total, bias), column_to_variable, bias

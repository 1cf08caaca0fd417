"""`tf.contrib.layers`: the regularizers, initializers and slim-style layers TF1 model
code uses (fully_connected, conv2d, pooling, batch/layer norm, repeat/stack), and the
embedding helper of sparse feature programs. Every layer takes `arg_scope` defaults.
DeepRec's feature columns over an EmbeddingVariable (`sparse_column_with_embedding`,
`embedding_column`, `real_valued_column`) feed `input_from_feature_columns` (a DNN's
input) and `weighted_sum_from_feature_columns` (a linear model).

Example:
    >>> net = tf.contrib.layers.conv2d(images, 32, [3, 3])          # Conv/weights
    >>> net = tf.contrib.layers.max_pool2d(net, [2, 2])
    >>> net = tf.contrib.layers.fully_connected(
    ...     tf.contrib.layers.flatten(net), 64,
    ...     weights_regularizer=tf.contrib.layers.l2_regularizer(1e-4))
    >>> vecs = tf.contrib.layers.safe_embedding_lookup_sparse(emb, sp_ids, combiner="sum")
    >>> users = tf.contrib.layers.sparse_column_with_embedding("user", dtype=tf.int64)
    >>> net = tf.contrib.layers.input_from_feature_columns(
    ...     features, [tf.contrib.layers.embedding_column(users, dimension=8)])
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.contrib.feature_column import (
    embedding_column as embedding_column, real_valued_column as real_valued_column,
    sparse_column_with_embedding as sparse_column_with_embedding)
from tensorweave.contrib.feature_column_ops import (
    input_from_feature_columns as input_from_feature_columns,
    weighted_sum_from_feature_columns as weighted_sum_from_feature_columns)
from tensorweave.contrib.layers_conv import (
    avg_pool2d as avg_pool2d, bias_add as bias_add, conv2d as conv2d,
    conv2d_transpose as conv2d_transpose, convolution2d as convolution2d,
    convolution2d_transpose as convolution2d_transpose, max_pool2d as max_pool2d,
    separable_conv2d as separable_conv2d, separable_convolution2d as separable_convolution2d)
from tensorweave.contrib.layers_impl import (
    OPTIMIZER_CLS_NAMES as OPTIMIZER_CLS_NAMES, OPTIMIZER_SUMMARIES as OPTIMIZER_SUMMARIES,
    apply_regularization as apply_regularization, batch_norm as batch_norm,
    dropout as dropout, embed_sequence as embed_sequence, flatten as flatten,
    fully_connected as fully_connected, l1_l2_regularizer as l1_l2_regularizer,
    l1_regularizer as l1_regularizer, l2_regularizer as l2_regularizer,
    optimize_loss as optimize_loss, sum_regularizer as sum_regularizer,
    variance_scaling_initializer as variance_scaling_initializer,
    xavier_initializer as xavier_initializer,
    xavier_initializer_conv2d as xavier_initializer_conv2d)
from tensorweave.contrib.layers_misc import (
    elu as elu, layer_norm as layer_norm, linear as linear,
    one_hot_encoding as one_hot_encoding, relu as relu, relu6 as relu6, repeat as repeat,
    stack as stack, unit_norm as unit_norm)
from tensorweave.nn_impl.embedding_sparse import (
    safe_embedding_lookup_sparse as safe_embedding_lookup_sparse)

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "apply_regularization",
           "avg_pool2d", "batch_norm", "bias_add", "conv2d", "conv2d_transpose",
           "convolution2d", "convolution2d_transpose", "dropout", "elu", "embed_sequence",
           "embedding_column", "flatten", "fully_connected", "input_from_feature_columns",
           "l1_l2_regularizer", "l1_regularizer", "l2_regularizer", "layer_norm",
           "linear", "max_pool2d", "one_hot_encoding", "optimize_loss",
           "real_valued_column", "relu", "relu6", "repeat",
           "safe_embedding_lookup_sparse", "separable_conv2d", "separable_convolution2d",
           "sparse_column_with_embedding", "stack", "sum_regularizer", "unit_norm",
           "variance_scaling_initializer", "weighted_sum_from_feature_columns",
           "xavier_initializer", "xavier_initializer_conv2d"]

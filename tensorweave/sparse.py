"""`tf.sparse`: the TF 1.13+ names of the sparse ops (`tf.sparse.to_dense`, ...).

The same functions are also at the top level under their TF1 names
(`tf.sparse_tensor_to_dense`, `tf.sparse_reorder`, ...).

Example:
    >>> dense = tf.sparse.to_dense(tf.sparse.reorder(sp))
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.framework.sparse_tensor import (
    SparseTensor as SparseTensor, SparseTensorValue as SparseTensorValue)
from tensorweave.ops.sparse.conversion_ops import (
    sparse_placeholder as placeholder, sparse_reorder as reorder, sparse_reshape as reshape,
    sparse_retain as retain, sparse_tensor_to_dense as to_dense,
    sparse_to_indicator as to_indicator)
from tensorweave.ops.sparse.sparse_math_ops import (
    sparse_add as add, sparse_reduce_sum as reduce_sum, sparse_tensor_dense_matmul as matmul,
    sparse_tensor_dense_matmul as sparse_dense_matmul)
from tensorweave.ops.sparse.structure_ops import (
    sparse_concat as concat, sparse_fill_empty_rows as fill_empty_rows, sparse_slice as slice)
from tensorweave.ops.sparse.sparse_split_softmax_ops import (
    sparse_maximum as maximum, sparse_minimum as minimum, sparse_softmax as softmax,
    sparse_split as split)
from tensorweave.ops.sparse.segment_ops import (
    sparse_segment_mean as segment_mean, sparse_segment_sqrt_n as segment_sqrt_n,
    sparse_segment_sum as segment_sum)

"""Array ops (`tf.reshape`, `tf.concat`, `tf.gather`, slicing...): the family's public names.

The stanzas live in small files: `core_ops` (Const, Placeholder, Identity; shared
helpers), `shape_ops` (shape, size, rank, reshape, expand_dims, squeeze), `fill_ops`
(transpose, fill, zeros/ones(_like), range, stop_gradient), `join_ops` (stack, unstack,
concat, split), `pad_ops` (tile, pad), `slice_ops` (slice, strided_slice,
`Tensor.__getitem__`) and `index_ops` (gather, one_hot, boolean_mask); the rest
(gather_nd, unique, space/batch, depth/space, sequence, identity_n) are imported where
used. This package re-exports the public names above, so importing any module of the
family registers them all. Modules of the family import each other's submodules, never
this package (it is still being initialized while they load).

Example:
    >>> from tensorweave.ops import array as array_ops
    >>> x = array_ops.reshape(tf.range(6), [2, 3])
    >>> array_ops.concat([x, x[:, :1]], axis=1).shape.as_list()
    [2, 4]
"""
# ruff: noqa: F401  (this package only re-exports)
from tensorweave.ops.array.shape_ops import (
    expand_dims as expand_dims, rank as rank, reshape as reshape, shape as shape,
    shape_n as shape_n, size as size, squeeze as squeeze)
from tensorweave.ops.array.core_ops import shape_from_tensor as shape_from_tensor
from tensorweave.ops.array.fill_ops import (
    fill as fill, ones as ones, ones_like as ones_like, range as range,
    stop_gradient as stop_gradient, transpose as transpose, zeros as zeros,
    zeros_like as zeros_like)
from tensorweave.ops.array.join_ops import (
    concat as concat, split as split, stack as stack, unstack as unstack)
from tensorweave.ops.array.pad_ops import pad as pad, tile as tile
from tensorweave.ops.array.slice_ops import slice as slice, strided_slice as strided_slice
from tensorweave.ops.array.index_ops import (
    boolean_mask as boolean_mask, gather as gather, one_hot as one_hot)

newaxis = None

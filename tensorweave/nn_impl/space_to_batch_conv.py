"""Dilated (atrous) ops as TF builds them: SpaceToBatchND -> plain op -> BatchToSpaceND.

`with_space_to_batch` is TF's `tf.nn.with_space_to_batch`: for rates above 1 it
rearranges the input so that a dense, VALID op on each of the rate**N sub-grids
equals the dilated op on the whole input, then rearranges back. TF's python
`depthwise_conv2d`, `separable_conv2d`, `convolution`/`atrous_conv2d` and `pool`
build dilation this way, and so do ours beside this module (`depthwise_conv`,
`conv_wrappers`): graphs exported from here carry the same ops, and TF's backprop
kernels (which ignore a native `dilations` attr on CPU) are never asked to dilate.
Built from the SpaceToBatchND / BatchToSpaceND ops (`ops/array/space_batch_ops.py`),
defining none. `required_space_to_batch_paddings` is `tf.required_space_to_batch_paddings`.

Example:
    >>> y = tf.nn.with_space_to_batch(
    ...     x, dilation_rate=[2, 2], padding="SAME", filter_shape=[3, 3],
    ...     op=lambda inp, n, pad: tf.nn.max_pool(inp, [1, 3, 3, 1], [1, 1, 1, 1], pad))
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant, constant_value, convert_to_tensor
from tensorweave.framework.graph import name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.join_ops import concat, stack
from tensorweave.ops.array.shape_ops import shape
from tensorweave.ops.array.space_batch_ops import batch_to_space_nd, space_to_batch_nd
from tensorweave.ops.math.binary_ops import add, mod, subtract


def _known(value: Any) -> np.ndarray | None:
    """The int value of a list / array / tensor when known at build time, else None."""
    v = constant_value(value) if isinstance(value, Tensor) else np.asarray(value)
    return None if v is None else np.asarray(v).astype(np.int32)


def required_space_to_batch_paddings(input_shape: Any, block_shape: Any,
                                     base_paddings: Any = None, name: str | None = None
                                     ) -> tuple[Any, Any]:
    """`tf.required_space_to_batch_paddings`: paddings and crops for space_to_batch_nd.

    Pads each dim by `base_paddings` plus just enough at the end to make it divisible
    by its block; the crops remove that extra again after batch_to_space_nd.

    Args:
        input_shape: the M spatial sizes (ints or an int32 tensor).
        block_shape: M positive ints (its length must be known).
        base_paddings: [M, 2] minimum paddings (default zeros).

    Returns:
        (paddings, crops), each [M, 2] int32: constants when every input is known.

    Raises:
        ValueError: if block_shape's length is unknown or the shapes disagree.

    Example:
        >>> p, c = tf.required_space_to_batch_paddings([5, 4], [2, 2], [[1, 1], [1, 1]])
        >>> # p = [[1, 2], [1, 1]], c = [[0, 1], [0, 0]]
    """
    with name_scope(name, "required_space_to_batch_paddings", []):
        vals = [_known(input_shape), _known(block_shape),
                None if base_paddings is None else _known(base_paddings)]
        block = vals[1]
        if block is None or block.ndim != 1:
            raise ValueError(f"required_space_to_batch_paddings: block_shape must be a 1-D "
                             f"value known at graph-build time, got {block_shape!r}.")
        m = block.size
        if base_paddings is None:
            vals[2] = np.zeros([m, 2], np.int32)
        if vals[0] is not None and vals[2] is not None:
            shp, base = vals[0].reshape(-1), vals[2].reshape(m, 2)
            if shp.size != m:
                raise ValueError(f"required_space_to_batch_paddings: input_shape {shp.tolist()} "
                                 f"needs one entry per block dim ({block.tolist()}).")
            extra = (block - (shp + base[:, 0] + base[:, 1]) % block) % block
            pads = np.stack([base[:, 0], base[:, 1] + extra], axis=1)
            crops = np.stack([np.zeros_like(extra), extra], axis=1)
            return constant(pads, name="paddings"), constant(crops, name="crops")
        shp_t = convert_to_tensor(input_shape, dtype=_dt.int32, name="input_shape")
        base_t = convert_to_tensor(vals[2] if vals[2] is not None else base_paddings,
                                   dtype=_dt.int32, name="base_paddings")
        start, end = base_t[:, 0], base_t[:, 1]
        full = add(add(shp_t, start), end)
        extra_t = mod(subtract(block, mod(full, block)), block)
        return (stack([start, add(end, extra_t)], axis=1, name="paddings"),
                stack([extra_t * 0, extra_t], axis=1, name="crops"))


def _base_paddings(filter_shape: Any, rate: np.ndarray, n: int, padding: str) -> Any:
    """SAME -> VALID: pad the dilated filter extent (rate * (k - 1)), more at the end."""
    if padding == "VALID":
        return np.zeros([n, 2], np.int32)
    if padding != "SAME":
        raise ValueError(f"with_space_to_batch: padding must be 'SAME' or 'VALID', got "
                         f"{padding!r}.")
    if filter_shape is None:
        raise ValueError("with_space_to_batch: filter_shape must be given for SAME padding.")
    fs = _known(filter_shape)
    if fs is not None:
        extra = (fs.reshape(-1)[:n] - 1) * rate
        return np.stack([extra // 2, extra - extra // 2], axis=1)
    ft = convert_to_tensor(filter_shape, dtype=_dt.int32, name="filter_shape")
    extra_t = (ft[:n] - 1) * constant(rate)
    start = extra_t // 2
    return stack([start, extra_t - start], axis=1)


def _adjust(orig: Any, fill: int, spatial_dims: Sequence[int]) -> Any:
    """Rows for dims 1..max(spatial_dims): `orig`'s rows at the spatial dims, `fill`
    elsewhere (TF's _with_space_to_batch_adjust)."""
    known = _known(orig)
    val = known if known is not None else orig
    tail = list(np.shape(known)[1:]) if known is not None else list(orig.shape.as_list()[1:])
    parts: list[Any] = []
    prev = 0
    for i, d in enumerate(spatial_dims):
        if d - 1 > prev:
            parts.append(np.full([d - 1 - prev] + tail, fill, np.int32))
        parts.append(val[i:i + 1])
        prev = d
    if known is not None:
        return np.concatenate(parts)
    return concat([p if isinstance(p, Tensor) else constant(p) for p in parts], 0)


def with_space_to_batch(input: Any, dilation_rate: Any, padding: str,
                        op: Callable[[Tensor, int, str], Tensor], filter_shape: Any = None,
                        spatial_dims: Sequence[int] | None = None,
                        data_format: str | None = None) -> Tensor:
    """`tf.nn.with_space_to_batch`: runs `op` as if dilated by `dilation_rate`.

    Args:
        input: a tensor of rank at least max(spatial_dims) + 1.
        dilation_rate: N positive ints, known at build time.
        padding: "SAME" or "VALID", of the dilated op.
        op: `op(converted_input, num_spatial_dims, padding)` builds the undilated op;
            called with padding "VALID" on the space-to-batched input when a rate is
            above 1, else with `padding` on `input` itself.
        filter_shape: the filter's (or window's) shape, spatial dims first; required
            for SAME.
        spatial_dims: the N input dims to dilate (default 1..N, or 2..N+1 when
            data_format starts with "NC").

    Raises:
        ValueError: for a rate below 1 or unknown at build time, a bad padding, or
            SAME without filter_shape.

    Example:
        >>> y = tf.nn.with_space_to_batch(
        ...     x, [2, 2], "SAME", lambda inp, n, pad: tf.nn.conv2d(inp, w, [1] * 4, pad),
        ...     filter_shape=[3, 3])
    """
    x = convert_to_tensor(input, name="input")
    rate = _known(dilation_rate)
    if rate is None or rate.ndim != 1:
        raise ValueError(f"with_space_to_batch: dilation_rate must be a 1-D value known at "
                         f"graph-build time, got {dilation_rate!r}.")
    if (rate < 1).any():
        raise ValueError(f"with_space_to_batch: dilation_rate must be positive, got "
                         f"{rate.tolist()}.")
    n = rate.size
    first = bool(data_format) and str(data_format).startswith("NC")
    dims = list(spatial_dims) if spatial_dims is not None else \
        list(range(2 if first else 1, n + (2 if first else 1)))
    if len(dims) != n or sorted(set(dims)) != dims or dims[0] < 1:
        raise ValueError(f"with_space_to_batch: spatial_dims {dims} must be {n} increasing "
                         "dims >= 1, one per dilation rate.")
    if (rate == 1).all():
        return op(x, n, padding)
    base = _base_paddings(filter_shape, rate, n, padding)
    known = x.shape.as_list() if x.shape.ndims is not None else None
    sizes: Any = [known[d] for d in dims] if known is not None else None
    if sizes is None or None in sizes:
        dyn = shape(x)
        sizes = stack([dyn[d] for d in dims])
    paddings, crops = required_space_to_batch_paddings(sizes, rate, base)
    block = _adjust(rate, 1, dims)
    y = space_to_batch_nd(x, block, _adjust(paddings, 0, dims))
    return batch_to_space_nd(op(y, n, "VALID"), block, _adjust(crops, 0, dims))

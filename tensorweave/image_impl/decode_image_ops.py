"""`tf.image.is_jpeg` and `tf.image.decode_image`, composites built as TF 1.15's Python
builds them (TF 1.15 has no DecodeImage op): the first bytes pick a branch of nested
`tf.cond`s (JPEG, PNG, GIF, else BMP), each branch an Assert on the channels that
format allows, its decode op and `convert_image_dtype`.

Example:
    >>> img = tf.image.decode_image(tf.read_file(path), channels=3,
    ...                             expand_animations=False)     # [h, w, 3] uint8
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph_defaults import control_dependencies, name_scope
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array.index_ops import gather
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.control_flow.cond_ops import cond
from tensorweave.ops.image.codec_ops import decode_bmp, decode_gif, decode_jpeg, decode_png
from tensorweave.ops.image.color_ops import convert_image_dtype
from tensorweave.ops.math.binary_ops import equal, not_equal
from tensorweave.ops.strings.string_ops import substr

__all__ = ["decode_image", "is_jpeg"]


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """`tf.image.is_jpeg`: whether the bytes start as a JPEG does (\\xff\\xd8\\xff);
    false positives are possible.

    Example:
        >>> tf.image.is_jpeg(tf.read_file("cat.jpg"))   # True (a scalar bool)
    """
    with name_scope(name, "is_jpeg"):
        return equal(substr(contents, 0, 3), b"\xff\xd8\xff", name=name)


def _checked(ok: Any, msg: str, decode: Any) -> Tensor:
    """`decode()` run after an Assert that `ok` holds (TF's channel checks)."""
    with control_dependencies([Assert(ok, [msg])]):
        return decode()


def decode_image(contents: Any, channels: int | None = None, dtype: Any = _dt.uint8,
                 name: str | None = None, expand_animations: bool = True) -> Tensor:
    """`tf.image.decode_image`: decodes BMP, GIF, JPEG or PNG, found from the bytes.

    Args:
        contents: scalar string, the encoded image.
        channels: None/0 (the file's), 1, 3 or 4 (not for JPEG; GIF and BMP: 0 or 3).
        dtype: the result's dtype; values are scaled by `convert_image_dtype`.
        name: a name scope.
        expand_animations: True: GIFs give [frames, h, w, 3], others [h, w, c];
            False: every format gives [h, w, c] (a GIF's first frame).

    Returns:
        A Tensor of `dtype`, 3-D or (GIFs, with `expand_animations`) 4-D; its static
        shape is unknown unless `expand_animations` is False.

    Raises:
        ValueError: `channels` not one of None, 0, 1, 3, 4.
        InvalidArgumentError: (at run time) unknown format or a channels check fails.

    Example:
        >>> img = tf.image.decode_image(data, channels=3, expand_animations=False)
    """
    if channels not in (None, 0, 1, 3, 4):
        raise ValueError(f"decode_image: channels must be in (None, 0, 1, 3, 4), got "
                         f"{channels!r}.")
    dtype = _dt.as_dtype(dtype).base_dtype
    ch = channels or 0
    with name_scope(name, "decode_image"):
        contents = convert_to_tensor(contents, dtype=_dt.string, name="contents")
        head = substr(contents, 0, 3)

        def _bmp() -> Tensor:
            is_bmp = equal(substr(contents, 0, 2), b"BM")
            with control_dependencies([Assert(is_bmp, [
                    "Unable to decode bytes as JPEG, PNG, GIF, or BMP"])]):
                return _checked(ch != 1, "Channels must be in (None, 0, 3) when decoding "
                                "BMP images", lambda: convert_image_dtype(
                                    decode_bmp(contents), dtype))

        def _gif() -> Tensor:
            def frames() -> Tensor:
                out = decode_gif(contents)
                return convert_image_dtype(out if expand_animations else gather(out, 0),
                                           dtype)
            return _checked(ch in (0, 3), "Channels must be in (None, 0, 3) when decoding "
                            "GIF images", frames)

        def _png() -> Tensor:
            png_dtype = _dt.uint16 if dtype == _dt.uint16 else _dt.uint8
            return convert_image_dtype(decode_png(contents, ch, png_dtype), dtype)

        def _jpeg() -> Tensor:
            return _checked(not_equal(ch, 4), "Channels must be in (None, 0, 1, 3) when "
                            "decoding JPEG images",
                            lambda: convert_image_dtype(decode_jpeg(contents, min(ch, 3)),
                                                        dtype))

        def check_gif() -> Tensor:
            return cond(equal(head, b"GIF"), _gif, _bmp, name="cond_gif")

        def check_png() -> Tensor:
            return cond(equal(head, b"\x89PN"), _png, check_gif, name="cond_png")

        image = cond(is_jpeg(contents), _jpeg, check_png, name="cond_jpeg")
        if not expand_animations:
            image.set_shape([None, None, ch or None])
        return image

"""TF 1.x's renamed arguments: a new name and its deprecated old one, give exactly one.

TF 1.x kept old parameter names next to new ones (`tf.decode_raw(input_bytes=...)` or
`bytes=...`, `tf.nn.conv2d_transpose(value=...)` or `input=...`) and each function looks
the value up under either name; `one_of` is that lookup, with an error naming both.
"""
from __future__ import annotations

from typing import Any


def one_of(fn: str, new_name: str, new: Any, old_name: str, old: Any,
           required: bool = True) -> Any:
    """The value given under `new_name` or its deprecated `old_name`.

    Raises:
        ValueError: both given, or (when `required`) neither.

    Example:
        >>> one_of("decode_raw", "input_bytes", None, "bytes", b"ab")   # -> b"ab"
    """
    if new is not None and old is not None:
        raise ValueError(f"{fn}: give {new_name} or {old_name} (its deprecated name), "
                         "not both.")
    if required and new is None and old is None:
        raise ValueError(f"{fn}: {new_name} is required (or its deprecated name "
                         f"{old_name}).")
    return new if new is not None else old

"""`tf.compat`: text/bytes helpers and `tf.compat.v1`, as TF 1.13+ programs use them.

`tf.compat.v1` is the whole TF 1.x API, which is what tensorweave offers at the top
level: `tf.compat.v1.Session` is `tf.Session`, and `import tensorweave.compat.v1 as
tf` (the TF 1.15 / 2.x way to ask for graph mode) works as `import tensorweave as tf`.

Example:
    >>> tf.compat.as_bytes("ids")          # b'ids'
    >>> tf.compat.as_text(b"ids")          # 'ids'
    >>> sess = tf.compat.v1.Session()
"""
from __future__ import annotations

import numbers
import os
from typing import Any

import numpy as np

from tensorweave.compat import v1 as v1
from tensorweave.framework.tensor_shape import (
    dimension_at_index as dimension_at_index, dimension_value as dimension_value)

integral_types = (numbers.Integral, np.integer)
real_types = (numbers.Real, np.integer, np.floating)
complex_types = (numbers.Complex, np.number)
bytes_or_text_types = (bytes, str)


def as_bytes(bytes_or_text: bytes | bytearray | str, encoding: str = "utf-8") -> bytes:
    """`bytes_or_text` as bytes (text encoded with `encoding`).

    Raises:
        TypeError: neither bytes nor text (named in the message).
    """
    if isinstance(bytes_or_text, bytearray):
        return bytes(bytes_or_text)
    if isinstance(bytes_or_text, str):
        return bytes_or_text.encode(encoding)
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


def as_text(bytes_or_text: bytes | str, encoding: str = "utf-8") -> str:
    """`bytes_or_text` as text (bytes decoded with `encoding`).

    Raises:
        TypeError: neither bytes nor text (named in the message).
    """
    if isinstance(bytes_or_text, str):
        return bytes_or_text
    if isinstance(bytes_or_text, bytes):
        return bytes_or_text.decode(encoding)
    raise TypeError(f"Expected binary or unicode string, got {bytes_or_text!r}")


as_str = as_text
as_bytes_or_str = as_text


def as_str_any(value: Any) -> str:
    """`str(value)`, decoding bytes as text first."""
    return as_str(value) if isinstance(value, bytes) else str(value)


def path_to_str(path: Any) -> Any:
    """A path-like object's string; anything else unchanged."""
    return os.fspath(path) if isinstance(path, os.PathLike) else path


__all__ = ["as_bytes", "as_str", "as_str_any", "as_text", "bytes_or_text_types",
           "complex_types", "integral_types", "path_to_str", "real_types", "v1"]

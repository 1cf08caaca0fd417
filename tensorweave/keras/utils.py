"""`tf.keras.utils`: numpy helpers for preparing data, `get_file`, `Progbar`,
`get_source_inputs`.

Example:
    >>> tf.keras.utils.to_categorical([0, 2], num_classes=3)
    array([[1., 0., 0.],
           [0., 0., 1.]], dtype=float32)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.keras.utils_data import get_file as get_file
from tensorweave.keras.utils_layers import get_source_inputs as get_source_inputs
from tensorweave.keras.utils_progbar import Progbar as Progbar


def to_categorical(y: Any, num_classes: int | None = None, dtype: str = "float32"
                   ) -> np.ndarray:
    """One-hot rows for integer class ids (a trailing dimension of 1 is dropped).

    Raises:
        ValueError: if an id is negative or not below num_classes.
    """
    ids = np.asarray(y, dtype="int64")
    if ids.ndim > 1 and ids.shape[-1] == 1:
        ids = ids[..., 0]
    n = int(num_classes) if num_classes is not None else int(ids.max(initial=-1)) + 1
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"to_categorical: class ids must be in [0, {n}); got values from "
                         f"{int(ids.min())} to {int(ids.max())}.")
    out = np.zeros(ids.shape + (n,), dtype=dtype)
    np.put_along_axis(out, ids[..., None], 1, axis=-1)
    return out


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """`x` divided by its `order`-norm along `axis` (zero vectors stay zero)."""
    arr = np.asarray(x, dtype="float64")
    norm = np.atleast_1d(np.linalg.norm(arr, order, axis))
    norm[norm == 0] = 1
    return arr / np.expand_dims(norm, axis)

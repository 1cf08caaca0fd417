"""The index specs Slice and StridedSlice work out from their bounds, remembered.

A graph slices with the same few bounds every step (shape[0], shape[1:], ...): each
spec is worked out once, found by the bounds' bytes, or by the identity of the bound
arrays themselves when they are constants.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

# By the bounds' contents (dtype, shape and bytes of each).
_SPECS: dict[tuple[Any, ...], tuple] = {}
_SPECS_MAX = 4096


def spec_key(*arrays: np.ndarray) -> tuple[Any, ...]:
    """The bounds' contents as a dict key (dtype, shape and bytes of each)."""
    return tuple(x for a in arrays for x in (a.dtype.char, a.shape, a.tobytes()))


def memo_spec(key: tuple[Any, ...], compute: Callable[[], tuple]) -> tuple:
    """The spec remembered under `key`, computed (and remembered) the first time."""
    idx = _SPECS.get(key)
    if idx is None:
        idx = compute()
        if len(_SPECS) >= _SPECS_MAX:
            _SPECS.clear()
        _SPECS[key] = idx
    return idx


# Constant bounds are the same array objects every step (a compiled plan's baked Const
# values: read-only and owning their data, which nothing makes writeable again): their
# spec is found by identity, without hashing their bytes. An entry holds its arrays, so
# that their ids are not reused while it lives; only frozen arrays are entered.
BY_ID: dict[tuple[Any, ...], tuple[Any, ...]] = {}


def _frozen(a: Any) -> bool:
    return type(a) is np.ndarray and not a.flags.writeable and a.base is None


def remember(key: tuple[Any, ...], arrays: tuple[Any, ...], idx: tuple) -> tuple:
    """Enters `idx` under an identity `key` of `arrays` when they are all frozen;
    returns `idx`. A lookup must check that BY_ID[key] holds the very same arrays."""
    if all(_frozen(a) for a in arrays):
        if len(BY_ID) >= _SPECS_MAX:
            BY_ID.clear()
        BY_ID[key] = (*arrays, idx)
    return idx

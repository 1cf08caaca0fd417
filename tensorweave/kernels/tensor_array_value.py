"""The run-time value a TensorArray's flow tensor carries: an immutable list of
elements, with TF 1.x's TensorArray checks and error wording.

TF 1.x keeps a TensorArray's elements in a per-step resource and threads a scalar
float "flow" through its ops to order them. Our `tf.while_loop` and its gradient
replay the loop body functionally (WhileGrad re-runs a copy of the body on the
recorded states), which would re-run a resource's writes; so here the flow itself
holds the elements, as a `variant` scalar whose value is a `TensorArrayValue`.
Every write makes a new value sharing the untouched elements (a tuple of numpy
arrays, copied by reference), so old flows stay valid and replaying is harmless.

Gradient flows are `TensorArrayValue`s too (`is_grad`): an element never written is
zero, and adding two gradient values adds them element by element.

Example:
    >>> v = TensorArrayValue.new("ta", size=2, dtype=np.float32)
    >>> v.write(0, np.float32(1.0)).read(0)
    1.0
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tensorweave.framework import errors


def shape_string(dims: Sequence[int | None] | None) -> str:
    """A shape as TF's kernels print it: `[2,3]`, `[?,3]`, `<unknown>`."""
    if dims is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in dims) + "]"


def unwrap(v: Any) -> Any:
    """The TensorArrayValue inside a kernel argument (loop kernels may wrap it in a
    0-d object array)."""
    if isinstance(v, np.ndarray) and v.dtype == object and v.ndim == 0:
        v = v.item()
    if not isinstance(v, TensorArrayValue):
        raise errors.InvalidArgumentError(
            None, None, f"Expected a TensorArray flow (a variant holding a TensorArray), got "
            f"{type(v).__name__}; pass the `flow` of a tf.TensorArray")
    return v


class TensorArrayValue:
    """An immutable TensorArray: elements (None where unwritten) and its settings."""

    __slots__ = ("name", "dtype", "items", "dynamic", "element_shape", "identical",
                 "is_grad", "clear_after_read", "root", "nz")

    def __init__(self, name: str, dtype: Any, items: tuple, dynamic: bool,
                 element_shape: list | None, identical: bool, is_grad: bool,
                 clear_after_read: bool = False, root: Any = None,
                 nz: tuple | None = None) -> None:
        self.name = name
        self.dtype = np.dtype(dtype)
        self.items = items
        self.dynamic = dynamic
        self.element_shape = element_shape
        self.identical = identical
        self.is_grad = is_grad
        self.clear_after_read = clear_after_read
        # Shared by every value derived from one creation: the key of its reads.
        self.root = root if root is not None else _Root()
        # The written indices, kept for gradient arrays (mostly empty: adding two is
        # then O(written) instead of a pass over every element).
        self.nz = nz

    @classmethod
    def new(cls, name: str, size: int, dtype: Any, dynamic: bool = False,
            element_shape: list | None = None, identical: bool = True,
            clear_after_read: bool = False) -> "TensorArrayValue":
        if size < 0:
            raise errors.InvalidArgumentError(None, None, f"TensorArray {name}: Size should "
                                              f"be >= 0, got {size}.")
        return cls(name, dtype, (None,) * size, dynamic, element_shape, identical, False,
                   clear_after_read)

    def _replace(self, items: tuple, element_shape: list | None = None,
                 nz: tuple | None = None) -> "TensorArrayValue":
        es = self.element_shape if element_shape is None else element_shape
        return TensorArrayValue(self.name, self.dtype, items, self.dynamic, es,
                                self.identical, self.is_grad, self.clear_after_read,
                                self.root, nz)

    def written(self) -> tuple:
        """The indices written so far."""
        if self.nz is None:
            return tuple(i for i, x in enumerate(self.items) if x is not None)
        return self.nz

    def zeros_grad(self) -> "TensorArrayValue":
        """A gradient value of the same size with nothing written (all zeros)."""
        return TensorArrayValue(self.name + "@grad", self.dtype, (None,) * len(self.items),
                                True, self.element_shape, False, True, nz=())

    def note_reads(self, step: Any, indices: Sequence[int]) -> None:
        """TF 1.x's clear_after_read: an element read once in a step cannot be read again
        (except by a loop gradient replaying its forward body, see REPLAYING)."""
        if not self.clear_after_read or self.is_grad or step.__dict__.get(REPLAYING):
            return
        seen = step.__dict__.setdefault("_tw_ta_cleared", set())
        for i in indices:
            key = (self.root, int(i))
            if key in seen:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Could not read index {int(i)} "
                    "twice because it was cleared after a previous read (perhaps try "
                    "setting clear_after_read = false?).")
            seen.add(key)

    @property
    def size(self) -> int:
        return len(self.items)

    # ---- writes ---------------------------------------------------------------
    def _check_value(self, index: int, value: np.ndarray) -> None:
        if value.dtype != self.dtype and not (value.dtype.kind in "OSU"
                                              and self.dtype.kind in "OSU"):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray dtype is {_dtname(self.dtype)} but Op is trying "
                f"to write dtype {_dtname(value.dtype)}.")
        es = self.element_shape
        if self.identical and es is not None and (
                len(es) != value.ndim
                or any(d is not None and d >= 0 and d != s for d, s in zip(es, value.shape))):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Could not write to TensorArray index "
                f"{index} because the value shape is {shape_string(value.shape)} which is "
                f"incompatible with the TensorArray's inferred element shape: "
                f"{shape_string(es)} (consider setting infer_shape=False).")

    def write_many(self, indices: Sequence[int], values: Sequence[Any]) -> "TensorArrayValue":
        items = list(self.items)
        es = self.element_shape
        fresh: list[int] = []
        for index, value in zip(indices, values):
            index = int(index)
            value = np.asarray(value)
            if index < 0 or (index >= len(items) and not self.dynamic):
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Tried to write to index {index} "
                    f"but array is not resizeable and size is: {len(items)}")
            self._check_value(index, value)
            if index >= len(items):
                items.extend([None] * (index + 1 - len(items)))
            if items[index] is None:
                fresh.append(index)
            else:
                if not self.is_grad:
                    raise errors.InvalidArgumentError(
                        None, None, f"TensorArray {self.name}: Could not write to "
                        f"TensorArray index {index} because it has already been written to.")
                value = _add(items[index], value, self.name, index)
            items[index] = value
            if self.identical and (es is None or any(d is None or d < 0 for d in es)):
                es = list(value.shape)
        nz = None if self.nz is None else self.nz + tuple(fresh)
        return self._replace(tuple(items), es, nz)

    def write(self, index: int, value: Any) -> "TensorArrayValue":
        return self.write_many([index], [value])

    # ---- reads ----------------------------------------------------------------
    def _shape_or(self, known: list | None) -> list | None:
        """The element shape, or the graph's static one (`known`) where the value
        has none: a shape learned by a write that never ran (TF keeps it too)."""
        es = self.element_shape
        if es is None or any(d is None or d < 0 for d in es):
            return known if known is not None else es
        return es

    def read(self, index: int, like: Any = None, known: list | None = None) -> np.ndarray:
        """Element `index`; unwritten: zeros of the known element shape (of `like` for
        a gradient value), TF 1.x's rule, else TF's error."""
        index = int(index)
        if index < 0 or (index >= len(self.items) and not self.is_grad):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Tried to read from index {index} but "
                f"array size is: {len(self.items)}")
        item = self.items[index] if index < len(self.items) else None
        if item is not None:
            return item
        if like is not None:
            return np.zeros(np.shape(like), dtype=self.dtype)
        es = self._shape_or(known)
        if es is None or any(d is None or d < 0 for d in es):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray {self.name}: Could not read from TensorArray index "
                f"{index}.  Furthermore, the element shape is not fully defined: "
                f"{shape_string(es)}.  It is possible you are working with a resizeable "
                "TensorArray and stop_gradients is not allowing the gradients to be "
                "written.  If you set the full element_shape property on the forward "
                "TensorArray, the proper all-zeros tensor will be returned instead of "
                "incurring this error.")
        return np.zeros(es, dtype=self.dtype)

    def gather(self, indices: Sequence[int], like: Any = None,
               known: list | None = None) -> np.ndarray:
        idx = [int(i) for i in np.asarray(indices).reshape(-1)]
        if not idx:
            es = self._shape_or(known)
            if es is None or any(d is None or d < 0 for d in es):
                raise errors.UnimplementedError(
                    None, None, f"TensorArray {self.name}: TensorArray has size zero, but "
                    f"element shape {shape_string(es)} is not fully defined. Currently only "
                    "static shapes are supported when packing zero-size TensorArrays.")
            return np.zeros([0] + list(es), dtype=self.dtype)
        rows = [self.read(i, None if like is None else np.asarray(like)[k], known)
                for k, i in enumerate(idx)]
        first = np.shape(rows[0])
        for i, r in zip(idx, rows):
            if np.shape(r) != first:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: TensorArray has inconsistent "
                    f"shapes.  Index 0 has shape: {shape_string(first)} but index {i} has "
                    f"shape: {shape_string(np.shape(r))}")
        return np.stack(rows).astype(self.dtype, copy=False)

    def concat(self, lengths: Sequence[int] | None = None, like: Any = None,
               known_tail: list | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The elements joined along dim 0, and each one's length."""
        parts = []
        offset = 0
        for i in range(len(self.items)):
            piece_like = None
            if lengths is not None and like is not None:
                n = int(lengths[i])
                piece_like = np.asarray(like)[offset:offset + n]
                offset += n
            v = self.read(i, piece_like)
            if v.ndim == 0:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: Concat saw a scalar shape at index "
                    f"{i} but requires at least vectors.  Did you mean to call pack?")
            parts.append(v)
        if not parts:
            es = self.element_shape
            tail = known_tail if es is None and known_tail is not None else \
                [] if es is None else es[1:]
            tail = [0 if d is None or d < 0 else d for d in tail]
            return np.zeros([0] + tail, self.dtype), np.zeros([0], np.int64)
        for i, p in enumerate(parts[1:], 1):
            if p.shape[1:] != parts[0].shape[1:]:
                raise errors.InvalidArgumentError(
                    None, None, f"TensorArray {self.name}: TensorArray has inconsistent "
                    f"shapes.  Index 0 has (excepting dimension 0) shape: "
                    f"{shape_string(parts[0].shape[1:])} but index {i} has (excepting "
                    f"dimension 0) shape: {shape_string(p.shape[1:])}")
        return (np.concatenate(parts).astype(self.dtype, copy=False),
                np.asarray([p.shape[0] for p in parts], np.int64))

    def split(self, value: Any, lengths: Any) -> "TensorArrayValue":
        value = np.asarray(value)
        lengths = np.asarray(lengths)
        if lengths.ndim != 1:
            raise errors.InvalidArgumentError(
                None, None, f"Expected lengths to be a vector, received shape: "
                f"{shape_string(lengths.shape)}")
        if value.ndim < 1:
            raise errors.InvalidArgumentError(
                None, None, f"Expected value to be at least a vector, but received shape: "
                f"{shape_string(value.shape)}")
        if int(lengths.sum()) != value.shape[0]:
            raise errors.InvalidArgumentError(
                None, None, f"Expected sum of lengths to be equal to values.shape[0], but "
                f"sum of lengths is {int(lengths.sum())} and value's shape is: "
                f"{shape_string(value.shape)}")
        if not self.dynamic and len(lengths) != len(self.items):
            raise errors.InvalidArgumentError(
                None, None, f"TensorArray's size is not equal to the size of lengths "
                f"({len(self.items)} vs. {len(lengths)}), and the TensorArray is not marked "
                "as dynamically resizeable")
        bounds = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        pieces = [value[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]
        return self.write_many(range(len(pieces)), pieces)

    # ---- gradients ------------------------------------------------------------
    def __radd__(self, other: Any) -> "TensorArrayValue":
        # a zero start (a loop gradient's running sum of a captured array's gradient)
        if isinstance(other, TensorArrayValue):
            return other + self
        if np.ndim(other) == 0 and not np.asarray(other, dtype=object).item():
            return self
        return NotImplemented

    def __add__(self, other: Any) -> "TensorArrayValue":
        if isinstance(other, np.ndarray) and other.dtype == object and other.ndim == 0:
            other = other.item()
        if not isinstance(other, TensorArrayValue):
            return self.__radd__(other)
        n = max(len(self.items), len(other.items))
        a = self.items + (None,) * (n - len(self.items))
        b = other.items + (None,) * (n - len(other.items))
        # Gradient arrays are mostly unwritten (a loop step writes one element): copy
        # the fuller side and add in the other's written elements.
        wa, wb = self.written(), other.written()
        if len(wa) < len(wb):
            a, b, wa, wb = b, a, wb, wa
        items = list(a)
        fresh = []
        for i in wb:
            if items[i] is None:
                items[i] = b[i]
                fresh.append(i)
            else:
                items[i] = _add(items[i], b[i], self.name, i)
        return self._replace(tuple(items), nz=wa + tuple(fresh))

    def __repr__(self) -> str:
        written = sum(x is not None for x in self.items)
        kind = "gradient " if self.is_grad else ""
        return (f"<{kind}TensorArray {self.name!r} size={len(self.items)} "
                f"written={written} dtype={_dtname(self.dtype)}>")


# Step attribute a loop gradient kernel raises while it replays its forward body, so
# the replayed reads are not taken for second reads.
REPLAYING = "_tw_ta_replaying"


class _Root:
    """Identity shared by the values of one TensorArray creation."""

    __slots__ = ("__weakref__",)


def _add(a: np.ndarray, b: np.ndarray, name: str, index: int) -> np.ndarray:
    if np.shape(a) != np.shape(b):
        raise errors.InvalidArgumentError(
            None, None, f"TensorArray {name}: Could not aggregate to TensorArray index "
            f"{index} because the existing shape is {shape_string(np.shape(a))} but the new "
            f"input shape is {shape_string(np.shape(b))}.")
    return np.add(a, b)


def _dtname(dt: np.dtype) -> str:
    if dt.kind in "OSU":
        return "string"
    return {"f": {2: "half", 4: "float", 8: "double"}}.get(dt.kind, {}).get(
        dt.itemsize, dt.name)

"""Static tensor shapes with unknown dimensions (None), as TF's TensorShape.

Example:
    >>> TensorShape([None, 3]).is_compatible_with([2, 3])
    True
"""
from __future__ import annotations

from typing import Any, Iterable, Iterator

from tensorweave.framework.dimension import (
    Dimension as Dimension, dim_int, as_dimension as as_dimension, check_dim_size,
    dimension_value as dimension_value)
from tensorweave.framework.proto import graph_pb2


_V2_OVERRIDE: bool | None = None


def enable_v2_tensorshape() -> None:
    """Makes `shape[i]` and iteration give ints/None (TF 2.x) instead of Dimensions.

    Example:
        >>> tf.enable_v2_tensorshape()
        >>> tf.placeholder(tf.float32, [None, 3]).shape[1]      # 3, not Dimension(3)
    """
    global _V2_OVERRIDE
    _V2_OVERRIDE = True


def disable_v2_tensorshape() -> None:
    """Restores TF 1.x shapes (the default): `shape[i]` is a `Dimension`."""
    global _V2_OVERRIDE
    _V2_OVERRIDE = False


def _v2_behavior() -> bool:
    return bool(_V2_OVERRIDE)


def dimension_at_index(shape: "TensorShape", index: int) -> Dimension:
    """`shape`'s dimension `index` as a Dimension, unknown when the rank is.

    Example:
        >>> tf.dimension_at_index(x.shape, 0).value
    """
    if not isinstance(shape, TensorShape):
        raise TypeError(f"dimension_at_index expects a TensorShape, got {shape!r}")
    if shape._dims is None:
        return Dimension(None)
    return Dimension(shape._dims[index])


def _dim_value(d: Any) -> int | None:
    """A dimension as an int or None (-1 and unknown Dimensions are None).

    Raises:
        ValueError: below -1 or past int64, naming the value.
        TypeError: not a size.
    """
    if isinstance(d, Dimension):
        return d.value
    if d is None:
        return None
    v = dim_int(d)
    if v == -1:
        return None
    return check_dim_size(v, d)


class TensorShape:
    """A possibly-partial shape: unknown rank (`dims is None`) or a list of dims.

    As in TF 1.x, `shape[i]`, iteration and `dims` give `Dimension`s (`.value` is
    an int or None); `as_list()` gives ints and None. After
    `tf.enable_v2_tensorshape()`, `shape[i]` and iteration give ints and None.

    Example:
        >>> s = TensorShape([None, 3])
        >>> s[1].value, s[0].value, s.as_list()
        (3, None, [None, 3])
    """

    __slots__ = ("_dims",)
    _dims: tuple[int | None, ...] | None

    def __init__(self, dims: Any) -> None:
        if isinstance(dims, TensorShape):
            self._dims = dims._dims
        elif dims is None:
            self._dims = None
        elif isinstance(dims, (str, bytes)):
            raise TypeError(f"A string has ambiguous TensorShape, please wrap in a list or "
                            f"convert to an int: {dims!r}")
        elif isinstance(dims, graph_pb2.TensorShapeProto):
            self._dims = None if dims.unknown_rank else tuple(
                _dim_value(d.size) for d in dims.dim)
        elif isinstance(dims, (int, Dimension)) and not isinstance(dims, bool):
            self._dims = (_dim_value(dims),)
        else:
            try:
                items = iter(dims)
            except TypeError:
                self._dims = (_dim_value(dims),)  # a lone int-like (numpy int)
            else:
                self._dims = tuple(_dim_value(d) for d in items)

    @property
    def dims(self) -> list[Dimension] | None:
        """The dimensions as `Dimension`s, or None when the rank is unknown."""
        return None if self._dims is None else [Dimension(d) for d in self._dims]

    @property
    def ndims(self) -> int | None:
        return None if self._dims is None else len(self._dims)

    rank = ndims

    def __len__(self) -> int:
        if self._dims is None:
            raise ValueError("Cannot take the length of shape with unknown rank.")
        return len(self._dims)

    def __iter__(self) -> Iterator[Any]:
        if self._dims is None:
            raise ValueError("Cannot iterate over a shape with unknown rank.")
        if _v2_behavior():
            return iter(self._dims)
        return iter([Dimension(d) for d in self._dims])

    def __getitem__(self, key: Any) -> Any:
        """`shape[i]`: a Dimension (an int or None under v2 shapes); a slice: a TensorShape.

        Raises:
            ValueError: a slice with a step on a shape of unknown rank.
        """
        if self._dims is None:
            if not isinstance(key, slice):
                return None if _v2_behavior() else Dimension(None)
            if key.step is not None:
                raise ValueError("Steps are not yet handled")
            start = 0 if key.start is None else key.start
            if key.stop is None or start < 0 or key.stop < 0:
                return TensorShape(None)
            return unknown_shape(max(key.stop - start, 0))
        if isinstance(key, slice):
            return TensorShape(self._dims[key])
        d = self._dims[key]
        return d if _v2_behavior() else Dimension(d)

    def __bool__(self) -> bool:
        return self._dims is not None

    def is_fully_defined(self) -> bool:
        return self._dims is not None and all(d is not None for d in self._dims)

    def num_elements(self) -> int | None:
        if not self.is_fully_defined():
            return None
        n = 1
        for d in self._dims:  # type: ignore[union-attr]
            n *= d  # type: ignore[operator]
        return n

    def as_list(self) -> list[int | None]:
        if self._dims is None:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self._dims)

    def is_compatible_with(self, other: Any) -> bool:
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return True
        if len(self._dims) != len(other._dims):
            return False
        return all(a is None or b is None or a == b for a, b in zip(self._dims, other._dims))

    def merge_with(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None:
            return other
        if other._dims is None:
            return self
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {other} are not compatible")
        return TensorShape([a if a is not None else b for a, b in zip(self._dims, other._dims)])

    def assert_is_compatible_with(self, other: Any) -> None:
        if not self.is_compatible_with(other):
            raise ValueError(f"Shapes {self} and {as_shape(other)} are incompatible")

    def assert_has_rank(self, rank: int) -> None:
        if self._dims is not None and len(self._dims) != rank:
            raise ValueError(f"Shape {self} must have rank {rank}")

    def with_rank(self, rank: int) -> "TensorShape":
        if self._dims is None:
            return unknown_shape(rank)
        self.assert_has_rank(rank)
        return self

    def with_rank_at_least(self, rank: int) -> "TensorShape":
        if self._dims is not None and len(self._dims) < rank:
            raise ValueError(f"Shape {self} must have rank at least {rank}")
        return self

    def with_rank_at_most(self, rank: int) -> "TensorShape":
        """`self`, checked to have at most `rank` dims when its rank is known.

        Raises:
            ValueError: more dims than `rank`.
        """
        if self._dims is not None and len(self._dims) > rank:
            raise ValueError(f"Shape {self} must have rank at most {rank}")
        return self

    def assert_same_rank(self, other: Any) -> None:
        """Raises ValueError when both ranks are known and differ."""
        other = as_shape(other)
        if self._dims is not None and other._dims is not None and \
                len(self._dims) != len(other._dims):
            raise ValueError(f"Shapes {self} and {other} must have the same rank")

    def assert_is_fully_defined(self) -> None:
        """Raises ValueError when a dim (or the rank) is unknown."""
        if not self.is_fully_defined():
            raise ValueError(f"Shape {self} is not fully defined")

    def most_specific_compatible_shape(self, other: Any) -> "TensorShape":
        """The most specific shape both `self` and `other` are compatible with.

        Example:
            >>> TensorShape([2, 1]).most_specific_compatible_shape([5, 1]).as_list()
            [None, 1]
        """
        other = as_shape(other)
        if self._dims is None or other._dims is None or len(self._dims) != len(other._dims):
            return TensorShape(None)
        return TensorShape([a if a is not None and a == b else None
                            for a, b in zip(self._dims, other._dims)])

    def concatenate(self, other: Any) -> "TensorShape":
        other = as_shape(other)
        if self._dims is None or other._dims is None:
            return TensorShape(None)
        return TensorShape(self._dims + other._dims)

    def __add__(self, other: Any) -> "TensorShape":
        return self.concatenate(other)

    def __eq__(self, other: object) -> bool:
        try:
            other = as_shape(other)
        except (TypeError, ValueError):
            return NotImplemented
        return self._dims == other._dims

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(self._dims)

    def __repr__(self) -> str:
        if self._dims is None:
            return "TensorShape(None)"
        if _v2_behavior():
            return f"TensorShape({list(self._dims)})"
        return f"TensorShape({self.dims})"

    def __radd__(self, other: Any) -> "TensorShape":
        return as_shape(other).concatenate(self)

    def __reduce__(self) -> tuple[type, tuple[Any]]:
        return TensorShape, (self.dims,)

    def __str__(self) -> str:
        if self._dims is None:
            return "<unknown>"
        inner = ", ".join("?" if d is None else str(d) for d in self._dims)
        return f"({inner},)" if len(self._dims) == 1 else f"({inner})"

    def as_proto(self) -> Any:
        proto = graph_pb2.TensorShapeProto()
        if self._dims is None:
            proto.unknown_rank = True
        else:
            for d in self._dims:
                proto.dim.add(size=-1 if d is None else d)
        return proto


def as_shape(shape: Any) -> TensorShape:
    """Converts a list, tuple, int, None or TensorShape to a TensorShape."""
    return shape if isinstance(shape, TensorShape) else TensorShape(shape)


def unknown_shape(rank: int | None = None, **kwargs: Any) -> TensorShape:
    """A shape of unknown dims: of unknown rank, or of `rank` (`ndims=` also accepted).

    Raises:
        TypeError: an argument other than `rank`/`ndims`.
    """
    if rank is None and "ndims" in kwargs:
        rank = kwargs.pop("ndims")
    if kwargs:
        raise TypeError(f"unknown_shape() got unexpected arguments: {sorted(kwargs)}")
    return TensorShape(None if rank is None else [None] * rank)


def scalar() -> TensorShape:
    return TensorShape([])


def vector(length: Any) -> TensorShape:
    """The shape [length] (length may be None)."""
    return TensorShape([length])


def matrix(rows: Any, cols: Any) -> TensorShape:
    """The shape [rows, cols] (either may be None)."""
    return TensorShape([rows, cols])


def broadcast_shapes(a: TensorShape, b: TensorShape) -> TensorShape:
    """NumPy broadcasting of two static shapes; None where it cannot be known.

    Raises:
        ValueError: when two known dimensions cannot broadcast.
    """
    a, b = as_shape(a), as_shape(b)
    if a.ndims is None or b.ndims is None:
        return TensorShape(None)
    da: list[int | None] = list(a._dims or ())
    db: list[int | None] = list(b._dims or ())
    n = max(len(da), len(db))
    ones: list[int | None] = [1] * n
    da = ones[:n - len(da)] + da
    db = ones[:n - len(db)] + db
    out: list[int | None] = []
    for x, y in zip(da, db):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y if x is None else None)
        elif x == y:
            out.append(x)
        else:
            raise ValueError(f"Incompatible shapes for broadcasting: {a} and {b}")
    return TensorShape(out)


def dims_from(iterable: Iterable[Any]) -> list[int | None]:
    return [_dim_value(d) for d in iterable]


def plain_dims(shape: Any) -> list[int | None] | None:
    """`shape`'s dims as ints and None (None for an unknown rank), whatever the shape
    behaviour: the form op attrs and internal shape code use.

    Example:
        >>> plain_dims(TensorShape([None, 3])), plain_dims(None)
        ([None, 3], None)
    """
    dims = as_shape(shape)._dims
    return None if dims is None else list(dims)


def known_values(value: Any) -> Any:
    """`value` with each Dimension and TensorShape in it (nested lists/tuples too)
    replaced by its int sizes: what converting a shape or dimension to a tensor needs.

    Raises:
        ValueError: an unknown Dimension or a partially known TensorShape, named (TF's
            wording).
    """
    if isinstance(value, Dimension):
        if value.value is None:
            raise ValueError("Cannot convert an unknown Dimension to a Tensor: ?")
        return value.value
    if isinstance(value, TensorShape):
        if not value.is_fully_defined():
            raise ValueError(f"Cannot convert a partially known TensorShape {value} to a "
                             "Tensor.")
        return value.as_list()
    if isinstance(value, (list, tuple)) and any(
            isinstance(v, (Dimension, TensorShape, list, tuple)) for v in value):
        return [known_values(v) for v in value]
    return value

"""One dimension of a static shape, as TF 1.x's `tf.Dimension`.

In TF 1.x `shape[i]` is a `Dimension`: `.value` is the size or None (unknown),
arithmetic with ints and Dimensions keeps "unknown" unknown, and comparisons
with an unknown side answer None. Sizes are signed 64-bit, as TF's.

Example:
    >>> d = Dimension(3)
    >>> (d * 2).value, (d + Dimension(None)).value, d == 3
    (6, None, True)
"""
from __future__ import annotations

import operator
from typing import Any, Callable

# TF keeps every dimension in an int64; -1 on the wire means "unknown".
MAX_DIM = 2 ** 63 - 1


def check_dim_size(value: int, what: Any = None) -> int:
    """`value` if TF can hold it as a dimension (0 <= value < 2**63).

    Raises:
        ValueError: a negative size or one past int64, naming it.
    """
    if value < 0:
        raise ValueError(f"Dimension {what if what is not None else value} must be >= 0 "
                         "(None, or -1 in a shape list, means unknown).")
    if value > MAX_DIM:
        raise ValueError(f"Dimension {value} is too large: TensorFlow dimensions are signed "
                         f"64-bit, at most {MAX_DIM} (2**63 - 1).")
    return value


def dim_int(value: Any) -> int:
    """An int from an int-like (numpy ints, __index__) or a numeric string, as TF 1.x."""
    if isinstance(value, (str, bytes)):
        try:
            return int(value)
        except ValueError:
            raise TypeError(f"Cannot convert {value!r} to a Dimension: not an integer "
                            "string.") from None
    if isinstance(value, float):
        if value != int(value):
            raise ValueError(f"Ambiguous dimension: {value} (a dimension is an integer).")
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        pass
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise TypeError(f"Cannot convert {value!r} (a {type(value).__name__}) to a "
                        "Dimension: pass an int or None.") from None
    if as_int != value:
        raise ValueError(f"Ambiguous dimension: {value!r} (a dimension is an integer).")
    return as_int


class Dimension:
    """The size of one dimension of a `TensorShape`, or unknown.

    `value` is an int or None. `==`, `!=`, `<`, `<=`, `>`, `>=` answer None when
    either side is unknown; `+ - * // %` with ints or Dimensions give a Dimension,
    unknown if either side is. `/` is refused (use `//`), as TF does. Dimensions
    are not hashable (TF's are not either).

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 3])
        >>> x.get_shape()[-1].value, x.get_shape()[0].value
        (3, None)
    """

    __slots__ = ("_value",)
    _value: int | None

    def __init__(self, value: Any) -> None:
        if value is None:
            self._value = None
        elif isinstance(value, Dimension):
            self._value = value._value
        elif hasattr(value, "as_numpy_dtype"):  # a DType is not a size
            raise TypeError(f"Cannot convert {value} to Dimension")
        else:
            self._value = check_dim_size(dim_int(value))

    @property
    def value(self) -> int | None:
        """The size, or None if it is unknown."""
        return self._value

    def __repr__(self) -> str:
        return f"Dimension({self._value!r})"

    def __str__(self) -> str:
        return "?" if self._value is None else str(self._value)

    def __int__(self) -> int:
        if self._value is None:
            raise TypeError("int() of an unknown Dimension (its value is None); check "
                            "`.value is not None` first or use tf.shape() for the run-time size.")
        return self._value

    __index__ = __int__

    def __float__(self) -> float:
        return float(int(self))

    def __bool__(self) -> bool:
        # An unknown or zero size is falsy, so `dim or default` reads like TF 2.x.
        return bool(self._value)

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type, tuple[int | None]]:
        return Dimension, (self._value,)

    def _compare(self, other: Any, op: Callable[[int, int], bool]) -> Any:
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return None
        return op(self._value, other._value)

    def __eq__(self, other: object) -> Any:
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> Any:
        return self._compare(other, operator.ne)

    def __lt__(self, other: Any) -> Any:
        return self._compare(other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return self._compare(other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return self._compare(other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return self._compare(other, operator.ge)

    def is_compatible_with(self, other: Any) -> bool:
        """True when either side is unknown or both have the same size."""
        other = as_dimension(other)
        return self._value is None or other._value is None or self._value == other._value

    def assert_is_compatible_with(self, other: Any) -> None:
        """Raises ValueError when `other` has a different known size."""
        if not self.is_compatible_with(other):
            raise ValueError(f"Dimensions {self} and {as_dimension(other)} are not compatible")

    def merge_with(self, other: Any) -> "Dimension":
        """The known one of the two sizes (they must be compatible).

        Raises:
            ValueError: both known and different.
        """
        other = as_dimension(other)
        self.assert_is_compatible_with(other)
        return Dimension(other._value if self._value is None else self._value)

    def _arith(self, other: Any, op: Callable[[int, int], int], reverse: bool) -> Any:
        try:
            other = as_dimension(other)
        except (TypeError, ValueError):
            return NotImplemented
        if self._value is None or other._value is None:
            return Dimension(None)
        a, b = (other._value, self._value) if reverse else (self._value, other._value)
        return Dimension(op(a, b))

    def __add__(self, other: Any) -> Any:
        return self._arith(other, operator.add, False)

    def __radd__(self, other: Any) -> Any:
        return self._arith(other, operator.add, True)

    def __sub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub, False)

    def __rsub__(self, other: Any) -> Any:
        return self._arith(other, operator.sub, True)

    def __mul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul, False)

    def __rmul__(self, other: Any) -> Any:
        return self._arith(other, operator.mul, True)

    def __floordiv__(self, other: Any) -> Any:
        return self._arith(other, operator.floordiv, False)

    def __rfloordiv__(self, other: Any) -> Any:
        return self._arith(other, operator.floordiv, True)

    def __mod__(self, other: Any) -> Any:
        return self._arith(other, operator.mod, False)

    def __rmod__(self, other: Any) -> Any:
        return self._arith(other, operator.mod, True)

    def __truediv__(self, other: Any) -> Any:
        raise TypeError(f"unsupported operand type(s) for /: 'Dimension' and "
                        f"'{type(other).__name__}', please use // instead")

    def __rtruediv__(self, other: Any) -> Any:
        raise TypeError(f"unsupported operand type(s) for /: '{type(other).__name__}' and "
                        "'Dimension', please use // instead")


def as_dimension(value: Any) -> Dimension:
    """`value` as a Dimension (a Dimension is returned as it is; None is unknown)."""
    return value if isinstance(value, Dimension) else Dimension(value)


def dimension_value(dimension: Any) -> Any:
    """The plain value of a dimension: an int or None; anything else as it is.

    Works under both shape behaviours (`shape[i]` a Dimension, or an int).

    Example:
        >>> tf.dimension_value(x.get_shape()[0])     # None for an unknown batch
    """
    return dimension._value if isinstance(dimension, Dimension) else dimension

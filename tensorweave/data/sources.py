"""`tf.data.Dataset`'s sources: `from_tensor_slices`, `from_tensors`, `from_generator`
and `range` (the file sources are readers.py and text_readers.py).

Example:
    >>> ds = tf.data.Dataset.from_tensor_slices(({"a": [1, 2]}, [3.0, 4.0]))
    >>> tf.data.Dataset.range(1, 6, 2)   # 1, 3, 5
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.data.dataset import (
    Dataset, Element, Env, int_args, register_impl, resolve_ints)
from tensorweave.data.nest import Spec, flatten, map_structure, pack
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape


def _to_tensors(tensors: Any) -> Any:
    if isinstance(tensors, Dataset):
        raise TypeError("Pass tensors to a Dataset source, not a Dataset.")
    return map_structure(lambda v: v if isinstance(v, Tensor) else convert_to_tensor(v),
                         tensors)


@register_impl
class TensorSliceDataset(Dataset):
    def __init__(self, tensors: Any) -> None:
        tensors = _to_tensors(tensors)
        flat = flatten(tensors)
        for t in flat:
            if t.shape.ndims == 0:
                raise ValueError(f"from_tensor_slices needs tensors with at least one "
                                 f"dimension to slice; {t.name} is a scalar.")
        structure = map_structure(
            lambda t: Spec(t.dtype.base_dtype, TensorShape(None) if t.shape.ndims is None
                           else TensorShape(t.shape.as_list()[1:])), tensors)
        super().__init__(structure, flat)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        arrays = [np.asarray(v) for v in values]
        lengths = {a.shape[0] for a in arrays}
        if len(lengths) != 1:
            raise errors.InvalidArgumentError(
                None, None, "from_tensor_slices: all components must have the same size in "
                f"dimension 0; got shapes {[list(a.shape) for a in arrays]}.")
        for i in range(lengths.pop()):
            # a[i, ...] stays an array of a's dtype: np.array(bytes) would make a fixed-width
            # bytes_ array, which drops trailing NUL bytes (serialized protos end in them).
            yield tuple(np.array(a[i, ...]) for a in arrays)


@register_impl
class TensorDataset(Dataset):
    def __init__(self, tensors: Any) -> None:
        tensors = _to_tensors(tensors)
        super().__init__(map_structure(lambda t: Spec(t.dtype.base_dtype, t.shape), tensors),
                         flatten(tensors))

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        yield tuple(np.array(v) for v in values)


@register_impl
class GeneratorDataset(Dataset):
    def __init__(self, generator: Callable[..., Any], output_types: Any, output_shapes: Any,
                 args: Any) -> None:
        if not callable(generator):
            raise TypeError(f"from_generator needs a callable returning an iterable, got "
                            f"{generator!r}.")
        types = map_structure(lambda d: _dt.as_dtype(d).base_dtype, output_types)
        shapes = map_structure(lambda _: TensorShape(None), types) if output_shapes is None \
            else output_shapes
        flat_shapes = [as_shape(s) for s in _flatten_shapes(shapes, len(flatten(types)))]
        structure = pack(types, [Spec(d, s) for d, s in zip(flatten(types), flat_shapes)])
        super().__init__(structure)
        self._generator = generator
        self._args = tuple(args or ())

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        specs = self._specs()
        for item in self._generator(*self._args):
            leaves = flatten(item) if len(specs) > 1 or isinstance(item, dict) else [item]
            if len(leaves) != len(specs):
                raise errors.InvalidArgumentError(
                    None, None, f"from_generator: the generator yielded {item!r}, which does "
                    f"not match output_types {self.output_types}.")
            elem = []
            for i, (v, spec) in enumerate(zip(leaves, specs)):
                a = np.asarray(v, dtype=spec.dtype.as_numpy_dtype)
                if not spec.shape.is_compatible_with(a.shape):
                    raise errors.InvalidArgumentError(
                        None, None, f"from_generator: component {i} of {item!r} has shape "
                        f"{list(a.shape)}, expected {spec.shape} (output_shapes).")
                elem.append(a)
            yield tuple(elem)


def _flatten_shapes(shapes: Any, n: int) -> list[Any]:
    # A single shape may be given as a TensorShape or a list of dims.
    if n == 1 and (isinstance(shapes, (TensorShape, list)) or shapes is None):
        return [shapes]
    flat = flatten(shapes)
    if len(flat) != n:
        raise ValueError(f"output_shapes {shapes!r} does not match the {n} output_types.")
    return flat


@register_impl
class RangeDataset(Dataset):
    def __init__(self, *args: Any) -> None:
        if not 1 <= len(args) <= 3:
            raise ValueError(f"Dataset.range takes 1 to 3 integers (stop | start, stop[, "
                             f"step]), got {args!r}.")
        self._args, inputs = int_args(args, "Dataset.range")
        super().__init__(Spec(_dt.int64, TensorShape([])), inputs)

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        for i in range(*resolve_ints(self._args, values)):
            yield (np.array(i, dtype=np.int64),)

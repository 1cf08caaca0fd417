"""`tf.data.Iterator`: reads a Dataset's elements inside a graph, through the iterator
ops of `ops/dataset/iterator_ops.py`, and `make_one_shot_iterator` /
`make_initializable_iterator`.

Example:
    >>> it = tf.data.Dataset.range(3).make_initializable_iterator()
    >>> nxt = it.get_next()
    >>> sess.run(it.initializer); sess.run(nxt)
    0
"""
from __future__ import annotations

from typing import Any

from tensorweave.data.dataset import Dataset, HasStructure, register_impl
from tensorweave.data.nest import Spec, flatten, map_structure, pack, parts_to_sparse
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.ops.dataset.iterator_ops import register_dataset


def _struct_attrs(structure: Any) -> dict[str, Any]:
    specs = flatten(structure)
    return {"output_types": [s.dtype for s in specs],
            "output_shapes": [plain_dims(s.shape) for s in specs]}


def _check_no_placeholders(dataset: Dataset) -> None:
    seen: set[int] = set()
    stack: list[Operation] = [t.op for t in dataset._all_inputs()]
    while stack:
        op = stack.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        if op.type in ("Placeholder", "PlaceholderV2"):
            raise ValueError(f"make_one_shot_iterator does not support datasets that depend "
                             f"on placeholders ({op.name}); use make_initializable_iterator "
                             "and feed the placeholder when running its initializer.")
        stack.extend(t.op for t in op.inputs)


def _check_no_captured_variables(dataset: Dataset) -> None:
    """A function (map, filter, ...) reading a variable reads it per element, which a
    one-shot iterator, initialized once from values, cannot do: TF refuses it too."""
    for node in dataset._nodes():
        if not node._live_inputs:
            continue
        for t in node._inputs:
            if t.dtype.is_ref_dtype:
                raise ValueError(
                    "Failed to create a one-shot iterator for a dataset. "
                    "`Dataset.make_one_shot_iterator()` does not support datasets that "
                    "capture stateful objects, such as a `Variable` or `LookupTable`. In "
                    "these cases, use `Dataset.make_initializable_iterator()`. (A dataset "
                    f"function reads variable {t.op.name!r}.)")


@register_impl
class Iterator(HasStructure):
    """Reads the elements of a Dataset inside a graph.

    Use `Dataset.make_one_shot_iterator()`, `Dataset.make_initializable_iterator()`
    or `Iterator.from_structure(types, shapes)` + `make_initializer(dataset)`.

    Example:
        >>> it = tf.data.Iterator.from_structure(train.output_types, train.output_shapes)
        >>> init_train = it.make_initializer(train)
        >>> x = it.get_next()
    """

    def __init__(self, iterator_ref: Tensor, initializer: Operation | None,
                 structure: Any) -> None:
        self._iterator_ref = iterator_ref
        self._initializer = initializer
        self._structure = structure

    @classmethod
    def one_shot(cls, dataset: Dataset) -> "Iterator":
        _check_no_placeholders(dataset)
        _check_no_captured_variables(dataset)
        g = get_default_graph()
        attrs = dict(_struct_attrs(dataset._structure), dataset_id=register_dataset(dataset, g))
        ref = g.create_op("OneShotIterator", [dataset._all_inputs()], attrs,
                          name="OneShotIterator").outputs[0]
        return cls(ref, None, dataset._structure)

    @classmethod
    def initializable(cls, dataset: Dataset, shared_name: str | None = None) -> "Iterator":
        it = cls._new(dataset._structure, shared_name)
        it._initializer = it.make_initializer(dataset)
        return it

    @classmethod
    def _new(cls, structure: Any, shared_name: str | None) -> "Iterator":
        attrs = dict(_struct_attrs(structure), shared_name=shared_name or "")
        ref = get_default_graph().create_op("Iterator", [], attrs, name="Iterator").outputs[0]
        return cls(ref, None, structure)

    @staticmethod
    def from_structure(output_types: Any, output_shapes: Any = None,
                       shared_name: str | None = None, output_classes: Any = None
                       ) -> "Iterator":
        """An uninitialized iterator for datasets of this structure (reinitializable)."""
        types = map_structure(lambda d: _dt.as_dtype(d).base_dtype, output_types)
        flat_types = flatten(types)
        flat_shapes = [TensorShape(None)] * len(flat_types) if output_shapes is None else \
            ([as_shape(output_shapes)] if len(flat_types) == 1 and not isinstance(
                output_shapes, (tuple, dict)) else [as_shape(s) for s in flatten(output_shapes)])
        structure = pack(types, [Spec(d, s) for d, s in zip(flat_types, flat_shapes)])
        return Iterator._new(structure, shared_name)

    @property
    def initializer(self) -> Operation:
        if self._initializer is None:
            raise ValueError("This iterator has no initializer: one-shot iterators start on "
                             "first use, and from_structure iterators use make_initializer.")
        return self._initializer

    def make_initializer(self, dataset: Dataset, name: str | None = None) -> Operation:
        """An op that (re)starts this iterator on `dataset` (same types required).

        Raises:
            TypeError: if the dataset's types differ from the iterator's.
        """
        mine, theirs = flatten(self._structure), dataset._specs()
        if [s.dtype for s in mine] != [s.dtype for s in theirs]:
            raise TypeError(f"Expected a dataset of types {self.output_types}, got one of "
                            f"types {dataset.output_types}.")
        g = self._iterator_ref.graph
        return g.create_op("MakeIterator", [self._iterator_ref, dataset._all_inputs()],
                           {"dataset_id": register_dataset(dataset, g)},
                           name=name or "MakeIterator")

    def get_next(self, name: str | None = None) -> Any:
        """The next element as a nested structure of tensors; at the end, running it
        raises tf.errors.OutOfRangeError."""
        g = self._iterator_ref.graph
        op = g.create_op("IteratorGetNext", [self._iterator_ref],
                         _struct_attrs(self._structure), name=name or "IteratorGetNext")
        return parts_to_sparse(pack(self._structure, list(op.outputs)))


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """`tf.compat.v1.data.make_one_shot_iterator(dataset)`."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """`tf.compat.v1.data.make_initializable_iterator(dataset)`."""
    return dataset.make_initializable_iterator(shared_name)

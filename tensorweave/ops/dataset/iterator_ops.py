"""Iterators over Datasets: the Iterator / MakeIterator / OneShotIterator /
IteratorGetNext ops, the per-device iterator resource, and `tf.data.Iterator`.

The iterator's state is a resource in the ResourceMgr of the device its op is
placed on (so, per session for local sessions). Ops name their Dataset by a
process-unique id attribute looked up in a registry that the building graph
keeps alive; pipelines therefore run in the process that built them
(in-process servers included).

Example:
    >>> it = tf.data.Dataset.range(3).make_initializable_iterator()
    >>> nxt = it.get_next()
    >>> sess.run(it.initializer); sess.run(nxt)
    0
"""
from __future__ import annotations

import threading
import uuid
import weakref
from typing import Any

import numpy as np

from tensorweave.ops.dataset.dataset import Dataset, HasStructure, register_impl
from tensorweave.ops.dataset.structure import (
    Spec, flatten, map_structure, pack, parts_to_sparse)
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.graph import get_default_graph
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims

_DATASETS: "weakref.WeakValueDictionary[str, Dataset]" = weakref.WeakValueDictionary()
_KEEP: "weakref.WeakKeyDictionary[Any, list[Dataset]]" = weakref.WeakKeyDictionary()


def _register(dataset: Dataset, graph: Any) -> str:
    key = f"{type(dataset).__name__}_{uuid.uuid4().hex}"
    _DATASETS[key] = dataset
    _KEEP.setdefault(graph, []).append(dataset)  # alive as long as its graph
    return key


def _lookup_dataset(key: str) -> Dataset:
    ds = _DATASETS.get(key)
    if ds is None:
        raise errors.NotFoundError(
            None, None, f"Dataset {key} is not known in this process: tf.data pipelines run "
            "in the process that built them. Place the iterator on a local device or an "
            "in-process server's task.")
    return ds


class IteratorResource:
    """An iterator's state: the Python generator chain of its current initialization."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self._env: Any = None
        self._it: Any = None
        self.initialized = False

    def snapshot(self) -> np.ndarray:
        return np.array([b"", self.name.encode()], dtype=object)

    def initialize(self, dataset: Dataset, values: list[Any]) -> None:
        with self.lock:
            self._env = dataset._make_env(list(values))
            self._it = dataset._iter(self._env)
            self.initialized = True

    def initialize_once(self, dataset: Dataset, values: list[Any]) -> None:
        with self.lock:
            if not self.initialized:
                self._env = dataset._make_env(list(values))
                self._it = dataset._iter(self._env)
                self.initialized = True

    def get_next(self, ctx: Any, step: Any) -> tuple:
        with self.lock:  # generators are not thread-safe; one element at a time
            if not self.initialized:
                raise errors.FailedPreconditionError(
                    None, None, "GetNext() failed because the iterator has not been "
                    "initialized. Ensure that you have run the initializer operation for "
                    "this iterator before getting the next element.")
            if self._it is None:
                raise errors.OutOfRangeError(None, None, "End of sequence")
            self._env.ctx, self._env.step = ctx, step
            try:
                return next(self._it)
            except StopIteration:
                self._it = None
                raise errors.OutOfRangeError(None, None, "End of sequence") from None
            except BaseException:
                self._it = None  # a failed generator cannot resume
                raise


def _lookup_resource(ctx: Any, container: str, shared_name: str) -> IteratorResource:
    key = shared_name or ctx.name
    res = ctx.resources.lookup_or_create(container, key, lambda: IteratorResource(key))
    if not isinstance(res, IteratorResource):
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is a "
            f"{type(res).__name__}, not an iterator. Use another shared_name.")
    return res


def _ref_output(**attrs: Any) -> Any:
    return _dt.string._as_ref, TensorShape([2])


_STRUCT = {"output_types": REQUIRED, "output_shapes": None}

iterator_op = define_op("Iterator", attrs=dict(_STRUCT, container="", shared_name=""),
                        stateful=True)
iterator_op.shape(_ref_output)


@iterator_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, *, container: str, shared_name: str, **struct: Any) -> Any:
    return _lookup_resource(ctx, container, shared_name)


iterator_op.no_gradient()

one_shot_op = define_op("OneShotIterator", inputs=("components*",),
                        attrs=dict(_STRUCT, dataset_id=REQUIRED, container="", shared_name=""),
                        stateful=True)
one_shot_op.shape(lambda components, **attrs: _ref_output())


@one_shot_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, components: list[Any], *, dataset_id: str, container: str,
      shared_name: str, **struct: Any) -> Any:
    res = _lookup_resource(ctx, container, shared_name)
    res.initialize_once(_lookup_dataset(dataset_id), components)
    return res


one_shot_op.no_gradient()

# Components by reference: a dataset function's captured variables are read per
# element (transforms.CapturedInputs), the other inputs once here (Dataset._make_env).
make_iterator_op = define_op("MakeIterator", inputs=("&iterator", "&components*"),
                             attrs={"dataset_id": REQUIRED}, stateful=True)
make_iterator_op.shape(lambda it, components, dataset_id: [])


@make_iterator_op.kernel("CPU")
def _(res: IteratorResource, components: list[Any], *, dataset_id: str) -> None:
    res.initialize(_lookup_dataset(dataset_id), components)


make_iterator_op.no_gradient()

get_next_op = define_op("IteratorGetNext", inputs=("&iterator",), attrs=dict(_STRUCT),
                        stateful=True)


@get_next_op.shape
def _(it: Tensor, *, output_types: list[Any], output_shapes: Any) -> list:
    shapes = output_shapes or [None] * len(output_types)
    return [(_dt.as_dtype(d), as_shape(s)) for d, s in zip(output_types, shapes)]


@get_next_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, res: IteratorResource, *, output_types: list[Any],
      output_shapes: Any) -> Any:
    elem = res.get_next(ctx, step)
    return elem[0] if len(output_types) == 1 else elem


get_next_op.no_gradient()


# ---- Python API --------------------------------------------------------------------
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
        attrs = dict(_struct_attrs(dataset._structure), dataset_id=_register(dataset, g))
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
                           {"dataset_id": _register(dataset, g)}, name=name or "MakeIterator")

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

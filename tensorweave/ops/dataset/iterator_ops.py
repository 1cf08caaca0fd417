"""The Iterator / MakeIterator / OneShotIterator / IteratorGetNext ops and the
per-device iterator resource that runs a Dataset (`tf.data.Iterator`, the Python
side, is `tensorweave/data/iterator.py`).

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

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape

# A Dataset (tensorweave/data/dataset.py) is anything with `_make_env(values)` and
# `_iter(env)`: the kernels below call those two, and know no more of it.
_DATASETS: "weakref.WeakValueDictionary[str, Any]" = weakref.WeakValueDictionary()
_KEEP: "weakref.WeakKeyDictionary[Any, list[Any]]" = weakref.WeakKeyDictionary()


def register_dataset(dataset: Any, graph: Any) -> str:
    """The `dataset_id` attr naming `dataset` to this process's iterator kernels; the
    dataset stays alive as long as `graph`.

    Example:
        >>> attrs = {"dataset_id": register_dataset(ds, tf.get_default_graph())}
    """
    key = f"{type(dataset).__name__}_{uuid.uuid4().hex}"
    _DATASETS[key] = dataset
    _KEEP.setdefault(graph, []).append(dataset)  # alive as long as its graph
    return key


def _lookup_dataset(key: str) -> Any:
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

    def initialize(self, dataset: Any, values: list[Any]) -> None:
        with self.lock:
            self._env = dataset._make_env(list(values))
            self._it = dataset._iter(self._env)
            self.initialized = True

    def initialize_once(self, dataset: Any, values: list[Any]) -> None:
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

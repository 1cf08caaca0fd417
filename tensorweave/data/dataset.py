"""`tf.data.Dataset`: a description of an element stream, run by an iterator's kernel.

A Dataset is built in Python at graph-construction time. It records the
graph tensors it reads (slices of a placeholder, a map function's captured
tensors); the iterator's initializer op takes those tensors as inputs, and its
kernel turns the description into a chain of Python generators over NumPy
elements. Map and filter functions are traced once into FuncGraphs and called
per element through the device's function library. Nothing is pickled.

Example:
    >>> ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100, seed=1).batch(32)
    >>> it = ds.make_one_shot_iterator()
    >>> xb, yb = it.get_next()
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence, TypeVar

from tensorweave.data.nest import Spec, flatten, map_sparse_aware
from tensorweave.framework.sparse_tensor import SparseTensor
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape

Element = tuple  # a flat tuple of NumPy arrays


# The sources (sources.py) and transformations (transforms.py, nested.py) subclass
# Dataset and the Iterator (iterator.py) reads it; they register here, so this module
# imports none of them. Importing the package (tensorweave.data) registers them.
_IMPLS: dict[str, Any] = {}
_T = TypeVar("_T", bound=type)


def register_impl(obj: _T) -> _T:
    """Class decorator: makes `obj` available to Dataset's methods by its name."""
    _IMPLS[obj.__name__] = obj
    return obj


def _impl(name: str) -> Any:
    return _IMPLS[name]


class Env:
    """Run-time state of one initialized iterator: input values, kernel context, step.

    The pipeline's functions (map, filter, interleave, ...) run in a function
    library of this initialization's own (`library`), as TF instantiates them per
    iterator: their stateful kernels start afresh (a random op with an op seed
    replays its sequence on each initialization) and keep their state from one
    element to the next (each element draws new numbers).
    """

    def __init__(self, values: dict[int, list[Any]]) -> None:
        self.values = values
        self.ctx: Any = None
        self.step: Any = None
        self.epochs: dict[int, int] = {}  # per shuffle node: how many passes so far
        self.caches: dict[int, list[Any]] = {}  # per cache node: its complete first pass
        self.library: Any = None   # made on the first call, on the iterator's device

    def call(self, func_graph: Any, args: list[Any]) -> list[Any]:
        if self.library is None:
            self.library = type(self.ctx.library)(self.ctx.library.device)
        return self.library.call(func_graph, args, self.step)

    def nested(self, values: dict[int, list[Any]]) -> "Env":
        """The Env of a dataset a function made (interleave): its own inputs, this
        iterator's kernel context, step and function library."""
        env = Env(values)
        env.ctx, env.step, env.library = self.ctx, self.step, self.library
        return env

    def detached(self, step: Any) -> "Env":
        """An Env for a background thread (prefetch): the same inputs and pipeline
        state, this kernel context, but its own `step`, so that map functions it
        runs outlive, and are not cancelled with, the get_next step that started them."""
        env = Env(self.values)
        env.ctx, env.step, env.epochs, env.caches = self.ctx, step, self.epochs, self.caches
        if self.library is None and self.ctx is not None:   # one library for both threads
            self.library = type(self.ctx.library)(self.ctx.library.device)
        env.library = self.library
        return env


def snapshot(value: Any) -> Any:
    """A reference input's value now (a variable's current array); others as they are."""
    return value.snapshot() if hasattr(value, "snapshot") else value


class HasStructure:
    """`output_types/shapes/classes` of an element structure (datasets and iterators)."""

    _structure: Any

    @property
    def output_types(self) -> Any:
        return map_sparse_aware(lambda s: s.dtype, lambda p: p.values.dtype, self._structure)

    @property
    def output_shapes(self) -> Any:
        # A SparseTensor component's shape is its dense shape: known rank, unknown sizes.
        return map_sparse_aware(lambda s: s.shape, _sparse_dense_shape, self._structure)

    @property
    def output_classes(self) -> Any:
        return map_sparse_aware(lambda s: Tensor, lambda p: SparseTensor, self._structure)


def _sparse_dense_shape(parts: Any) -> TensorShape:
    shape = parts.dense_shape.shape
    rank = shape.as_list()[0] if shape.ndims == 1 else None
    return TensorShape(None) if rank is None else TensorShape([None] * rank)


class Dataset(HasStructure):
    """A stream of elements, each a nested tuple/dict of tensors.

    Subclasses set `_structure` (nested `Spec`s), `_inputs` (graph tensors
    whose values they need at run time) and `_children`, and implement
    `_generate(env, values)`.
    """

    def __init__(self, structure: Any, inputs: list[Tensor] | None = None,
                 children: list["Dataset"] | None = None) -> None:
        self._structure = structure
        self._inputs = list(inputs or [])
        self._children = list(children or [])


    def _specs(self) -> list[Spec]:
        return flatten(self._structure)

    # ---- run time ----------------------------------------------------------------
    def _nodes(self) -> list["Dataset"]:
        """Every node of the pipeline once, parents before children."""
        seen: dict[int, Dataset] = {}
        stack: list[Dataset] = [self]
        while stack:
            node = stack.pop()
            if id(node) not in seen:
                seen[id(node)] = node
                stack.extend(reversed(node._children))
        return list(seen.values())

    def _all_inputs(self) -> list[Tensor]:
        return [t for node in self._nodes() for t in node._inputs]

    # Whether the node takes its inputs' references as they are (function nodes: a
    # captured variable is read, a captured queue dequeued, per element); the others
    # read each input once, when the iterator is initialized, as TF does.
    _live_inputs = False

    def _node_values(self, flat_values: list[Any]) -> dict[int, list[Any]]:
        values: dict[int, list[Any]] = {}
        pos = 0
        for node in self._nodes():
            vals = list(flat_values[pos:pos + len(node._inputs)])
            values[id(node)] = vals if node._live_inputs else [snapshot(v) for v in vals]
            pos += len(node._inputs)
        return values

    def _make_env(self, flat_values: list[Any]) -> Env:
        return Env(self._node_values(flat_values))

    def _iter(self, env: Env) -> Iterator[Element]:
        return self._generate(env, env.values[id(self)])

    def _generate(self, env: Env, values: list[Any]) -> Iterator[Element]:
        raise NotImplementedError

    # ---- sources -----------------------------------------------------------------
    @staticmethod
    def from_tensor_slices(tensors: Any) -> "Dataset":
        """Elements are the slices of `tensors` along dimension 0.

        Example:
            >>> Dataset.from_tensor_slices(({"a": [1, 2]}, [3.0, 4.0]))
        """
        return _impl("TensorSliceDataset")(tensors)

    @staticmethod
    def from_tensors(tensors: Any) -> "Dataset":
        """A single element: `tensors`.

        Example:
            >>> Dataset.from_tensors([1, 2, 3])   # one element of shape [3]
        """
        return _impl("TensorDataset")(tensors)

    @staticmethod
    def from_generator(generator: Callable[[], Any], output_types: Any,
                       output_shapes: Any = None, args: Any = None) -> "Dataset":
        """Elements produced by calling `generator(*args)` (a Python iterable).

        Example:
            >>> def gen():
            ...     yield from ([1, 2], [3, 4])
            >>> Dataset.from_generator(gen, tf.int32, tf.TensorShape([2]))
        """
        return _impl("GeneratorDataset")(generator, output_types, output_shapes, args)

    @staticmethod
    def range(*args: int) -> "Dataset":
        """int64 elements like Python's `range(start, stop, step)`.

        Example:
            >>> Dataset.range(5)   # 0, 1, 2, 3, 4
        """
        return _impl("RangeDataset")(*args)

    @staticmethod
    def zip(datasets: Any) -> "Dataset":
        """Elements are tuples (or dicts) of the elements of `datasets`, in lock step."""
        return _impl("ZipDataset")(datasets)

    # ---- transformations (in transforms.py) ---------------------------------------
    def map(self, map_func: Callable[..., Any], num_parallel_calls: Any = None) -> "Dataset":
        """Applies `map_func` to each element (traced once on symbolic tensors).

        Example:
            >>> ds.map(lambda x, y: (x * 2, y))
        """
        return _impl("MapDataset")(self, map_func)

    def filter(self, predicate: Callable[..., Any]) -> "Dataset":
        """Keeps elements for which `predicate` returns a True bool scalar."""
        return _impl("FilterDataset")(self, predicate)

    def batch(self, batch_size: int, drop_remainder: bool = False) -> "Dataset":
        """Stacks `batch_size` consecutive elements (the last batch may be smaller)."""
        return _impl("BatchDataset")(self, batch_size, drop_remainder)

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool = True) -> "Dataset":
        """Shuffles with a `buffer_size` buffer; a seed makes the order reproducible."""
        return _impl("ShuffleDataset")(self, buffer_size, seed, reshuffle_each_iteration)

    def repeat(self, count: int | None = None) -> "Dataset":
        """Repeats the dataset `count` times (forever for None or -1)."""
        return _impl("RepeatDataset")(self, count)

    def cache(self, filename: str = "") -> "Dataset":
        """Same elements; passes after the first complete one replay them from memory.

        Raises:
            ValueError: a `filename` (a cache on disk is not offered; use the
                in-memory cache, `cache()`).

        Example:
            >>> ds = tf.data.Dataset.from_tensor_slices(x).cache().shuffle(100).repeat()
        """
        return _impl("CacheDataset")(self, filename)

    def take(self, count: int) -> "Dataset":
        """At most `count` elements (all for -1)."""
        return _impl("TakeDataset")(self, count)

    def skip(self, count: int) -> "Dataset":
        """All but the first `count` elements (none for -1)."""
        return _impl("SkipDataset")(self, count)

    def prefetch(self, buffer_size: int) -> "Dataset":
        """Same elements in the same order, produced ahead on a background thread.

        Up to `buffer_size` elements wait, ready, for get_next, so the pipeline
        above (reading, parsing, map functions) overlaps the training step instead
        of running inside it. `tf.data.experimental.AUTOTUNE` (-1) buffers a few; 0
        produces on demand in get_next, as without prefetch. An error upstream is
        raised by the get_next that reaches it, after the elements before it.

        Example:
            >>> ds = tf.data.TFRecordDataset(files).batch(256).map(parse).prefetch(1)
        """
        return _impl("PrefetchDataset")(self, buffer_size)

    def concatenate(self, dataset: "Dataset") -> "Dataset":
        """This dataset's elements followed by `dataset`'s (same structure and types)."""
        return _impl("ConcatenateDataset")(self, dataset)

    def flat_map(self, map_func: Callable[..., Any]) -> "Dataset":
        """The elements of the Dataset `map_func` returns for each element, in order.

        Example:
            >>> files.flat_map(tf.data.TFRecordDataset)
        """
        return _impl("InterleaveDataset")(self, map_func, 1, 1, "flat_map")

    def interleave(self, map_func: Callable[..., Any], cycle_length: Any = None,
                   block_length: int = 1, num_parallel_calls: Any = None) -> "Dataset":
        """`block_length` elements in turn from each of `cycle_length` Datasets that
        `map_func` returns (TF's deterministic order; None: one per core).

        Example:
            >>> files.interleave(tf.data.TFRecordDataset, cycle_length=4, block_length=16)
        """
        return _impl("InterleaveDataset")(self, map_func, cycle_length, block_length,
                                          "interleave")

    def shard(self, num_shards: int, index: int) -> "Dataset":
        """Every `num_shards`-th element from the `index`-th: one worker's share.

        Example:
            >>> ds = ds.shard(num_workers, FLAGS.task_index)
        """
        return _impl("ShardDataset")(self, num_shards, index)

    def padded_batch(self, batch_size: int, padded_shapes: Any, padding_values: Any = None,
                     drop_remainder: bool = False) -> "Dataset":
        """`batch`, padding each component to `padded_shapes` (None / -1: the batch's
        longest) with `padding_values` (default 0, or b"" for strings).

        Example:
            >>> ds.padded_batch(32, padded_shapes=([None], []))  # (token ids, label)
        """
        return _impl("PaddedBatchDataset")(self, batch_size, padded_shapes, padding_values,
                                           drop_remainder)

    def apply(self, transformation_func: Callable[["Dataset"], "Dataset"]) -> "Dataset":
        """`transformation_func(self)`, e.g. a `tf.data.experimental` transformation."""
        out = transformation_func(self)
        if not isinstance(out, Dataset):
            raise TypeError(f"Dataset.apply: {transformation_func!r} must return a Dataset, "
                            f"it returned {out!r}.")
        return out

    @staticmethod
    def list_files(file_pattern: Any, shuffle: bool | None = None,
                   seed: int | None = None) -> "Dataset":
        """The file names matching a glob (or a list of globs), shuffled each pass
        unless `shuffle=False` (then sorted); no match is an error at run time.

        Example:
            >>> tf.data.Dataset.list_files("/data/train-*.tfrecord", shuffle=False)
        """
        return _impl("ListFilesDataset")(file_pattern, shuffle, seed)

    # ---- iterators ---------------------------------------------------------------
    def make_one_shot_iterator(self) -> Any:
        """An iterator initialized on first use; it cannot be re-initialized."""
        return _impl("Iterator").one_shot(self)

    def make_initializable_iterator(self, shared_name: str | None = None) -> Any:
        """An iterator whose `initializer` op (re)starts it (feeds are read then)."""
        return _impl("Iterator").initializable(self, shared_name)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} types={self.output_types} shapes={self.output_shapes}>"


def int_args(args: Sequence[Any], what: str) -> tuple[list[Any], list[Tensor]]:
    """Integer arguments of a node: Python ints stay; a tensor (a scalar computed in the
    graph, e.g. inside a flat_map function) becomes an input of the node, its place
    in the list marked by its input index, read by `resolve_ints` at run time."""
    out: list[Any] = []
    inputs: list[Tensor] = []
    for a in args:
        if isinstance(a, Tensor):
            if not a.dtype.base_dtype.is_integer or a.shape.ndims not in (None, 0):
                raise TypeError(f"{what}: {a.name} must be an integer scalar, got "
                                f"{a.dtype.name} with shape {a.shape}.")
            out.append(_FedInt(len(inputs)))
            inputs.append(a)
        else:
            out.append(int(a))
    return out, inputs


class _FedInt:
    def __init__(self, index: int) -> None:
        self.index = index


def resolve_ints(args: list[Any], values: list[Any]) -> list[int]:
    """`int_args`' list with the fed tensors' values in place."""
    return [int(values[a.index]) if isinstance(a, _FedInt) else a for a in args]

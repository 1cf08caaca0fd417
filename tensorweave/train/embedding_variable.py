"""DeepRec's EmbeddingVariable: an embedding table that grows with the ids it sees.

`tf.get_embedding_variable(name, embedding_dim, ...)` makes a table of rows keyed by id
(int64, int32 or string) instead of a [vocabulary, dim] matrix: memory grows with the
ids admitted, not with a vocabulary size. `tf.nn.embedding_lookup` looks ids up (a new
id gets the initializer's default row `id % default_value_dim`), and every optimizer's
sparse update trains the rows looked up, on the task holding the table (a ps). Options
(`tf.EmbeddingVariableOption`): a `CounterFilter(filter_freq)` admits an id only once it
was looked up that often (until then it reads `default_value_no_permission` and is not
trained); `GlobalStepEvict(steps_to_live)` and `L2WeightEvict(l2_weight_threshold)`
drop, at each save, the ids not looked up for that many global steps (DeepRec stamps
an id when it is updated; here when it is looked up, which in training precedes its
update) or whose row's L2 norm is below the threshold. A checkpoint holds
`<name>-keys`, `-values`, `-freqs` and `-versions` (DeepRec's layout; slots as
`<name>/<Optimizer>-keys`, ...).

Storage and kernels: ops/state/kv_variable_ops.py. Optimizers make its slots through
`_embedding_slot`, `tf.nn.embedding_lookup` looks up through `_lookup` (duck-typed:
the layers below do not import this one).

Example:
    >>> emb = tf.get_embedding_variable("emb", embedding_dim=8,
    ...     ev_option=tf.EmbeddingVariableOption(filter_option=tf.CounterFilter(3)))
    >>> rows = tf.nn.embedding_lookup(emb, ids)     # ids: any int64 values
"""
from __future__ import annotations

import re
from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.ops.array import core_ops
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.state import kv_checkpoint_ops as kv_ckpt
from tensorweave.ops.state import kv_stamp_ops
from tensorweave.ops.state import kv_variable_ops as kv
from tensorweave.state import init_ops
from tensorweave.state import variable_policies as _policies
from tensorweave.state import variable_scope as _vs
from tensorweave.state.variables import Variable
from tensorweave.train.saveable_object import SaveableObject, SaveSpec

__all__ = ["CBFFilter", "CounterFilter", "EmbeddingVariable", "EmbeddingVariableOption",
           "GlobalStepEvict", "InitializerOption", "L2WeightEvict", "get_embedding_variable"]


class InitializerOption:
    """How new ids' rows start: `initializer` makes `default_value_dim` default rows once
    (default: a truncated normal), an id takes row `id % default_value_dim`; an id not
    admitted yet reads `default_value_no_permission`."""

    def __init__(self, initializer: Any = None, default_value_dim: int = 4096,
                 default_value_no_permission: float = 0.0) -> None:
        if default_value_dim <= 0:
            raise ValueError(f"default_value_dim must be at least 1, got {default_value_dim}")
        self.initializer = initializer
        self.default_value_dim = int(default_value_dim)
        self.default_value_no_permission = float(default_value_no_permission)


class CounterFilter:
    """Admits an id once it has been looked up `filter_freq` times."""

    def __init__(self, filter_freq: int = 0) -> None:
        self.filter_freq = int(filter_freq)


class CBFFilter(CounterFilter):
    """DeepRec's counting-Bloom-filter admission: admits an id once looked up
    `filter_freq` times. Counted exactly here (a table entry per id seen), so no id is
    admitted early by a collision; the sizing arguments are accepted for DeepRec's
    programs and have nothing to size."""

    def __init__(self, filter_freq: int = 0, max_element_size: int = 0,
                 false_positive_probability: float = -1.0, counter_type: Any = None) -> None:
        super().__init__(filter_freq)


class GlobalStepEvict:
    """At each save, drops the ids not looked up in the last `steps_to_live` global steps."""

    def __init__(self, steps_to_live: int | None = None) -> None:
        self.steps_to_live = int(steps_to_live or 0)


class L2WeightEvict:
    """At each save, drops the ids whose row's L2 norm is below the threshold."""

    def __init__(self, l2_weight_threshold: float = -1.0) -> None:
        self.l2_weight_threshold = float(l2_weight_threshold)


class EmbeddingVariableOption:
    """The options of an EmbeddingVariable (DeepRec's `tf.EmbeddingVariableOption`)."""

    def __init__(self, init_option: InitializerOption | None = None,
                 filter_option: CounterFilter | None = None,
                 evict_option: GlobalStepEvict | L2WeightEvict | None = None) -> None:
        self.init_option = init_option or InitializerOption()
        self.filter_option = filter_option
        self.evict_option = evict_option


class EmbeddingVariable(Variable):
    """An embedding table keyed by id (see the module docstring); made by
    `get_embedding_variable` (and by optimizers, for its slots)."""

    _V1_ENTRY = False

    def __init__(self, name: str, embedding_dim: int, key_dtype: Any, dtype: Any,
                 defaults: Any, ev_option: EmbeddingVariableOption,
                 steps_to_live: int = 0, trainable: bool = True,
                 primary: EmbeddingVariable | None = None) -> None:
        g = get_default_graph()
        self._key_dtype = _dt.as_dtype(key_dtype).base_dtype
        if self._key_dtype not in (_dt.int64, _dt.int32, _dt.string):
            raise TypeError(f"EmbeddingVariable {name}: key_dtype must be int64, int32 or "
                            f"string, got {self._key_dtype.name}")
        evict = ev_option.evict_option
        if isinstance(evict, GlobalStepEvict) and evict.steps_to_live:
            steps_to_live = evict.steps_to_live
        with g.name_scope(None):   # named by variable scope only, as get_variable's
            var_name = g.unique_name(name, mark_as_used=False)
        with g.as_default(), g.control_dependencies(None):
            with g.name_scope(var_name + "/"):
                init = convert_to_tensor(defaults() if callable(defaults) else defaults,
                                         dtype=dtype, name="default_values")
            with g.name_scope(None):
                self._variable = kv.create_kv_variable(
                    var_name, embedding_dim, self._key_dtype, init.dtype,
                    primary=primary.op.name if primary is not None else "",
                    filter_freq=ev_option.filter_option.filter_freq
                    if ev_option.filter_option else 0,
                    steps_to_live=steps_to_live,
                    l2_weight_threshold=evict.l2_weight_threshold
                    if isinstance(evict, L2WeightEvict) else 0.0)
            vop = self._variable.op
            with g.name_scope(vop.name + "/"), g.colocate_with(vop):
                self._initializer_op = kv.kv_initialize(
                    self._variable, init,
                    ev_option.init_option.default_value_no_permission)
                self._snapshot = core_ops.identity(self._variable, name="read")
        self._initial_value = init
        self._primary = primary
        self._partition = (0, 1)   # (part, parts): set by get_embedding_variable
        self._saveable: _EmbeddingSaveable | None = None
        self._option = ev_option
        self._embedding_dim = int(embedding_dim)
        self._synchronization, self._aggregation, trainable = _policies.resolve(
            None, None, trainable, name)
        self._trainable = bool(trainable)
        self._constraint = None
        collections = [GraphKeys.GLOBAL_VARIABLES] + \
            ([GraphKeys.TRAINABLE_VARIABLES] if trainable else [])
        g.add_to_collections(collections, self)

    @property
    def key_dtype(self) -> _dt.DType:
        return self._key_dtype

    def _lookup(self, ids: Any, name: str | None = None) -> Tensor:
        """The rows of `ids` (a KvGather where the table lives; see embedding_lookup)."""
        g = self.graph
        ids = convert_to_tensor(ids, name="ids")
        if ids.dtype.base_dtype != self._key_dtype and self._key_dtype.is_integer and \
                ids.dtype.base_dtype.is_integer:
            ids = cast(ids, self._key_dtype)
        with g.colocate_with(self.op):
            rows, _ = kv.kv_gather(self._variable, ids, _global_step(g),
                                   name=name or "KvGather")
        return rows

    def _stamp_versions(self, update: Any, rows: Tensor, global_step: Any) -> Any:
        """After the optimizer's `update` of `rows`, their ids' version becomes the global
        step the update ran at (DeepRec's GlobalStepEvict: "the step of the feature's last
        update in backward"). `global_step` is apply_gradients' (else the graph's); with
        none, nothing is stamped and `update` is returned."""
        g = self.graph
        if global_step is None:
            step = _global_step(g)
        else:
            step = convert_to_tensor(global_step)
            step = step if step.dtype.base_dtype == _dt.int64 else cast(step, _dt.int64)
        if isinstance(update, Tensor):
            update = update.op
        with g.control_dependencies([update]), g.colocate_with(self.op):
            return kv_stamp_ops.kv_stamp(self._variable, rows, step)

    def _embedding_slot(self, name: str, fill: float) -> EmbeddingVariable:
        """An optimizer slot ("<var>/<name>"): a table over this one's ids, starting at
        `fill`."""
        dtype = self.dtype.base_dtype
        option = EmbeddingVariableOption(InitializerOption(default_value_dim=1))
        with self.graph.colocate_with(self.op):
            return EmbeddingVariable(
                f"{self.op.name}/{name}", self._embedding_dim, self._key_dtype, dtype,
                lambda: init_ops.constant_initializer(fill, dtype=dtype)(
                    [1, self._embedding_dim], dtype), option, trainable=False,
                primary=self)

    def saveable_objects(self) -> list[SaveableObject]:
        """What a Saver saves of it: `<name>-keys`, `-values`, `-freqs`, `-versions`
        (made once: every Saver shares its export op)."""
        if self._saveable is None:
            self._saveable = _EmbeddingSaveable(self)
        return [self._saveable]


def _global_step(g: Any) -> Tensor:
    """The graph's global step as int64 (-1 without one: nothing is stamped or evicted
    by steps), for the ops that stamp versions and evict by them."""
    steps = g.get_collection(GraphKeys.GLOBAL_STEP)
    if not steps:
        return convert_to_tensor(-1, dtype=_dt.int64)
    step = convert_to_tensor(steps[0])
    return step if step.dtype.base_dtype == _dt.int64 else cast(step, _dt.int64)


class _EmbeddingSaveable(SaveableObject):
    def __init__(self, ev: EmbeddingVariable) -> None:
        g = ev.graph
        with g.colocate_with(ev.op), g.name_scope(ev.op.name + "/"):
            outs = kv_ckpt.kv_export(ev._ref(), _global_step(g), ev.key_dtype)
        name = ev.op.name
        specs = [SaveSpec(t, "", f"{name}-{part}")
                 for t, part in zip(outs, ("keys", "values", "freqs", "versions"))]
        super().__init__(ev, specs, name)

    def _initializers(self) -> list[Any]:
        # As DeepRec's restore, which makes the table: a session that restores instead
        # of initializing (an Estimator's evaluate, a restarted chief) has no default
        # rows yet. A slot's waits for its variable's too, which forgets the ids.
        ev = self.op
        return ([ev._primary.initializer] if ev._primary is not None else []) + \
            [ev.initializer]

    def restore(self, restored_tensors: list[Tensor], restored_shapes: Any) -> Any:
        ev = self.op
        with ev.graph.colocate_with(ev.op), \
                ev.graph.control_dependencies(self._initializers()):
            return kv_ckpt.kv_import(ev._ref(), *restored_tensors)

    def restore_from_file(self, filename: Tensor) -> Any:
        """The Saver's restore: this part's ids from the saved table of the same name,
        whatever number of parts it was saved with (`KvRestore`)."""
        ev = self.op
        primary = ev._primary if ev._primary is not None else ev
        base = re.sub(r"/part_\d+$", "", primary.op.name)
        pattern = re.escape(base) + r"(?:/part_\d+)?" + \
            re.escape(ev.op.name[len(primary.op.name):])
        part, parts = primary._partition
        with ev.graph.colocate_with(ev.op), \
                ev.graph.control_dependencies(self._initializers()):
            return kv_ckpt.kv_restore(ev._ref(), filename, pattern, part, parts)


def get_embedding_variable(name: str, embedding_dim: int, key_dtype: Any = _dt.int64,
                           value_dtype: Any = None, initializer: Any = None,
                           regularizer: Any = None, trainable: bool = True,
                           collections: Any = None, caching_device: Any = None,
                           partitioner: Any = None, validate_shape: bool = True,
                           custom_getter: Any = None, constraint: Any = None,
                           steps_to_live: int | None = None,
                           ev_option: EmbeddingVariableOption | None = None) -> Any:
    """DeepRec's `tf.get_embedding_variable`: an EmbeddingVariable (see the module
    docstring), or with `partitioner` a list of them, one per partition ("<name>/part_<i>",
    ids spread by `id % partitions`), placed as `tf.device` says (a ps).

    Raises:
        ValueError: for arguments an EmbeddingVariable cannot honour (a regularizer,
            constraint or custom getter: apply them to the looked-up rows instead).

    Example:
        >>> emb = tf.get_embedding_variable("emb", 16, partitioner=tf.fixed_size_partitioner(2))
        >>> tf.nn.embedding_lookup(emb, ids)
    """
    for what, value in (("regularizer", regularizer), ("constraint", constraint),
                        ("custom_getter", custom_getter), ("collections", collections),
                        ("caching_device", caching_device)):
        if value is not None:
            raise ValueError(f"get_embedding_variable({name!r}): {what} is not supported "
                             "for an EmbeddingVariable (its rows exist only for ids seen); "
                             "leave it out.")
    option = ev_option or EmbeddingVariableOption()
    dtype = _dt.as_dtype(value_dtype or _dt.float32).base_dtype
    init = initializer or option.init_option.initializer or \
        init_ops.truncated_normal_initializer()
    if isinstance(init, type):   # DeepRec's docs pass the class (glorot_uniform_initializer)
        init = init()
    rows = option.init_option.default_value_dim

    def make(part_name: str) -> EmbeddingVariable:
        return EmbeddingVariable(part_name, embedding_dim, key_dtype, dtype,
                                 lambda: init([rows, embedding_dim], dtype), option,
                                 steps_to_live=int(steps_to_live or 0), trainable=trainable)
    scope = _scope_name()
    full = f"{scope}/{name}" if scope else name
    if partitioner is None:
        return make(full)
    parts = partitioner(shape=_PartitionShape(embedding_dim), dtype=dtype)
    n = int(parts[0]) if parts else 1
    made = [make(f"{full}/part_{i}") for i in range(n)]
    for i, ev in enumerate(made):
        ev._partition = (i, n)
    return EmbeddingPartitions(made, full)


class _PartitionShape(list):
    # What a partitioner sees: a table of unknown rows; fixed_size_partitioner reads only
    # the number of shards, min_max_variable_partitioner a nominal size.
    def __init__(self, dim: int) -> None:
        super().__init__([1 << 20, dim])

    def as_list(self) -> list[int]:
        return list(self)


class EmbeddingPartitions(list):
    """A partitioned EmbeddingVariable: its parts, ids spread by `id % len(parts)`."""

    def __init__(self, parts: list[EmbeddingVariable], name: str) -> None:
        super().__init__(parts)
        self.name = name


def _scope_name() -> str:
    return _vs.get_variable_scope().name

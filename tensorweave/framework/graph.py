"""Graph: ops, name scopes, device/colocation/control scopes and collections.

Op creation lives here; the scopes are `graph_scopes.GraphScopesMixin`'s, the lookups
and collections `graph_lookup.GraphLookupMixin`'s.

The default graph, `GraphKeys` and the module-level scope functions
(`tf.name_scope`, `tf.device`, `tf.control_dependencies`, the collection
functions...) live in `graph_defaults`; this module re-exports them.

Example:
    >>> g = tf.Graph()
    >>> with g.as_default(), tf.name_scope("layer"):
    ...     c = tf.constant(1.0, name="c")
    >>> c.name
    'layer/c:0'
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Iterator

from tensorweave.framework.graph_defaults import (  # noqa: F401 - re-exported API
    GraphKeys as GraphKeys, _default_stack, add_to_collection as add_to_collection,
    container as container,
    add_to_collections as add_to_collections, colocate_with as colocate_with,
    control_dependencies as control_dependencies, device as device,
    get_collection as get_collection, get_collection_ref as get_collection_ref,
    get_default_graph as get_default_graph, name_scope as name_scope,
    reset_default_graph as reset_default_graph)
from tensorweave.framework.graph_lookup import GraphLookupMixin
from tensorweave.framework.graph_scopes import _VALID_OP_NAME, GraphScopesMixin
from tensorweave.framework.op_def import get_op_def
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import Dimension, TensorShape, as_shape
from tensorweave.framework.op_def import REQUIRED

def name_part(text: str) -> str:
    """`text` (a feature key, a user's label) made usable inside an op name, as TF's parsing
    ops make their default-value names: every character the name rules refuse becomes '_'.

    Example:
        >>> name_part("age (years)")
        'age__years_'
    """
    return re.sub(r"[^A-Za-z0-9_.\-/]", "_", text)


def _check_op_name(name: str, op_type: str) -> None:
    if not _VALID_OP_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid node name (creating a {op_type} op): op "
                         f"names must match {_VALID_OP_NAME.pattern}, i.e. letters, digits, "
                         "'.', '_', '-' and '/', not starting with '_', '-' or '/'.")


# TF's attr naming the registered gradient an op takes instead of its type's own (set by
# gradient_override_map and tf.custom_gradient; kept in exported graphs, as TF does).
GRADIENT_OP_TYPE_ATTR = "_gradient_op_type"


class Graph(GraphScopesMixin, GraphLookupMixin):
    """A dataflow graph of Operations; thread-safe for op creation.

    Example:
        >>> g = tf.Graph()
        >>> with g.as_default():
        ...     x = tf.constant(3)
        >>> x.graph is g
        True
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._ops_by_name: dict[str, Operation] = {}
        self._ops: list[Operation] = []
        self._names_in_use: dict[str, int] = {}
        self._collections: dict[str, list[Any]] = {}
        self._finalized = False
        self._version = 0
        # False for the runtime's own graphs (a task's partition), whose ops carry
        # names such as "_send/..." that no user op may take, as TF's C++ partitioner's.
        self._validate_names = True
        self.seed: int | None = None
        self._local = threading.local()
        self._functions: dict[str, Any] = {}  # name -> FuncGraph, for cond/while bodies
        self._gradient_overrides: dict[str, str] = {}  # op type -> registered gradient name
        self.outer_graph: Graph | None = None

    # ---- per-thread scope stacks -------------------------------------------------
    def switch_to_thread_local(self) -> None:
        """TF1's switch to per-thread device, colocation, dependency and name stacks.

        Here those stacks are always per thread (a thread building ops never sees
        another thread's `with tf.device(...)` or `tf.control_dependencies(...)`), so
        there is nothing to switch; TF1 programs that call it run unchanged.

        Example:
            >>> tf.get_default_graph().switch_to_thread_local()
        """

    def _bump_version(self) -> None:
        self._version += 1

    @property
    def version(self) -> int:
        return self._version

    @property
    def finalized(self) -> bool:
        return self._finalized

    def finalize(self) -> None:
        """Makes the graph read-only: creating ops afterwards raises RuntimeError."""
        self._finalized = True

    def _unsafe_unfinalize(self) -> None:
        self._finalized = False

    # ---- op creation -------------------------------------------------------------
    def create_op(self, op_type: str, inputs: list[Any], attrs: dict[str, Any] | None = None,
                  name: str | None = None, dtypes: Any = None, compute_device: bool = True,
                  ) -> Operation:
        """Creates an op of a registered type; infers outputs with its shape function.

        Args:
            op_type: a registered op name.
            inputs: Tensors, or lists of Tensors for list inputs, in definition order.
            attrs: attr values; missing ones take the op's defaults.
            name: op name (made unique under the current name scope).

        Raises:
            RuntimeError: if the graph is finalized.
            ValueError/TypeError: from the shape function, naming the operands.
        """
        if self._finalized:
            raise RuntimeError(f"Graph is finalized and cannot be modified (creating a "
                               f"{op_type} op named {name or op_type!r}).")
        op_def = get_op_def(op_type)
        full_attrs = _resolve_attrs(op_def, attrs or {})
        grouped, flat = self._group_inputs(op_def, inputs, full_attrs)
        shape_fn = op_def.shape_fn
        if shape_fn is None:
            raise ValueError(f"Op {op_type} has no shape function ({op_def.where}); register "
                             "one with @<op>.shape.")
        with self._lock:
            if name and name.endswith("/"):
                # A scope's name ("x/", from `with tf.name_scope(...) as name`) names the
                # op exactly "x", as TF does: TF1 code returns `op(..., name=name)`.
                op_name = name[:-1]
                if self._validate_names:
                    _check_op_name(op_name, op_type)
                if op_name in self._ops_by_name:
                    raise ValueError(f"Cannot name a {op_type} op {op_name!r} after the scope "
                                     f"{name!r}: an op of that name exists already.")
            else:
                op_name = self.unique_name(name or op_type)
                if self._validate_names:
                    _check_op_name(op_name, op_type)
            try:
                outs = shape_fn(*grouped, **{k: full_attrs[k] for k in op_def.attrs})
            except (ValueError, TypeError) as e:
                raise type(e)(f"{e} (while building {op_type} op {op_name!r})") from None
            outs = [outs] if isinstance(outs, tuple) else list(outs or [])
            outs = [(dt, as_shape(s)) for dt, s in outs]
            control = self._current_control_inputs(flat)
            containers = self._stack("container_stack")
            if containers and containers[-1] and op_def.stateful and \
                    "container" in full_attrs and not full_attrs["container"]:
                full_attrs["container"] = containers[-1]  # as TF: an explicit one wins
            if op_type in self._gradient_overrides:  # tf.gradients reads the attr
                full_attrs[GRADIENT_OP_TYPE_ATTR] = self._gradient_overrides[op_type]
            op = Operation(self, op_def, op_name, flat, full_attrs, "", control, outs,
                           len(self._ops))
            if compute_device:
                self._apply_device_functions(op)
            self._apply_colocation(op)
            self._ops.append(op)
            self._ops_by_name[op_name] = op
            self._version += 1
        return op

    def _group_inputs(self, op_def: Any, inputs: list[Any],
                      attrs: dict[str, Any]) -> tuple[list[Any], list[Tensor]]:
        if len(inputs) != len(op_def.inputs):
            raise TypeError(f"Op {op_def.name} takes {len(op_def.inputs)} inputs "
                            f"({[i.name for i in op_def.inputs]}), got {len(inputs)}")
        grouped: list[Any] = []
        flat: list[Tensor] = []
        for spec, value in zip(op_def.inputs, inputs):
            if spec.is_list:
                values = [self._capture(v) for v in value]
                attrs[op_def.list_attr(spec.name)] = len(values)
                grouped.append(values)
                flat.extend(values)
            else:
                v = self._capture(value)
                grouped.append(v)
                flat.append(v)
        return grouped, flat

    def _capture(self, t: Any) -> Tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"Expected a Tensor input, got {t!r}; convert it with "
                            "tf.convert_to_tensor first.")
        if t.graph is not self:
            return self.capture(t)
        return t

    def capture(self, tensor: Tensor) -> Tensor:
        """Uses a tensor of another graph; only function bodies (FuncGraph) can."""
        raise ValueError(f"Tensor {tensor.name} must be from the same graph as the op being "
                         "built. Build all ops of one model inside one `with g.as_default():`.")

    # ---- defaults ----------------------------------------------------------------
    @contextlib.contextmanager
    def as_default(self) -> Iterator["Graph"]:
        stack = _default_stack()
        stack.append(self)
        try:
            yield self
        finally:
            stack.pop()

    def as_graph_def(self, from_version: int | None = None, add_shapes: bool = False) -> Any:
        from tensorweave.framework.graph_export import graph_to_graph_def
        return graph_to_graph_def(self, add_shapes=add_shapes)

    @property
    def building_function(self) -> bool:
        return self.outer_graph is not None


def _resolve_attrs(op_def: Any, attrs: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, default in op_def.attrs.items():
        if k in attrs:
            out[k] = _plain_attr(attrs[k])
        elif default is REQUIRED:
            raise TypeError(f"Op {op_def.name} requires attr {k!r}")
        else:
            out[k] = default
    for k, v in attrs.items():
        if k not in out:
            if not k.startswith("_"):
                raise TypeError(f"Op {op_def.name} has no attr {k!r}; its attrs are "
                                f"{sorted(op_def.attrs)}")
            out[k] = v
    return out


def _plain_attr(value: Any) -> Any:
    """An attr value with Dimensions (`x.shape[1]` in TF 1.x) as their ints or None, so
    kernels, shape functions and the GraphDef writer see plain numbers."""
    if isinstance(value, Dimension):
        return value.value
    if isinstance(value, (list, tuple)) and any(isinstance(v, Dimension) for v in value):
        return type(value)(v.value if isinstance(v, Dimension) else v for v in value)
    return value


__all__ = ["Graph", "GraphKeys", "get_default_graph", "reset_default_graph", "name_scope",
           "device", "colocate_with", "control_dependencies", "TensorShape"]

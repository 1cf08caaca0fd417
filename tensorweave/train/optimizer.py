"""The Optimizer base class: gradients, slots and one update op per variable.

Every update is a single op colocated with its variable, slots are variables
colocated with their primary, and `apply_gradients(..., global_step)` bumps the
step after all updates ran, so the same graph works on parameter servers.

Example:
    >>> opt = tf.train.GradientDescentOptimizer(0.1)
    >>> train_op = opt.minimize(loss, global_step=tf.train.get_or_create_global_step())
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant, convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array import core_ops
from tensorweave.ops.array.fill_ops import fill
from tensorweave.ops.array.shape_ops import shape as shape_of
from tensorweave.ops.math.math_ops import cast
from tensorweave.state import init_ops
from tensorweave.ops.state import state_ops
from tensorweave.state.resource_variables import is_resource_variable
from tensorweave.state.variables import Variable, trainable_variables
from tensorweave.autodiff.gradients import gradients
from tensorweave.train.optimizer_grads import (deduplicate_indexed_rows, gate_all,
                                               variables_read_by)
# TF's `slot_creator` functions, also reachable here (TF's optimizer module uses them).
from tensorweave.train.slot_creator import (create_slot, create_slot_with_initializer,
                                            create_zeros_slot)

_FLOAT_TYPES = (_dt.float16, _dt.float32, _dt.float64)


def _var_key(var: Any) -> Any:
    # The VariableV2 op identifies a variable (Variable objects can be re-wrapped).
    return var.op


class Optimizer:
    """Base class of optimizers; subclasses define `_apply_dense` / `_apply_sparse`
    (ref variables) and `_resource_apply_dense` / `_resource_apply_sparse` (resource
    variables), as TF 1.x's `tf.train.Optimizer`.

    Sparse gradients reach `_apply_sparse`/`_resource_apply_sparse` with duplicate
    indices summed; a variable's `constraint` is applied after each dense update.

    Args:
        use_locking: serialize each update on its variable's lock.
        name: the name scope of `apply_gradients` and suffix of slot names.

    Example:
        >>> opt = tf.train.MomentumOptimizer(0.01, 0.9)
        >>> grads_and_vars = opt.compute_gradients(loss)
        >>> train_op = opt.apply_gradients(grads_and_vars)
    """

    # True for our built-in optimizers: their fused update ops take a ref or a
    # resource variable alike and sum duplicate indices in the kernel, so the
    # resource hooks are the ref ones and no deduplication ops are built.
    _UPDATE_OPS_TAKE_ANY_VARIABLE = False

    GATE_NONE = 0
    GATE_OP = 1
    GATE_GRAPH = 2

    def __init__(self, use_locking: bool, name: str) -> None:
        if not name:
            raise ValueError("Must specify the optimizer name")
        self._use_locking = use_locking
        self._name = name
        self._slots: dict[str, dict[Any, Variable]] = {}
        self._non_slot_dict: dict[tuple[str, Any], Variable] = {}

    def get_name(self) -> str:
        return self._name

    # ---- public API ------------------------------------------------------------------
    def minimize(self, loss: Tensor, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None) -> Operation:
        """compute_gradients then apply_gradients; returns the training op.

        Raises:
            ValueError: no variable receives a gradient from `loss` (names both).

        Example:
            >>> train_op = opt.minimize(loss)
        """
        grads_and_vars = self.compute_gradients(
            loss, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        vars_with_grad = [v for g, v in grads_and_vars if g is not None]
        if not vars_with_grad:
            raise ValueError(
                "No gradients provided for any variable, check your graph for ops that do "
                f"not support gradients, between variables {[v.name for _, v in grads_and_vars]}"
                f" and loss {loss.name if hasattr(loss, 'name') else loss!r}.")
        return self.apply_gradients(grads_and_vars, global_step=global_step, name=name)

    def compute_gradients(self, loss: Any, var_list: Any = None,
                          gate_gradients: int = GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list[tuple[Any, Variable]]:
        """[(gradient or None, variable)] of `loss` for `var_list` (default: trainable).

        `loss` may be a callable returning the loss (TF 1.x); then the default
        var_list is the trainable variables the loss reads. `var_list` may hold
        Tensors too: their gradients are computed, but apply_gradients refuses them.

        Raises:
            ValueError: empty var_list, or an invalid gate_gradients.
            TypeError: a non-float loss or variable (naming it).

        Example:
            >>> for grad, var in opt.compute_gradients(loss): ...
        """
        if gate_gradients not in (self.GATE_NONE, self.GATE_OP, self.GATE_GRAPH):
            raise ValueError(f"gate_gradients must be one of Optimizer.GATE_NONE, GATE_OP, "
                             f"GATE_GRAPH; got {gate_gradients!r}")
        if callable(loss):
            loss = convert_to_tensor(loss())
            if var_list is None:
                var_list = variables_read_by(loss, _trainable())
        loss = convert_to_tensor(loss)
        self._assert_valid_dtypes([loss])
        if grad_loss is not None:
            self._assert_valid_dtypes([convert_to_tensor(grad_loss)])
        if var_list is None:
            var_list = _trainable()
        var_list = list(var_list)
        if not var_list:
            raise ValueError(f"No variables to optimize (loss {loss.name}): the graph has no "
                             "trainable variables and no var_list was given.")
        self._assert_valid_dtypes(var_list)
        grads = gradients(loss, var_list, grad_ys=grad_loss,
                          gate_gradients=(gate_gradients == self.GATE_OP),
                          aggregation_method=aggregation_method,
                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        if gate_gradients == self.GATE_GRAPH:
            grads = gate_all(grads)
        return list(zip(grads, var_list))

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """One update op per (grad, var) with a gradient, then the global step bump.

        Args:
            grads_and_vars: pairs from `compute_gradients` (possibly transformed).
            global_step: if given, incremented by one after all updates ran.
            name: name of the returned op (default: the optimizer's name).

        Raises:
            ValueError: every gradient is None (naming the variables).
            TypeError: a gradient that is not a Tensor or IndexedSlices.

        Example:
            >>> clipped = [(tf.clip_by_norm(g, 5.0), v) for g, v in grads_and_vars]
            >>> train_op = opt.apply_gradients(clipped, global_step=step)
        """
        grads_and_vars = list(grads_and_vars)
        if not grads_and_vars:
            raise ValueError("No variables provided to apply_gradients.")
        pairs = []
        for g, v in grads_and_vars:
            if g is not None:
                if not isinstance(g, IndexedSlices):
                    try:
                        g = convert_to_tensor(g)
                    except TypeError:
                        raise TypeError(f"Gradient for {v.name} must be convertible to a "
                                        f"Tensor or IndexedSlices, got {g!r}") from None
                pairs.append((g, v))
        if not pairs:
            raise ValueError("No gradients provided for any variable: "
                             f"{[(str(g), v.name) for g, v in grads_and_vars]}.")
        var_list = [v for _, v in pairs]
        graph = var_list[0].graph
        with graph.as_default():
            # As TF's init_scope: slots are made outside the update's name scope and
            # control dependencies.
            with graph.control_dependencies(None):
                self._create_slots(var_list)
            # TF1 names the returned op exactly like the scope ("GradientDescent"):
            # reserve the name, build under "<final>/", then create the op at the root.
            final = graph.unique_name(name or self._name, mark_as_used=False)
            with graph.name_scope(final + "/"):
                self._prepare()
                update_ops = []
                for grad, var in pairs:
                    with graph.name_scope("update_" + var.op.name), \
                            graph.colocate_with(var.op):
                        out = self._update(grad, var)
                        stamp = getattr(var, "_stamp_versions", None)
                        if stamp is not None and isinstance(grad, IndexedSlices):
                            out = stamp(out, grad.indices, global_step)
                        update_ops.append(out.op if isinstance(out, Tensor) else out)
                if global_step is None:
                    train_op = self._finish(update_ops, final + "/")
                else:
                    finish = self._finish(update_ops, "update")
            if global_step is not None:
                step_ref = convert_to_tensor(global_step, as_ref=True)
                with graph.control_dependencies([finish]), graph.name_scope(None), \
                        graph.colocate_with(step_ref.op):
                    train_op = state_ops.assign_add(step_ref, 1, name=final).op
        graph.add_to_collection(GraphKeys.TRAIN_OP, train_op)
        return train_op

    def _update(self, grad: Any, var: Any) -> Any:
        """The update of `var` by `grad`, through the hook TF 1.x calls for its kind."""
        if not isinstance(var, Variable):
            raise NotImplementedError(f"Trying to update a Tensor {var!r}: only variables "
                                      "can be updated (its gradient can be computed).")
        sparse = isinstance(grad, IndexedSlices)
        if sparse and var.constraint is not None:
            raise RuntimeError(f"Cannot use a constraint function on a sparse variable "
                               f"({var.name}): its gradient is an IndexedSlices.")
        if is_resource_variable(var):
            if sparse:
                return self._resource_apply_sparse_duplicate_indices(grad.values, var,
                                                                     grad.indices)
            out = self._resource_apply_dense(grad, var)
        elif sparse:
            return self._apply_sparse_duplicate_indices(grad, var)
        else:
            out = self._apply_dense(grad, var)
        if var.constraint is None:
            return out
        with get_default_graph().control_dependencies([out]):
            return var.assign(var.constraint(var))

    def get_slot(self, var: Any, name: str) -> Variable | None:
        """The slot variable `name` ("m", "momentum", ...) of `var`, or None."""
        return self._slots.get(name, {}).get(_var_key(var))

    def _slot_ref(self, var: Any, name: str) -> Any:
        """The ref of `var`'s slot `name`, for an update op's inputs."""
        slot = self.get_slot(var, name)
        if slot is None:
            raise ValueError(f"{self.get_name()} has no {name!r} slot for {var.name}: slots are "
                             "created by apply_gradients (or minimize) before the update ops.")
        return slot._ref()

    def get_slot_names(self) -> list[str]:
        return sorted(self._slots)

    def variables(self) -> list[Variable]:
        """The variables this optimizer created in the current default graph (slots and
        non-slot ones), sorted by name, as TF 1.x."""
        g = get_default_graph()
        out = [v for slots in self._slots.values() for v in slots.values() if v.graph is g]
        out += [v for v in self._non_slot_dict.values() if v.graph is g]
        return sorted(out, key=lambda v: v.name)

    # ---- helpers for subclasses (TF 1.x's protected Optimizer API) ------------------------
    def _slot_dict(self, slot_name: str) -> dict[Any, Variable]:
        return self._slots.setdefault(slot_name, {})

    def _slot_once(self, var: Variable, slot_name: str, make: Any) -> Variable:
        named = self._slot_dict(slot_name)
        key = _var_key(var)
        if key not in named:
            named[key] = make()
        return named[key]

    def _zeros_slot(self, var: Variable, slot_name: str, op_name: str) -> Variable:
        """`var`'s slot `slot_name` ("<var>/<op_name>"), zeros like `var`; made once."""
        if hasattr(var, "_embedding_slot"):   # an EmbeddingVariable: a table over its ids
            return self._slot_once(var, slot_name, lambda: var._embedding_slot(op_name, 0.0))
        return self._slot_once(var, slot_name, lambda: create_zeros_slot(var, op_name))

    def _get_or_make_slot(self, var: Variable, val: Any, slot_name: str,
                          op_name: str) -> Variable:
        """`var`'s slot `slot_name`, made once with the initial value `val` (a Tensor)."""
        return self._slot_once(var, slot_name, lambda: create_slot(var, val, op_name))

    def _constant_slot(self, var: Variable, value: float, slot_name: str,
                       op_name: str) -> Variable:
        """`var`'s slot `slot_name` filled with `value`, made once; for a variable whose
        shape is only known at run time, of that run-time shape (as TF's Adagrad)."""
        if hasattr(var, "_embedding_slot"):   # an EmbeddingVariable: a table over its ids
            return self._slot_once(var, slot_name,
                                   lambda: var._embedding_slot(op_name, value))
        dtype = var.dtype.base_dtype
        shape = var.get_shape()
        if shape.is_fully_defined():
            init: Any = init_ops.constant_initializer(value, dtype=dtype)
        else:
            def init() -> Tensor:
                source = var.initialized_value() if isinstance(var, Variable) else var
                return fill(shape_of(source), constant(value, dtype=dtype))
        return self._get_or_make_slot_with_initializer(var, init, shape, dtype, slot_name,
                                                       op_name)

    def _get_or_make_slot_with_initializer(self, var: Variable, initializer: Any,
                                           shape: Any, dtype: Any, slot_name: str,
                                           op_name: str) -> Variable:
        """`var`'s slot `slot_name`, made once by `initializer(shape, dtype)`."""
        return self._slot_once(var, slot_name, lambda: create_slot_with_initializer(
            var, initializer, shape, dtype, op_name))

    def _create_non_slot_variable(self, initial_value: Any, name: str,
                                  colocate_with: Variable) -> Variable:
        """A per-graph variable such as Adam's beta1_power, placed with `colocate_with`."""
        g = colocate_with.graph
        key = (name, g)
        v = self._non_slot_dict.get(key)
        if v is None:
            dtype = colocate_with.dtype.base_dtype

            def init() -> Tensor:
                # A hyperparameter may be a float, a Tensor or a callable (TF 1.x).
                value = self._call_if_callable(initial_value)
                if isinstance(value, Tensor):
                    return value if value.dtype.base_dtype == dtype else \
                        cast(value, dtype)
                return constant(value, dtype=dtype)
            with g.as_default(), g.name_scope(None), g.colocate_with(colocate_with.op):
                v = Variable(init, name=name, trainable=False,
                             use_resource=is_resource_variable(colocate_with))
            self._non_slot_dict[key] = v
        return v

    def _get_non_slot_variable(self, name: str, graph: Any = None) -> Variable | None:
        return self._non_slot_dict.get((name, graph or get_default_graph()))

    def _call_if_callable(self, param: Any) -> Any:
        """A hyperparameter given as a callable is called when the update is built."""
        return param() if callable(param) else param

    def _hyper(self, value: Any, name: str) -> Tensor:
        return convert_to_tensor(self._call_if_callable(value), name=name)

    def _finish(self, update_ops: list[Any], name_scope: str) -> Operation:
        return self._group(update_ops, name_scope)

    @staticmethod
    def _group(deps: list[Any], name: str) -> Operation:
        """A NoOp after `deps`; a name ending in "/" is taken as absolute (TF1)."""
        g = get_default_graph()
        with g.control_dependencies(deps):
            if name.endswith("/"):
                with g.name_scope(None):
                    return core_ops.no_op(name=name[:-1])
            return core_ops.no_op(name=name)

    def _valid_dtypes(self) -> set[Any]:
        """The dtypes losses and variables may have (TF 1.x: subclasses may widen it)."""
        return set(_FLOAT_TYPES)

    def _assert_valid_dtypes(self, tensors: list[Any]) -> None:
        valid = self._valid_dtypes()
        for t in tensors:
            dt = t.dtype.base_dtype
            if dt not in valid:
                raise ValueError(f"Invalid type {dt.name} for {t.name}, expected: "
                                 f"{sorted(d.name for d in valid)}.")

    # ---- subclass hooks ------------------------------------------------------------------
    def _create_slots(self, var_list: list[Variable]) -> None:
        pass

    def _prepare(self) -> None:
        pass

    def _apply_dense(self, grad: Tensor, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not implement _apply_dense")

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not support sparse gradients "
                                  f"(IndexedSlices) for {var.name}")

    def _apply_sparse_duplicate_indices(self, grad: IndexedSlices, var: Variable) -> Any:
        """`_apply_sparse` with each index once (its gradient rows summed)."""
        if self._UPDATE_OPS_TAKE_ANY_VARIABLE:  # the kernels sum duplicates themselves
            return self._apply_sparse(grad, var)
        values, indices = deduplicate_indexed_rows(grad.values, grad.indices)
        return self._apply_sparse(IndexedSlices(values, indices, grad.dense_shape), var)

    def _resource_apply_dense(self, grad: Tensor, handle: Any) -> Any:
        """The dense update of the resource variable `handle`."""
        if self._UPDATE_OPS_TAKE_ANY_VARIABLE:
            return self._apply_dense(grad, handle)
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  f"_resource_apply_dense (resource variable "
                                  f"{handle.name})")

    def _resource_apply_sparse(self, grad: Tensor, handle: Any, indices: Tensor) -> Any:
        """The update of rows `indices` (unique) of the resource variable `handle`."""
        if self._UPDATE_OPS_TAKE_ANY_VARIABLE:
            return self._apply_sparse(IndexedSlices(grad, indices), handle)
        raise NotImplementedError(f"{type(self).__name__} does not implement "
                                  f"_resource_apply_sparse (resource variable "
                                  f"{handle.name})")

    def _resource_apply_sparse_duplicate_indices(self, grad: Tensor, handle: Any,
                                                 indices: Tensor) -> Any:
        """`_resource_apply_sparse` with each index once (its gradient rows summed)."""
        if self._UPDATE_OPS_TAKE_ANY_VARIABLE:
            return self._resource_apply_sparse(grad, handle, indices)
        values, unique_indices = deduplicate_indexed_rows(grad, indices)
        return self._resource_apply_sparse(values, handle, unique_indices)


def _trainable() -> list[Any]:
    return trainable_variables() + \
        get_default_graph().get_collection(GraphKeys.TRAINABLE_RESOURCE_VARIABLES)


__all__ = ["Optimizer", "create_slot", "create_slot_with_initializer", "create_zeros_slot"]

"""Graph scopes: the name, container, device, colocation, control-dependency and
gradient-override scopes of `Graph`, and how they shape each new op.

Each scope is a per-thread stack (a thread building ops never sees another thread's
`with tf.device(...)`), kept in `Graph._local`; `Graph.create_op` applies them through
`_apply_device_functions`, `_apply_colocation` and `_current_control_inputs`. The
module-level forms (`tf.name_scope`, `tf.device`...) live in `graph_defaults`.

Example:
    >>> g = tf.Graph()
    >>> with g.as_default(), g.device("/job:ps/task:0"), g.name_scope("layer"):
    ...     c = tf.constant(1.0, name="c")
    >>> c.name, c.device
    ('layer/c:0', '/job:ps/task:0')
"""
from __future__ import annotations

import contextlib
import re
import threading
from typing import Any, Iterator

from tensorweave.framework import device as _device
from tensorweave.framework.tensor import Operation, Tensor

# TF 1.x's name rules (framework/ops.py): an op's full name, and a name scope opened at
# the root, must match _VALID_OP_NAME; a scope opened inside another may also start
# with '_', '-' or '/' (the full name still starts with the outer scope).
_VALID_OP_NAME = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$")
_VALID_SCOPE_NAME = re.compile(r"^[A-Za-z0-9_.\-/]*$")


class GraphScopesMixin:
    """`Graph`'s scope methods (state is created by Graph.__init__)."""

    _local: threading.local
    _gradient_overrides: dict[str, str]
    _names_in_use: dict[str, int]

    def _stack(self, name: str) -> list[Any]:
        stack = getattr(self._local, name, None)
        if stack is None:
            stack = []
            setattr(self._local, name, stack)
        return stack

    @property
    def _name_stack(self) -> str:
        return getattr(self._local, "name_stack", "")

    @_name_stack.setter
    def _name_stack(self, value: str) -> None:
        self._local.name_stack = value

    # ---- names -------------------------------------------------------------------
    def unique_name(self, name: str, mark_as_used: bool = True) -> str:
        if self._name_stack:
            name = f"{self._name_stack}/{name}"
        key = name.lower()
        count = self._names_in_use.get(key, 0)
        if mark_as_used:
            self._names_in_use[key] = count + 1
        if count > 0:
            base = name
            while True:
                name = f"{base}_{count}"
                if name.lower() not in self._names_in_use:
                    break
                count += 1
            if mark_as_used:
                self._names_in_use[name.lower()] = 1
        return name

    def get_name_scope(self) -> str:
        return self._name_stack

    @contextlib.contextmanager
    def name_scope(self, name: str | None) -> Iterator[str]:
        """Opens a name scope; yields its prefix ending in '/'.

        `None` or '' resets to the root scope; a name ending in '/' re-enters
        that exact scope.
        """
        old = self._name_stack
        if name:
            rule = _VALID_SCOPE_NAME if old else _VALID_OP_NAME
            if not rule.match(name):
                where = "inside a scope" if old else "at the root"
                raise ValueError(f"{name!r} is not a valid scope name: a scope name {where} "
                                 f"has to match {rule.pattern} (letters, digits, '.', '_', "
                                 "'-' and '/'; at the root not starting with '_', '-' or "
                                 "'/').")
        if not name:
            new = ""
        elif name.endswith("/"):
            new = name[:-1]
        else:
            new = self.unique_name(name)
        self._name_stack = new
        try:
            yield (new + "/") if new else ""
        finally:
            self._name_stack = old

    # ---- device / colocation / control scopes ------------------------------------
    @contextlib.contextmanager
    def container(self, container_name: str) -> Iterator[str]:
        """Stateful ops created inside (variables, queues) live in this resource
        container, which `tf.Session.reset(target, [container_name])` clears.

        Example:
            >>> with tf.container("experiment0"):
            ...     v = tf.Variable(1.0)     # VariableV2 with container "experiment0"
        """
        stack = self._stack("container_stack")
        stack.append(container_name or "")
        try:
            yield container_name
        finally:
            stack.pop()

    @contextlib.contextmanager
    def device(self, device_name_or_function: Any) -> Iterator[None]:
        """Scopes a device for new ops; nested string scopes merge field by field."""
        spec = device_name_or_function
        if spec is not None and not callable(spec):
            spec = _device.DeviceSpec.from_string(spec) if isinstance(spec, str) \
                else _device.DeviceSpec.from_string(spec.to_string())
        stack = self._stack("device_stack")
        stack.append(spec)
        try:
            yield
        finally:
            stack.pop()

    def _apply_device_functions(self, op: Operation) -> None:
        # Innermost first; each outer scope fills only the fields still unset.
        for fn in reversed(self._stack("device_stack")):
            if fn is None:
                break
            if isinstance(fn, _device.DeviceSpec):
                merged = fn.copy()
                merged.merge_from(_device.DeviceSpec.from_string(op._device))
                op._device = merged.to_string()
            else:
                op._device = _device.canonical(fn(op))

    @contextlib.contextmanager
    def colocate_with(self, op: Any, ignore_existing: bool = False) -> Iterator[None]:
        """New ops are placed with `op` (beats device scopes)."""
        if op is None:
            if not ignore_existing:
                raise ValueError("colocate_with(None) requires ignore_existing=True")
            target = None
        else:
            target = _as_op(op)
        coloc = self._stack("colocation_stack")
        saved_coloc = list(coloc)
        if ignore_existing:
            coloc.clear()
        if target is not None:
            coloc.append(target)
        saved_devices = self._local.__dict__.pop("device_stack", None)
        try:
            yield
        finally:
            self._local.device_stack = saved_devices if saved_devices is not None else []
            coloc[:] = saved_coloc

    @contextlib.contextmanager
    def control_dependencies(self, control_inputs: Any) -> Iterator[None]:
        """New ops run only after `control_inputs` (None clears outer scopes)."""
        stack = self._stack("control_stack")
        saved = list(stack)
        if control_inputs is None:
            stack.clear()
        else:
            ops = []
            for c in control_inputs:
                c = c.op if isinstance(c, Tensor) else c
                c = getattr(c, "_as_graph_element", lambda: c)()  # noqa: B023 - called now
                c = c.op if isinstance(c, Tensor) else c
                if not isinstance(c, Operation):
                    raise TypeError(f"Control input must be an Operation or Tensor, got {c!r}")
                ops.append(c)
            stack.append(ops)
        try:
            yield
        finally:
            stack[:] = saved

    @contextlib.contextmanager
    def gradient_override_map(self, op_type_map: dict[str, str]) -> Iterator[None]:
        """Ops of the mapped types made inside take their gradient from the name
        registered with `tf.RegisterGradient` (e.g. {"Round": "StraightThrough"})."""
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in op_type_map.items()):
            raise TypeError(f"gradient_override_map takes a dict of op type -> gradient "
                            f"name strings, got {op_type_map!r}")
        saved = dict(self._gradient_overrides)
        self._gradient_overrides.update(op_type_map)
        try:
            yield
        finally:
            self._gradient_overrides = saved

    def _current_control_inputs(self, inputs: list[Tensor]) -> list[Operation]:
        stack = self._stack("control_stack")
        if not stack:
            return []
        input_ops = {t.op for t in inputs}
        out: list[Operation] = []
        for group in stack:
            for c in group:
                if c not in input_ops and c not in out:
                    out.append(c)
        return out

    def _apply_colocation(self, op: Operation) -> None:
        coloc = self._stack("colocation_stack")
        if not coloc:
            return
        groups: list[bytes] = []
        for c in coloc:
            groups.extend(g for g in c.colocation_groups() if g not in groups)
            if c.device:
                op._device = c.device
        op._attrs["_class"] = groups


def _as_op(x: Any) -> Operation:
    if hasattr(x, "_as_graph_element") and not isinstance(x, (Tensor, Operation)):
        x = x._as_graph_element()
    if hasattr(x, "op") and isinstance(x.op, Operation):
        return x.op
    if isinstance(x, Operation):
        return x
    raise TypeError(f"Expected an Operation, Tensor or Variable, got {x!r}")

"""Tensor and Operation: the nodes and edges of a graph.

Example:
    >>> c = tf.constant([1.0, 2.0], name="c")
    >>> c.name, c.op.type, c.shape.as_list()
    ('c:0', 'Const', [2])
"""
from __future__ import annotations

import os
import sys
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.tensor_shape import TensorShape, as_shape, dimension_value
from tensorweave.framework.device import canonical

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_site() -> str:
    """file:line of the first caller outside tensorweave (where the op was made)."""
    f: FrameType | None = sys._getframe(2)
    while f is not None and f.f_code.co_filename.startswith(_PKG_DIR):
        f = f.f_back
    if f is None:
        return "<unknown>"
    return f"{f.f_code.co_filename}:{f.f_lineno}"


# The client (a higher layer) owns the default-session stack; it registers its getter
# here so that Tensor.eval / Operation.run / Variable.load can find the session.
def _no_client() -> Any:
    return None


_default_session_getter: Callable[[], Any] = _no_client


def register_default_session_getter(getter: Callable[[], Any]) -> None:
    """Installs `getter() -> Session | None` (done by `tensorweave.client.session`)."""
    global _default_session_getter
    _default_session_getter = getter


def default_session() -> Any:
    """The innermost default session of this thread, or None (no client loaded: None)."""
    return _default_session_getter()


def _run_using_default_session(fetch: Any, feed_dict: Any, graph: Any, session: Any) -> Any:
    if session is None:
        session = default_session()
        if session is None:
            raise ValueError(f"Cannot evaluate {fetch.name!r}: no default session is "
                             "registered. Use `with sess.as_default():` or pass session=sess.")
    if session.graph is not graph:
        raise ValueError(f"Cannot use the given session to evaluate {fetch.name!r}: its graph "
                         "is different from the session's graph.")
    return session.run(fetch, feed_dict)


class Tensor:
    """A symbolic handle to one output of an Operation.

    Example:
        >>> x = tf.placeholder(tf.float32, [None, 3])
        >>> x.get_shape().as_list()
        [None, 3]
    """

    __array_priority__ = 100  # make NumPy defer to our operators

    def __init__(self, op: "Operation", value_index: int, dtype: _dt.DType,
                 shape: TensorShape) -> None:
        self._op = op
        self._value_index = value_index
        self._dtype = dtype
        self._shape = shape
        self._consumers: list[Operation] = []

    @property
    def op(self) -> "Operation":
        return self._op

    @property
    def value_index(self) -> int:
        return self._value_index

    @property
    def dtype(self) -> _dt.DType:
        return self._dtype

    @property
    def graph(self) -> Any:
        return self._op.graph

    @property
    def name(self) -> str:
        return f"{self._op.name}:{self._value_index}"

    @property
    def device(self) -> str:
        return self._op.device

    @property
    def shape(self) -> TensorShape:
        return self._shape

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        """Refines the static shape; raises ValueError if incompatible."""
        shape = as_shape(shape)
        if not self._shape.is_compatible_with(shape):
            raise ValueError(f"Tensor {self.name} has shape {self._shape}, which is not "
                             f"compatible with the requested shape {shape}")
        self._shape = self._shape.merge_with(shape)

    def consumers(self) -> list["Operation"]:
        return list(self._consumers)

    def eval(self, feed_dict: Any = None, session: Any = None) -> Any:
        """Runs this tensor in `session` (default: the default session)."""
        return _run_using_default_session(self, feed_dict, self.graph, session)

    def _as_graph_element(self) -> "Tensor":
        return self

    def __repr__(self) -> str:
        return f"<tf.Tensor '{self.name}' shape={self._shape} dtype={self._dtype.name}>"

    __str__ = __repr__

    def __hash__(self) -> int:
        return id(self)

    def __eq__(self, other: object) -> bool:  # TF1: identity, so tensors work as dict keys
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __bool__(self) -> bool:
        raise TypeError(f"Using a tf.Tensor ({self.name}) as a Python bool is not allowed. Use "
                        "`if t is not None:` to test for existence, or tf.cond to branch on "
                        "its value.")

    def __iter__(self) -> Any:
        n = dimension_value(self._shape[0])
        if n is None:
            raise TypeError(f"Tensor {self.name} is not iterable: its first dimension is "
                            "unknown. Use tf.unstack with num= instead.")
        return iter([self[i] for i in range(n)])

    def __len__(self) -> int:
        n = dimension_value(self._shape[0])
        if n is None:
            raise TypeError(f"len() of Tensor {self.name} is unknown (shape {self._shape}).")
        return n

    @classmethod
    def _override_operator(cls, name: str, fn: Callable[..., Any]) -> None:
        setattr(cls, name, fn)

    if TYPE_CHECKING:
        # Installed by the ops families with _override_operator (math_ops, array ops).
        def __getitem__(self, key: Any) -> Tensor: ...
        def __add__(self, other: Any) -> Tensor: ...
        def __radd__(self, other: Any) -> Tensor: ...
        def __sub__(self, other: Any) -> Tensor: ...
        def __rsub__(self, other: Any) -> Tensor: ...
        def __mul__(self, other: Any) -> Tensor: ...
        def __rmul__(self, other: Any) -> Tensor: ...
        def __truediv__(self, other: Any) -> Tensor: ...
        def __rtruediv__(self, other: Any) -> Tensor: ...
        def __floordiv__(self, other: Any) -> Tensor: ...
        def __rfloordiv__(self, other: Any) -> Tensor: ...
        def __mod__(self, other: Any) -> Tensor: ...
        def __rmod__(self, other: Any) -> Tensor: ...
        def __pow__(self, other: Any) -> Tensor: ...
        def __rpow__(self, other: Any) -> Tensor: ...
        def __matmul__(self, other: Any) -> Tensor: ...
        def __rmatmul__(self, other: Any) -> Tensor: ...
        def __and__(self, other: Any) -> Tensor: ...
        def __rand__(self, other: Any) -> Tensor: ...
        def __or__(self, other: Any) -> Tensor: ...
        def __ror__(self, other: Any) -> Tensor: ...
        def __xor__(self, other: Any) -> Tensor: ...
        def __rxor__(self, other: Any) -> Tensor: ...
        def __lt__(self, other: Any) -> Tensor: ...
        def __le__(self, other: Any) -> Tensor: ...
        def __gt__(self, other: Any) -> Tensor: ...
        def __ge__(self, other: Any) -> Tensor: ...
        def __neg__(self) -> Tensor: ...
        def __abs__(self) -> Tensor: ...
        def __invert__(self) -> Tensor: ...


class Operation:
    """A node in a Graph: an op type applied to input tensors with attrs.

    Example:
        >>> op = tf.get_default_graph().get_operation_by_name("c")
        >>> op.type
        'Const'
    """

    def __init__(self, graph: Any, op_def: Any, name: str, inputs: list[Tensor],
                 attrs: dict[str, Any], device: str, control_inputs: list["Operation"],
                 outputs: list[tuple[_dt.DType, TensorShape]], op_id: int) -> None:
        self._graph = graph
        self._op_def = op_def
        self._name = name
        self._inputs = list(inputs)
        self._attrs = attrs
        self._device = device
        self._control_inputs = list(control_inputs)
        self._id = op_id
        self._control_outputs: list[Operation] = []
        self._outputs = [Tensor(self, i, dt, shp) for i, (dt, shp) in enumerate(outputs)]
        self._traceback = _user_site()
        for t in self._inputs:
            t._consumers.append(self)
        for c in self._control_inputs:
            c._control_outputs.append(self)

    @property
    def name(self) -> str:
        return self._name

    @property
    def type(self) -> str:
        return self._op_def.name

    @property
    def op_def(self) -> Any:
        return self._op_def

    @property
    def graph(self) -> Any:
        return self._graph

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        return tuple(self._inputs)

    @property
    def outputs(self) -> list[Tensor]:
        return list(self._outputs)

    def values(self) -> tuple[Tensor, ...]:
        return tuple(self._outputs)

    @property
    def control_inputs(self) -> list["Operation"]:
        return list(self._control_inputs)

    @property
    def device(self) -> str:
        return self._device

    @property
    def traceback(self) -> str:
        """Where in user code this op was created ("file:line")."""
        return self._traceback

    def _set_device(self, device: Any) -> None:
        self._device = canonical(device)
        self._graph._bump_version()

    def _add_control_input(self, op: "Operation") -> None:
        if op not in self._control_inputs:
            self._control_inputs.append(op)
            op._control_outputs.append(self)
            self._graph._bump_version()

    def _add_control_inputs(self, ops: list["Operation"]) -> None:
        for op in ops:
            self._add_control_input(op)

    def get_attr(self, name: str) -> Any:
        """The value of attr `name`; ValueError naming the op if absent."""
        if name not in self._attrs:
            raise ValueError(f"Operation {self._name!r} (op {self.type}) has no attr named "
                             f"{name!r}; it has {sorted(self._attrs)}")
        return self._attrs[name]

    def _set_attr(self, name: str, value: Any) -> None:
        self._attrs[name] = value
        self._graph._bump_version()

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self._attrs)

    def colocation_groups(self) -> list[bytes]:
        groups = self._attrs.get("_class")
        if groups:
            return [g if isinstance(g, bytes) else g.encode() for g in groups]
        return [f"loc:@{self._name}".encode()]

    @property
    def node_def(self) -> Any:
        from tensorweave.framework.graph_io import node_def_of
        return node_def_of(self)

    def run(self, feed_dict: Any = None, session: Any = None) -> None:
        """Runs this op in `session` (default: the default session)."""
        _run_using_default_session(self, feed_dict, self._graph, session)

    def _as_graph_element(self) -> "Operation":
        return self

    def __repr__(self) -> str:
        return f"<tf.Operation '{self._name}' type={self.type}>"

"""FuncGraph: the body graph of a functional op (a cond branch, a loop body).

A FuncGraph is a Graph whose ops run only when a functional op (If, While)
calls it. Its `inputs` are Placeholders fed with the call's arguments, its
`outputs` the Tensors the call returns. Using a tensor of an enclosing graph
inside the body "captures" it: the body gets a Placeholder for it, and the
functional op passes the outer tensor in as an extra argument.

Example:
    >>> g = tf.Graph()
    >>> with g.as_default():
    ...     c = tf.constant(2.0)
    ...     body = func_graph_from_py_func("double", lambda x: x * c, [tf.float32], g)
    >>> [t.op.type for t in body.inputs]
    ['Placeholder', 'Placeholder']
"""
from __future__ import annotations

import itertools
from typing import Any, Callable, Sequence

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import Graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, as_shape, plain_dims
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import get_default_graph

_func_ids = itertools.count(1)


class FuncGraph(Graph):
    """A function body: a Graph with `inputs`, `outputs` and captures of outer tensors.

    Args:
        name: the function's name (unique within a GraphDef's library).
        outer_graph: the graph this body is called from (captures come from there).

    Example:
        >>> body = FuncGraph("f", tf.get_default_graph())
        >>> body.building_function
        True
    """

    def __init__(self, name: str, outer_graph: Graph) -> None:
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        # Random ops derive their seeds from the graph seed: a body must see the same one.
        self.seed = outer_graph.seed
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        # Positions in the returned structure held by an Operation (or None) rather
        # than a Tensor; set by func_graph_from_py_func.
        self.structured_outputs: Any = None
        self._captures: dict[Tensor, Tensor] = {}  # outer tensor -> inner placeholder
        # Control dependencies on ops of enclosing graphs cannot live inside the body;
        # they are collected here and put on the functional op instead.
        self.outer_control_inputs: list[Operation] = []

    @property
    def captures(self) -> list[tuple[Tensor, Tensor]]:
        """(outer tensor, inner placeholder) pairs, in capture order."""
        return list(self._captures.items())

    def capture(self, tensor: Tensor) -> Tensor:
        """The inner placeholder standing for outer `tensor` (created on first use).

        Tensors of graphs further out are first captured by the enclosing
        FuncGraph, so each level passes the value down as an argument.

        Raises:
            ValueError: naming the tensor, if it belongs to no enclosing graph.
        """
        found = self._captures.get(tensor)
        if found is not None:
            return found
        source = tensor
        if tensor.graph is not self.outer_graph:
            if not _encloses(tensor.graph, self.outer_graph):
                raise ValueError(
                    f"Tensor {tensor.name} cannot be used in function body {self.name!r}: it "
                    "belongs to a graph that does not enclose this body. Build all ops of one "
                    "model in one graph.")
            outer = self.outer_graph
            assert isinstance(outer, FuncGraph)  # enclosed by tensor's graph: a body too
            source = outer.capture(tensor)
        with self.as_default():
            # Reference dtypes cannot cross a call boundary: the caller's executor
            # dereferences the value, so the body sees a snapshot.
            inner = _placeholder(self, source.dtype.base_dtype, source.shape,
                                 name="capture_" + _safe(tensor.op.name))
        self._captures[tensor] = inner
        self.inputs.append(inner)
        return inner

    def control_dependencies(self, control_inputs: Any) -> Any:
        """Like Graph.control_dependencies; outer ops are lifted onto the calling op."""
        if control_inputs is None:
            return super().control_dependencies(None)
        inner: list[Any] = []
        for c in control_inputs:
            c = getattr(c, "_as_graph_element", lambda c=c: c)()
            op = c.op if isinstance(c, Tensor) else c
            if isinstance(op, Operation) and op.graph is not self:
                if op not in self.outer_control_inputs:
                    self.outer_control_inputs.append(op)
                continue
            inner.append(c)
        return super().control_dependencies(inner)

    def _finish(self) -> None:
        """Makes the body runnable by the function library.

        The library runs every op that has no consumers, to keep side effects;
        an input Placeholder nobody reads would then be run (and fail as unfed),
        so each gets an Identity reader. Outputs that are inputs themselves get an
        Identity too, so that every output is produced by a body op.
        """
        def identity(t: Tensor, name: str) -> Tensor:
            # By op name: the Identity stanza lives in ops (a higher layer).
            return self.create_op("Identity", [t], name=name).outputs[0]

        input_set = set(self.inputs)
        with self.as_default(), self.name_scope("fn_io"):
            self.outputs = [identity(t, name="output") if t in input_set else t
                            for t in self.outputs]
            for t in self.inputs:
                if not t._consumers:
                    identity(t, name="unused_input")

    def __repr__(self) -> str:
        return f"<FuncGraph {self.name!r} inputs={len(self.inputs)} outputs={len(self.outputs)}>"


def _encloses(outer: Graph, inner: Graph | None) -> bool:
    g = inner
    while g is not None:
        if g is outer:
            return True
        g = g.outer_graph
    return False


def _safe(name: str) -> str:
    return name.replace("/", "_")


def _placeholder(graph: Graph, dtype: _dt.DType, shape: TensorShape, name: str) -> Tensor:
    return graph.create_op("Placeholder", [], {"dtype": dtype, "shape": plain_dims(shape)},
                           name=name).outputs[0]


def unique_function_name(base: str) -> str:
    """A process-wide unique function name (library names must not collide)."""
    return f"{_safe(base)}_{next(_func_ids)}"


# ---- nested structures -------------------------------------------------------------
def flatten(structure: Any) -> list[Any]:
    """Leaves of a nested list/tuple/dict (dicts in sorted key order).

    Example:
        >>> flatten({"b": 1, "a": [2, 3]})
        [2, 3, 1]
    """
    if isinstance(structure, dict):
        return [leaf for k in sorted(structure) for leaf in flatten(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [leaf for item in structure for leaf in flatten(item)]
    return [structure]


def pack_sequence_as(structure: Any, flat: Sequence[Any]) -> Any:
    """Inverse of `flatten`: `flat` leaves rebuilt into the shape of `structure`.

    Raises:
        ValueError: if the number of leaves differs (naming both counts).
    """
    it = iter(flat)

    def build(s: Any) -> Any:
        if isinstance(s, dict):
            vals = {k: build(s[k]) for k in sorted(s)}
            return type(s)((k, vals[k]) for k in s)
        if isinstance(s, (list, tuple)):
            items = [build(x) for x in s]
            if isinstance(s, tuple) and hasattr(s, "_fields"):  # namedtuple
                return type(s)(*items)
            return type(s)(items)
        return next(it)

    flat = list(flat)
    n = len(flatten(structure))
    if n != len(flat):
        raise ValueError(f"Structure has {n} leaves but {len(flat)} values were given: "
                         f"{structure!r}")
    return build(structure)


def assert_same_structure(a: Any, b: Any, what_a: str, what_b: str) -> None:
    """Raises ValueError naming both sides when `a` and `b` are nested differently."""
    def shape_of(s: Any) -> Any:
        if isinstance(s, dict):
            return ("dict", tuple((k, shape_of(s[k])) for k in sorted(s)))
        if isinstance(s, (list, tuple)):
            return ("seq", tuple(shape_of(x) for x in s))
        return "leaf"
    if shape_of(a) != shape_of(b):
        raise ValueError(f"{what_a} and {what_b} must have the same nested structure; got "
                         f"{what_a}: {a!r} and {what_b}: {b!r}")


# ---- building a body from Python ---------------------------------------------------
def func_graph_from_py_func(name: str, fn: Callable[..., Any], arg_specs: Sequence[Any],
                            outer_graph: Graph, structured_args: Any = None,
                            unique: bool = True) -> FuncGraph:
    """Traces `fn` into a new FuncGraph called from `outer_graph`.

    Args:
        name: base name of the function (made unique unless `unique=False`).
        fn: called with one Placeholder per arg spec (repacked into
            `structured_args` when given, then splatted if it is a list/tuple);
            returns a (nested) structure of Tensors, convertible values,
            Operations or None.
        arg_specs: per argument, a DType, or a (dtype, shape) pair.
        outer_graph: the enclosing graph (where captured tensors live).
        structured_args: how to pack the placeholders before calling `fn`.

    Returns:
        The FuncGraph; `outputs` are the Tensors of the returned structure
        (Operations and None left out) and `structured_outputs` the structure
        itself, with Operations in place.

    Example:
        >>> body = func_graph_from_py_func("inc", lambda x: x + 1, [tf.int32], g)
        >>> len(body.outputs)
        1
    """
    fg = FuncGraph(unique_function_name(name) if unique else name, outer_graph)
    with fg.as_default():
        args = []
        for i, spec in enumerate(arg_specs):
            dtype, shape = (spec if isinstance(spec, tuple) else (spec, None))
            args.append(_placeholder(fg, _dt.as_dtype(dtype), as_shape(shape), f"arg{i}"))
        fg.inputs = list(args)
        if structured_args is None:
            result = fn(*args)
        else:
            packed = pack_sequence_as(structured_args, args)
            result = fn(*packed) if isinstance(packed, (list, tuple)) else fn(packed)

        def to_out(x: Any) -> Any:
            if x is None or isinstance(x, Operation):
                return x
            if isinstance(x, Tensor):
                return x
            elem = getattr(x, "_as_graph_element", None)
            if elem is not None:
                x = elem()
                if isinstance(x, Operation):
                    return x
            return convert_to_tensor(x)

        leaves = [to_out(x) for x in flatten(result)]
        # Captured outer tensors returned as-is become their inner placeholders.
        leaves = [fg.capture(x) if isinstance(x, Tensor) and x.graph is not fg else x
                  for x in leaves]
        fg.structured_outputs = pack_sequence_as(result, leaves) \
            if isinstance(result, (list, tuple, dict)) else leaves[0]
        fg.outputs = [x for x in leaves if isinstance(x, Tensor)]
    return fg


def copy_func_body(src: FuncGraph, args: Sequence[Tensor], dst: Graph | None = None,
                   replace: dict[Tensor, Tensor] | None = None) -> list[Tensor]:
    """Re-creates the ops of `src` in `dst` (default: the default graph) with the
    body's inputs replaced by `args`; returns the copies of `src.outputs`.

    Used by gradients: the gradient body recomputes the forward body so that
    tf.gradients can differentiate through its ops. `replace` maps tensors of
    `src` to given values; an op all of whose outputs are replaced is not copied
    (so a recorded stateful op is not run again).
    """
    dst = dst or get_default_graph()
    if len(args) != len(src.inputs):
        raise ValueError(f"Function {src.name!r} takes {len(src.inputs)} inputs, got "
                         f"{len(args)}")
    mapping: dict[Tensor, Tensor] = dict(zip(src.inputs, args))
    mapping.update(replace or {})
    op_map: dict[Operation, Operation] = {}
    input_ops = {t.op for t in src.inputs}
    with dst.as_default():
        for op in src.get_operations():
            if op in input_ops or (op._outputs and all(t in mapping for t in op._outputs)):
                continue
            new_op = _copy_op(op, mapping, op_map, dst)
            op_map[op] = new_op
            for old, new in zip(op._outputs, new_op._outputs):
                mapping[old] = new
    return [mapping[t] for t in src.outputs]


class RecordingView:
    """`fg` as the function library sees it, returning extra tensors after its outputs.

    The While gradient records, per iteration, the outputs of the body's
    stateful ops (random draws, reads of variables) so that the gradient body
    reuses those values instead of running the ops again.
    """

    def __init__(self, fg: FuncGraph, extra: Sequence[Tensor]) -> None:
        self.fg = fg
        self.inputs = fg.inputs
        self.extra = list(extra)
        self.outputs = list(fg.outputs) + self.extra

    def get_operations(self) -> list[Operation]:
        return self.fg.get_operations()


_NOT_RECORDED = ("If", "While", "WhileGrad", "FunctionalScan", "FunctionalScanGrad", "Placeholder")


def recording_view(fg: FuncGraph) -> RecordingView:
    """The (cached) RecordingView of `fg`: extra outputs are its stateful ops' values."""
    view = fg.__dict__.get("_recording_view")
    if view is None:
        # Only ops no gradient flows through are recorded (random draws: their inputs
        # are shapes); replacing e.g. Print's output would cut the gradient path.
        # Functional ops recompute (their bodies are differentiated through); ref
        # outputs are storage, not values.
        extra = [t for op in fg.get_operations()
                 if op.op_def.stateful and op.type not in _NOT_RECORDED
                 and not any(i.dtype.base_dtype.is_floating or i.dtype.base_dtype.is_complex
                             for i in op._inputs)
                 for t in op._outputs if not t.dtype.is_ref_dtype]
        view = fg.__dict__["_recording_view"] = RecordingView(fg, extra)
    return view


def _copy_op(op: Operation, mapping: dict[Tensor, Tensor], op_map: dict[Operation, Operation],
             dst: Graph) -> Operation:
    grouped: list[Any] = []
    flat = iter(op._inputs)
    for spec in op.op_def.inputs:
        if spec.is_list:
            n = op._attrs[op.op_def.list_attr(spec.name)]
            grouped.append([mapping[next(flat)] for _ in range(n)])
        else:
            grouped.append(mapping[next(flat)])
    attrs = {k: v for k, v in op._attrs.items() if k != "_class"}
    for spec in op.op_def.inputs:
        if spec.is_list:
            attrs.pop(op.op_def.list_attr(spec.name), None)
    ctrl = [op_map[c] for c in op._control_inputs if c in op_map]
    with dst.control_dependencies(ctrl):
        return dst.create_op(op.type, grouped, attrs, name=op.name.rsplit("/", 1)[-1])

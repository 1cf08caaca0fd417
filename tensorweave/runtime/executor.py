"""The executor: compiles a pruned graph into a cached plan and runs it.

Two strategies share one node table:
- straight-line: plans without async kernels are generated as one Python
  function (one line per op), so a step costs one call per kernel;
- dataflow: plans with async kernels (queues, Recv) run ready ops as their
  inputs arrive and park async ops on callbacks, so a blocked dequeue never
  stops an independent enqueue of the same step. Untraced steps run it at the
  grain of compiled blocks (blocks.py); traced steps node by node, stamping each.
"""
from __future__ import annotations

import collections
import functools
import itertools
import queue
import threading
import time
from typing import Any, Callable

from tensorweave.framework import errors
from tensorweave.framework.op_def import ASYNC, CONTEXT
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.runtime.blocks import BlockPlan, fusable_reads, send_key, send_variable
from tensorweave.runtime.inline import NOTHING, call_expr, inline_expr, inline_how
from tensorweave.runtime.node_errors import node_error
from tensorweave.runtime.plan import prune
from tensorweave.runtime.resource_mgr import DeviceContext
from tensorweave.runtime.step import StepState
from tensorweave.runtime.step_stats import now

_plan_ids = itertools.count()


class OpContext:
    """What a context/async kernel sees of its node; `state` persists across steps."""

    __slots__ = ("op", "name", "type", "device", "resources", "state", "library")

    def __init__(self, op: Operation, device: DeviceContext, library: "FunctionLibrary") -> None:
        self.op = op
        self.name = op.name
        self.type = op.type
        self.device = device.name
        self.resources = device.resource_mgr
        self.state: dict[str, Any] = {}
        self.library = library

    def call_function(self, func_graph: Any, inputs: list[Any], step: StepState) -> list[Any]:
        """Runs a function body (cond branch, loop body) on this device."""
        return self.library.call(func_graph, inputs, step)


class FunctionLibrary:
    """Compiles and caches executors for function bodies and for kernels' contexts."""

    def __init__(self, device: DeviceContext) -> None:
        self.device = device
        self.contexts: dict[int, OpContext] = {}  # op id -> context, shared by all plans
        self._funcs: dict[int, Executor] = {}

    def context(self, op: Operation) -> OpContext:
        ctx = self.contexts.get(id(op))
        if ctx is None:
            ctx = self.contexts[id(op)] = OpContext(op, self.device, self)
        return ctx

    def call(self, func_graph: Any, inputs: list[Any], step: StepState) -> list[Any]:
        ex = self._funcs.get(id(func_graph))
        if ex is None:
            arg_ops = {id(t.op) for t in func_graph.inputs}
            # Sinks run for their side effects; the body's own arguments are fed, not run.
            sinks = [op for op in func_graph.get_operations()
                     if id(op) not in arg_ops and not op._control_outputs
                     and all(not t._consumers for t in op._outputs)]
            ex = Executor(func_graph.inputs, func_graph.outputs, sinks, self)
            self._funcs[id(func_graph)] = ex
        return ex.run(inputs, step)


def _deref(resource: Any) -> Any:
    # Fed values of a reference type may already be plain arrays.
    return resource.snapshot() if hasattr(resource, "snapshot") else resource


def _borrow(resource: Any) -> Any:
    # The live buffer, for kernels that copy what they keep (OpDef.borrow_refs).
    return resource.read() if hasattr(resource, "read") else resource


def _deref_as(mode: Any, value: Any) -> Any:
    if not mode:
        return value
    return _borrow(value) if mode == _BORROW else _deref(value)


_BORROW = "borrow"
# Guards the lazy build of a callable's block plan (rare: once per callable).
_PLAN_LOCK = threading.Lock()


class _Node:
    """A node of the plan: `fn` is the kernel with its context and attrs bound (the
    node-by-node loop calls it); compiled plans call `raw` with them spelled out, or
    write the kernel as an expression when `inline` says how (runtime/inline.py)."""

    __slots__ = ("op", "fn", "kind", "args", "n_out", "raw", "ctx", "attrs", "inline")

    def __init__(self, op: Operation, fn: Callable[..., Any], kind: str, args: list[Any],
                 raw: Callable[..., Any], ctx: Any, attrs: dict[str, Any]):
        self.op, self.fn, self.kind, self.args = op, fn, kind, args
        self.raw, self.ctx, self.attrs = raw, ctx, attrs
        self.n_out = len(op._outputs)
        plain_args = len(args) == 1 and args[0][0] != "list" or not args
        self.inline = inline_how(raw, kind, attrs, len(args)) if plain_args else None
        if self.inline is not None and self.n_out != (self.inline != NOTHING):
            self.inline = None  # a marked kernel of an op with another arity: called

    def line(self, i: int, args: list[str], ns: dict[str, Any]) -> str | None:
        """The expression of node `i`'s output(s) in a compiled plan (its kernel call,
        or what stands for an inlined kernel; None: no line), names put into `ns`."""
        if self.inline is not None:
            return inline_expr(i, self.inline, self.attrs, args, ns)
        return call_expr(i, self.raw, self.kind, self.attrs, self.ctx, args, ns)


class Executor:
    """Runs one pruned graph on one device; build once, `run` many times.

    Args:
        feeds: tensors whose values are supplied to `run`.
        fetches: tensors whose values `run` returns, in order.
        targets: ops that must run but return nothing.
        library: the device's FunctionLibrary (kernel contexts, function bodies).
    """

    def __init__(self, feeds: list[Tensor], fetches: list[Tensor], targets: list[Operation],
                 library: FunctionLibrary, ops: list[Operation] | None = None) -> None:
        self.feeds = list(feeds)
        self.fetches = list(fetches)
        self.ops = prune(fetches, targets, feeds) if ops is None else ops
        self.library = library
        self._feed_index = {t: i for i, t in enumerate(self.feeds)}
        self._nodes = [self._make_node(op) for op in self.ops]
        self.is_async = any(n.kind == ASYNC for n in self._nodes)
        if not self.is_async:
            self._compile_straight_line()

    # Each argument is ("feed", k) | ("val", node_index, output) | ("list", [...]) with a
    # deref flag when a reference flows into a value input.
    def _make_node(self, op: Operation) -> _Node:
        reg = op.op_def.kernels.get("CPU")
        if reg is None:
            raise errors.InvalidArgumentError(
                None, op, f"No CPU kernel is registered for op {op.type} (node {op.name}). "
                f"Register one with @{op.type}_op.kernel('CPU').")
        attrs = {k: op._attrs[k] for k in op.op_def.attrs}
        fn, ctx = reg.fn, None
        if reg.kind in (CONTEXT, ASYNC):
            ctx = self.library.context(op)
            fn = functools.partial(fn, ctx, **attrs)
        elif attrs:
            fn = functools.partial(fn, **attrs)
        args: list[Any] = []
        flat = iter(op._inputs)
        for spec in op.op_def.inputs:
            n = op._attrs[op.op_def.list_attr(spec.name)] if spec.is_list else 1
            group = [self._source(next(flat), spec.is_ref, op.op_def.borrows_refs)
                     for _ in range(n)]
            args.append(("list", group) if spec.is_list else group[0])
        return _Node(op, fn, reg.kind, args, reg.fn, ctx, attrs)

    def _source(self, t: Tensor, wants_ref: bool, borrow: bool = False) -> tuple[Any, ...]:
        deref: Any = t.dtype.is_ref_dtype and not wants_ref
        if deref and borrow:
            deref = _BORROW
        if t in self._feed_index:
            return ("feed", self._feed_index[t], deref)
        return ("val", self._op_index(t.op), t.value_index, deref)

    def _op_index(self, op: Operation) -> int:
        if not hasattr(self, "_index"):
            self._index = {id(o): i for i, o in enumerate(self.ops)}
        return self._index[id(op)]

    # ---- straight-line strategy --------------------------------------------------
    def _expr(self, src: tuple[Any, ...]) -> str:
        if src[0] == "list":
            return "[" + ", ".join(self._expr(s) for s in src[1]) + "]"
        if src[0] == "feed":
            return self._wrap(f"f[{src[1]}]", src[2])
        return self._wrap(f"v{src[1]}_{src[2]}", src[3])

    @staticmethod
    def _wrap(expr: str, mode: Any) -> str:
        if not mode:
            return expr
        return f"_borrow({expr})" if mode == _BORROW else f"_deref({expr})"

    def _compile_straight_line(self) -> None:
        lines = ["def _plan(step, f):"]
        self._line_to_op: dict[int, Operation] = {}
        ns: dict[str, Any] = {"_deref": _deref, "_borrow": _borrow, "_sv": send_variable}
        fused = fusable_reads(self._nodes, self._fetched())  # variable reads + their _Send
        for i, node in enumerate(self._nodes):
            if i in fused:
                ns[f"K{i}"] = send_key(self._nodes[fused[i]].op)
                lines.append(f"    _sv(step, K{i}, {self._expr(node.args[0][:-1] + (None,))})")
                self._line_to_op[len(lines)] = node.op
                continue
            if i in fused.values():
                continue
            call = node.line(i, [self._expr(a) for a in node.args], ns)
            if call is None:
                continue  # an inlined kernel without outputs (NoOp)
            if node.n_out == 0:
                lines.append(f"    {call}")
            elif node.n_out == 1:
                lines.append(f"    v{i}_0 = {call}")
            else:
                outs = ", ".join(f"v{i}_{j}" for j in range(node.n_out))
                lines.append(f"    {outs}, = {call}")
            self._line_to_op[len(lines)] = node.op
        rets = [self._expr(self._fetch_source(t)) for t in self.fetches]
        lines.append(f"    return [{', '.join(rets)}]")
        code = compile("\n".join(lines), f"<tensorweave plan {next(_plan_ids)}>", "exec")
        exec(code, ns)  # noqa: S102 - generated from our own node table only
        self._fn = ns["_plan"]

    def _fetched(self) -> frozenset[int]:
        return frozenset(self._op_index(t.op) for t in self.fetches if t not in self._feed_index)

    def _fetch_source(self, t: Tensor) -> tuple[Any, ...]:
        return self._source(t, wants_ref=False)

    def run(self, feed_values: list[Any], step: StepState) -> list[Any]:
        """Runs one step; raises the tf.errors class of the first failing node.

        A traced step (`step.stats` set) runs the node table through the dataflow
        loop, which stamps each node; the compiled plan stays untouched and free.
        """
        if step.stats is not None:
            return self._run_dataflow(feed_values, step, step.stats)
        if self.is_async:
            return self._run_blocks(feed_values, step)
        try:
            return self._fn(step, feed_values)
        except BaseException as e:  # noqa: BLE001 - mapped to the failing node below
            op = self._failed_op(e)
            if op is None:
                raise
            raise node_error(op, e) from None

    def _failed_op(self, exc: BaseException) -> Operation | None:
        tb = exc.__traceback__
        code = self._fn.__code__
        while tb is not None:
            if tb.tb_frame.f_code is code:
                return self._line_to_op.get(tb.tb_lineno)
            tb = tb.tb_next
        return None

    # ---- dataflow strategy -------------------------------------------------------
    def _run_blocks(self, feeds: list[Any], step: StepState) -> list[Any]:
        plan = getattr(self, "_blocks", None)
        if plan is None:
            with _PLAN_LOCK:   # one thread builds; the others wait and reuse it
                plan = getattr(self, "_blocks", None)
                if plan is None:
                    if not hasattr(self, "_succ"):
                        self._build_dataflow_tables()
                    ns = {"_deref": _deref, "_borrow": _borrow}
                    plan = BlockPlan(self._nodes, self._preds, ns, node_error, self._wait,
                                     self._fetched())
                    self._fetch_fn = plan.fetch_code(
                        [self._fetch_source(t) for t in self.fetches], ns)
                    self._blocks = plan
        return self._fetch_fn(feeds, plan.run(feeds, step))

    def _run_dataflow(self, feeds: list[Any], step: StepState, stats: Any = None
                      ) -> list[Any]:
        nodes = self._nodes
        device = self.library.device.name
        started: dict[int, float] = {}  # async node -> dispatch time, when traced
        if not hasattr(self, "_succ"):
            self._build_dataflow_tables()
        values: list[Any] = [None] * len(nodes)
        pending = list(self._indeg)
        ready = collections.deque(i for i, d in enumerate(pending) if d == 0)
        done_q: queue.SimpleQueue = queue.SimpleQueue()
        outstanding = 0

        def arg(src: tuple[Any, ...]) -> Any:
            if src[0] == "list":
                return [arg(s) for s in src[1]]
            if src[0] == "feed":
                return _deref_as(src[2], feeds[src[1]])
            return _deref_as(src[3], values[src[1]][src[2]])

        while True:
            while ready:
                i = ready.popleft()
                node = nodes[i]
                try:
                    args = [arg(a) for a in node.args]
                    t0 = now() if stats is not None else 0.0
                    if node.kind == ASYNC:
                        outstanding += 1
                        if stats is not None:
                            started[i] = t0
                        node.fn(step, functools.partial(_put, done_q, i), *args)
                        continue
                    out = node.fn(step, *args) if node.kind == CONTEXT else node.fn(*args)
                except BaseException as e:  # noqa: BLE001
                    err = node_error(node.op, e)
                    step.cancel(err)
                    raise err from None
                if stats is not None:
                    stats.record(device, node.op, t0, now(), out)
                self._finish(i, out, values, pending, ready)
            if done_q.empty():  # else completions that arrived run first (blocks.py)
                step.flush()  # nothing runnable until a wait ends: held Sends leave now
                if outstanding == 0:
                    break
            i, out = self._wait(done_q, step)
            outstanding -= 1
            if isinstance(out, BaseException):
                err = node_error(nodes[i].op, out)
                step.cancel(err)
                raise err from None
            if stats is not None:
                stats.record(device, nodes[i].op, started.pop(i), now(), out)
            self._finish(i, out, values, pending, ready)
        return [arg(self._fetch_source(t)) for t in self.fetches]

    def _wait(self, done_q: queue.SimpleQueue, step: StepState) -> tuple[int, Any]:
        give_up = None  # once cancelled, kernels get a grace period to report back
        while True:
            remaining = step.remaining()
            if remaining is not None and remaining <= 0 and step.cancelled is None:
                step.cancel(errors.DeadlineExceededError(
                    None, None, "Timed out waiting for notification: a blocking op (queue, "
                    "accumulator or Recv) did not finish in time; raise "
                    "RunOptions.timeout_in_ms if the wait is expected."))
            if step.cancelled is not None:
                give_up = give_up or time.monotonic() + 5.0
                if time.monotonic() > give_up:
                    raise step.cancelled
            try:
                return done_q.get(timeout=0.2)
            except queue.Empty:
                continue

    def _finish(self, i: int, out: Any, values: list[Any], pending: list[int],
                ready: collections.deque) -> None:
        n = self._nodes[i].n_out
        values[i] = (out,) if n == 1 else out
        for s in self._succ[i]:
            pending[s] -= 1
            if pending[s] == 0:
                ready.append(s)

    def _build_dataflow_tables(self) -> None:
        # Built in locals and published last, `_succ` (what the callers test) after the
        # others: threads running one callable (a queue runner's) may race to build them.
        index = {id(op): i for i, op in enumerate(self.ops)}
        succ: list[list[int]] = [[] for _ in self.ops]
        indeg: list[int] = []
        preds_of: list[set[int]] = []
        fed = set(self.feeds)
        for i, op in enumerate(self.ops):
            preds = {index[id(t.op)] for t in op._inputs if t not in fed and id(t.op) in index}
            preds |= {index[id(c)] for c in op._control_inputs if id(c) in index}
            preds_of.append(preds)
            indeg.append(len(preds))
            for p in preds:
                succ[p].append(i)
        self._preds, self._indeg = preds_of, indeg
        self._succ = succ


def _put(q: queue.SimpleQueue, i: int, result: Any) -> None:
    q.put((i, result))

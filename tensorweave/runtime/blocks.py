"""Compiled blocks: the dataflow strategy at the grain of "what a wait unblocks".

A plan with async kernels (Recv, queue ops) cannot be one straight-line
function, because a node must not wait on a Recv while an independent Send of
the same step could still run. But most of its nodes are ordinary kernels, and
running each through a scheduler loop cost ~3 us a node (a partition of a
20-layer model has ~270 nodes a step).

So nodes are grouped by their *signature*: the set of async nodes they
depend on, directly or not. Every node of one signature becomes runnable at
the same moment, when the last async node of its signature completes (and
the blocks of smaller signatures, which it may read from, are already done):
so a block is compiled like a straight-line plan, one Python line per kernel,
and the scheduler runs blocks, not nodes. A block ends by dispatching the
async nodes whose inputs it computed; their completions unblock the next
blocks. Ready blocks run in the order they become ready, exactly as their
nodes would have, so what may run concurrently still does.

An async kernel that completes while it is being dispatched (a Recv whose
tensor already arrived) is consumed at once, without the completion queue.

_Send and _Recv, a partition's most frequent nodes, are not called as kernels:
their rendezvous keys are computed once, a block line hands the tensor to (or
asks it from) the step's rendezvous directly, and one cancel callback per run
wakes every Recv still waiting (a kernel each would cost a lock, a closure and
a cancel registration per tensor per step).

A variable read (Identity of a reference) whose one consumer is a _Send is
fused with it: instead of a snapshot copy held until the burst's flush, a big
value (>= 64 KiB) is pushed at once from the variable's live buffer (the
transport copies it into its socket before the line ends: the same moment a
snapshot would be taken, one copy of a big variable fewer a step, and its
transfer starts sooner); a small one is snapshotted and held as before.
"""
from __future__ import annotations

import collections
import functools
import itertools
import queue
import threading
from typing import Any, Callable

from tensorweave.framework.op_def import ASYNC
from tensorweave.framework.tensor import Operation
from tensorweave.runtime.rendezvous import make_key

_block_ids = itertools.count()
# Nodes that cost next to nothing: a block does not flush early to run only these.
_NO_WORK = frozenset({"Const", "_Recv", "NoOp", "Identity"})


class _Block:
    __slots__ = ("fn", "lines", "succ", "indeg")

    def __init__(self) -> None:
        self.fn: Callable[..., None] | None = None
        self.lines: dict[int, Operation] = {}
        self.succ: list[int] = []  # blocks fed by this one
        self.indeg = 0             # distinct blocks and async nodes feeding this one


class BlockPlan:
    """A dataflow plan compiled into blocks; build once, `run` many times.

    Args:
        nodes: the executor's node table (`op`, `fn`, `kind`, `args`, `n_out`),
            in topological order.
        deps: for each node, the indices of the nodes it depends on (data and
            control), feeds excluded.
        expr_ns: names the generated code may use (`_deref`, `_borrow`).
        node_error: maps (op, exception) to the tf.errors exception to raise.
        wait: `wait(done_q, step)` blocks for the next async completion,
            honouring the step's deadline and cancellation.
    """

    def __init__(self, nodes: list[Any], deps: list[set[int]], expr_ns: dict[str, Any],
                 node_error: Callable[[Operation, BaseException], BaseException],
                 wait: Callable[[queue.SimpleQueue, Any], tuple[int, Any]],
                 fetched: frozenset[int] = frozenset()) -> None:
        self._nodes = nodes
        self._node_error = node_error
        self._wait = wait
        self._slot = list(itertools.accumulate((n.n_out for n in nodes), initial=0))
        self.n_slots = self._slot[-1]
        block_of = self._group(nodes, deps)
        self.blocks = [_Block() for _ in range(max(block_of, default=-1) + 1)]
        members: list[list[int]] = [[] for _ in self.blocks]
        for i, b in enumerate(block_of):
            members[b].append(i)
        self._fused = fusable_reads(nodes, fetched, block_of)  # Identity -> its _Send
        fused_sends = set(self._fused.values())
        # Async node -> blocks consuming its outputs (a completion decrements them).
        self._async_succ: dict[int, list[int]] = {i: [] for i, n in enumerate(nodes)
                                                  if n.kind == ASYNC}
        for b, idx in enumerate(members):
            feeders: set[tuple[str, int]] = set()
            for i in idx:
                for d in deps[i]:
                    if nodes[d].kind == ASYNC:
                        feeders.add(("a", d))
                    elif block_of[d] != b:
                        feeders.add(("b", block_of[d]))
            for kind, j in feeders:
                (self._async_succ[j] if kind == "a" else self.blocks[j].succ).append(b)
            self.blocks[b].indeg = len(feeders)
            self._compile(b, self._sends_first(idx, deps), expr_ns, fused_sends)
        self.roots = [b for b, blk in enumerate(self.blocks) if blk.indeg == 0]

    @staticmethod
    def _group(nodes: list[Any], deps: list[set[int]]) -> list[int]:
        """Each node's block: one block per distinct signature, numbered in order of
        first appearance (so block order is a topological order too)."""
        sigs: list[frozenset[int]] = []
        ids: dict[frozenset[int], int] = {}
        out = []
        for i in range(len(nodes)):
            sig: frozenset[int] = frozenset()
            for d in deps[i]:
                sig |= sigs[d]
                if nodes[d].kind == ASYNC:
                    sig |= {d}
            sigs.append(sig)
            out.append(ids.setdefault(sig, len(ids)))
        return out

    def _val(self, src: tuple[Any, ...]) -> str:
        if src[0] == "list":
            return "[" + ", ".join(self._val(s) for s in src[1]) + "]"
        if src[0] == "feed":
            expr, mode = f"f[{src[1]}]", src[2]
        else:
            expr, mode = f"s[{self._slot[src[1]] + src[2]}]", src[3]
        if not mode:
            return expr
        return f"_borrow({expr})" if mode == "borrow" else f"_deref({expr})"

    def _sends_first(self, idx: list[int], deps: list[set[int]]
                     ) -> tuple[list[int], int | None]:
        """`idx` with the nodes its _Sends (and _Recvs) need first, and where the rest
        begins when real work follows them (None when nothing does).

        A block's Sends are held until the executor runs out of work, so that a burst
        leaves as one message. When the block goes on computing what no Send needs (a
        worker's first block: the combiners' segment ids, the dense features), the
        tasks waiting for those Sends would wait for all of it: the block flushes as
        soon as its last Send is made instead, and the ps gathers while the worker
        computes (wide & deep: 209 of the first block's 491 nodes come after).
        """
        nodes, members = self._nodes, set(idx)
        need: set[int] = set()
        stack = [i for i in idx if nodes[i].op.type in ("_Send", "_Recv")]
        if not any(nodes[i].op.type == "_Send" for i in stack):
            return idx, None
        while stack:
            i = stack.pop()
            if i not in need:
                need.add(i)
                stack.extend(d for d in deps[i] if d in members)
        rest = [i for i in idx if i not in need]
        if not any(nodes[i].op.type not in _NO_WORK for i in rest):
            return idx, None
        head = [i for i in idx if i in need]
        return head + rest, len(head)

    def _compile(self, b: int, order: tuple[list[int], int | None], expr_ns: dict[str, Any],
                 fused_sends: set[int]) -> None:
        lines = ["def _block(step, f, s, run):"]
        ns: dict[str, Any] = dict(expr_ns)
        block = self.blocks[b]
        idx, rest_at = order  # the block's nodes; where the early flush goes (or None)
        for k, i in enumerate(idx):
            if k == rest_at:
                lines.append("    run.flush_early(step)")
            if i in fused_sends:
                continue  # runs with the variable read it is fused with
            lines.append("    " + self._line(i, ns))
            block.lines[len(lines)] = self._nodes[i].op
        if len(lines) == 1:
            lines.append("    pass")
        code = compile("\n".join(lines), f"<tensorweave block {next(_block_ids)}>", "exec")
        exec(code, ns)  # noqa: S102 - generated from our own node table only
        block.fn = ns["_block"]

    def _line(self, i: int, ns: dict[str, Any]) -> str:
        """Node `i`'s line of its block; the names it uses go into `ns`."""
        node = self._nodes[i]
        op = node.op
        if i in self._fused:  # a variable read and its _Send
            ns[f"K{i}"], ns["_send_variable"] = send_key(self._nodes[self._fused[i]].op), \
                send_variable
            return f"_send_variable(step, K{i}, {self._val(node.args[0][:-1] + (None,))})"
        if op.type == "_Send":
            ns[f"K{i}"] = send_key(op)
            return f"step.rendezvous.send(K{i}, {self._val(node.args[0])})"
        if op.type == "_Recv":
            ns[f"K{i}"], ns[f"D{i}"] = send_key(op), op.get_attr("send_device")
            return f"run.recv(step, {i}, K{i}, D{i})"
        values = [self._val(a) for a in node.args]
        if node.kind == ASYNC:
            return node.line(i, [f"run.callback({i})"] + values, ns)
        call = node.line(i, values, ns)
        if call is None:
            return "pass"  # an inlined kernel without outputs (NoOp)
        if node.n_out == 0:
            return call
        if node.n_out == 1:
            return f"s[{self._slot[i]}] = {call}"
        return f"s[{self._slot[i]}:{self._slot[i] + node.n_out}] = {call}"

    def fetch_code(self, fetches: list[tuple[Any, ...]], expr_ns: dict[str, Any]
                   ) -> Callable[[list[Any], list[Any]], list[Any]]:
        """A function (f, s) -> the fetched values, for the executor's fetch sources."""
        body = ", ".join(self._val(src) for src in fetches)
        ns = dict(expr_ns)
        exec(compile(f"def _fetch(f, s):\n    return [{body}]", "<tensorweave fetch>",  # noqa: S102
                     "exec"), ns)
        return ns["_fetch"]

    # ---- running -------------------------------------------------------------------
    def run(self, feeds: list[Any], step: Any) -> list[Any]:
        """Runs every block once; returns the slots (each node output's value)."""
        slots: list[Any] = [None] * self.n_slots
        blocks = self.blocks
        pending = [blk.indeg for blk in blocks]
        ready = collections.deque(self.roots)
        state = _RunState(ready)
        while True:
            while ready:
                b = ready.popleft()
                state.dispatching = True
                try:
                    blocks[b].fn(step, feeds, slots, state)  # type: ignore[misc]
                except BaseException as e:  # noqa: BLE001 - attributed to its node below
                    state.dispatching = False
                    self._fail(step, self._failed_op(b, e), e)
                state.dispatching = False
                for s in blocks[b].succ:
                    pending[s] -= 1
                    if pending[s] == 0:
                        ready.append(s)
                while state.inline:  # async kernels that completed while dispatched
                    i, out = state.inline.popleft()
                    state.outstanding -= 1
                    self._complete(i, out, step, slots, pending, ready, state)
            # Completions that already arrived (a frame delivers several Recvs at once)
            # run first, so that their Sends leave in the same message as those held.
            if state.done_q.empty():
                step.flush()  # nothing runnable until a wait ends: held Sends leave now
                if state.outstanding == 0:
                    return slots
            i, out = self._wait(state.done_q, step)
            if i < 0:  # the step was cancelled: fail as the first Recv still waiting
                if state.waiting:
                    self._fail(step, self._nodes[min(state.waiting)].op, out)
                continue  # no Recv waits: the other async kernels report it themselves
            state.outstanding -= 1
            self._complete(i, out, step, slots, pending, ready, state)

    def _complete(self, i: int, out: Any, step: Any, slots: list[Any], pending: list[int],
                  ready: collections.deque, state: "_RunState") -> None:
        node = self._nodes[i]
        state.waiting.discard(i)
        if isinstance(out, BaseException):
            self._fail(step, node.op, out)
        n = node.n_out
        if n == 1:
            slots[self._slot[i]] = out
        elif n:
            slots[self._slot[i]:self._slot[i] + n] = out
        for s in self._async_succ[i]:
            pending[s] -= 1
            if pending[s] == 0:
                ready.append(s)

    def _fail(self, step: Any, op: Operation | None, exc: BaseException) -> None:
        if op is None:
            raise exc
        err = self._node_error(op, exc)
        step.cancel(err)
        raise err from None

    def _failed_op(self, b: int, exc: BaseException) -> Operation | None:
        block = self.blocks[b]
        code = block.fn.__code__  # type: ignore[union-attr]
        tb = exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code is code:
                return block.lines.get(tb.tb_lineno)
            tb = tb.tb_next
        return None


_PUSH_NOW_BYTES = 64 << 10


def fusable_reads(nodes: list[Any], fetched: frozenset[int], block_of: list[int] | None = None
                  ) -> dict[int, int]:
    """Identity nodes reading a variable (a dereferenced reference input) whose only
    consumer is a _Send (of the same block, given `block_of`), and not fetched:
    index -> the Send's. The straight-line plan uses them too."""
    consumers: dict[int, list[int]] = {}
    for i, node in enumerate(nodes):
        for src in _flat(node.args):
            if src[0] == "val":
                consumers.setdefault(src[1], []).append(i)
    fused = {}
    for i, node in enumerate(nodes):
        if node.op.type != "Identity" or i in fetched or len(node.args) != 1:
            continue
        src = node.args[0]
        if src[0] == "list" or not src[-1]:
            continue  # not a read of a reference
        users = consumers.get(i, [])
        if len(users) == 1 and nodes[users[0]].op.type == "_Send" \
                and (block_of is None or block_of[users[0]] == block_of[i]):
            fused[i] = users[0]
    return fused


def send_key(op: Operation) -> str:
    """The rendezvous key of a _Send or _Recv node."""
    return make_key(op.get_attr("send_device"), op.get_attr("recv_device"),
                    op.get_attr("tensor_name"))


def _flat(args: list[Any]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for a in args:
        out.extend(a[1] if a[0] == "list" else [a])
    return out


def send_variable(step: Any, key: str, resource: Any) -> None:
    """A fused variable read + _Send (see the module docstring)."""
    if not hasattr(resource, "read"):  # a fed value of a reference type
        step.rendezvous.send(key, resource)
        return
    value = resource.read()
    send_now = getattr(step.rendezvous, "send_now", None)
    if send_now is not None and value.nbytes >= _PUSH_NOW_BYTES:
        send_now(key, value)
    else:
        step.rendezvous.send(key, value.copy())


class _RunState:
    """One run's async bookkeeping: the completion queue, and completions that
    arrived inline (in this thread, while their kernel was being dispatched)."""

    __slots__ = ("done_q", "inline", "outstanding", "dispatching", "owner", "waiting",
                 "_cancel_hooked", "ready")

    def __init__(self, ready: collections.deque) -> None:
        self.ready = ready  # the blocks ready to run (BlockPlan.run's queue)
        self.done_q: queue.SimpleQueue = queue.SimpleQueue()
        self.inline: collections.deque = collections.deque()
        self.outstanding = 0
        self.dispatching = False
        self.owner = threading.get_ident()
        self.waiting: set[int] = set()  # Recvs not yet completed
        self._cancel_hooked = False

    def callback(self, i: int) -> Callable[[Any], None]:
        self.outstanding += 1
        return functools.partial(self.done, i)

    def done(self, i: int, result: Any) -> None:
        if self.dispatching and threading.get_ident() == self.owner:
            self.inline.append((i, result))
        else:
            self.done_q.put((i, result))

    def flush_early(self, step: Any) -> None:
        """A block's last Send is made and work that no Send needs follows: the held
        Sends leave now, unless other blocks are ready or Recvs of this block already
        completed (what they unblock runs next: its Sends may join them)."""
        if not self.ready and not self.inline:
            step.flush()

    def recv(self, step: Any, i: int, key: str, send_device: str) -> None:
        """Node `i` (a _Recv) waits for `key` in the step's rendezvous."""
        self.outstanding += 1
        self.waiting.add(i)
        if not self._cancel_hooked:
            self._cancel_hooked = True
            step.register_cancel(lambda err: self.done_q.put((-1, err)))
        step.rendezvous.recv_async(key, send_device, functools.partial(self.done, i))

"""A resource's handle inside a function body: a dataset map, a cond or while branch.

A queue's or a table's ops must run where they are called: `ds.map(lambda x:
table.lookup(x))` looks up per element, `tf.cond(p, lambda: q.enqueue(x), ...)`
enqueues when the branch runs. A reference reaches a body only as a snapshot, so
the body gets its own op of the resource's kind naming the same resource
(shared_name: the outer op's, or its node name, which is the resource's key), made
once per body.

Example:
    >>> g, handle = handle_for_default_graph(table_ref, cache, {"HashTable"}, "Table t")
    >>> g.create_op("LookupTableFind", [handle, keys, default], attrs)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor


def handle_for_default_graph(ref: Tensor, cache: dict[Any, Tensor], kinds: set[str],
                             what: str) -> tuple[Any, Tensor]:
    """(graph, handle) for ops on the resource `ref` made now.

    The default graph and a handle made in it when it is a body inside `ref`'s
    graph; else `ref`'s own graph and `ref`.

    Args:
        ref: the resource op's reference output.
        cache: per-body handles already made (kept by the resource's Python object).
        kinds: op types whose handle can be remade in a body.
        what: how an error names the resource (e.g. "Queue q").

    Raises:
        ValueError: if the resource's op is not of `kinds` (naming it).
    """
    g = get_default_graph()
    outer = getattr(g, "outer_graph", None)
    while outer is not None and outer is not ref.graph:
        outer = getattr(outer, "outer_graph", None)
    if g is ref.graph or outer is None:
        return ref.graph, ref
    local = cache.get(g)
    if local is None:
        op = ref.op
        if op.type not in kinds:
            raise ValueError(f"{what} (op {op.type}) cannot be used inside a function body "
                             "(a dataset map, a cond or while branch); use it outside, or "
                             f"one made by an op of {sorted(kinds)}.")
        attrs = {k: v for k, v in op.attrs.items() if not k.startswith("_")}
        attrs["shared_name"] = op.get_attr("shared_name") or op.name
        local = cache[g] = g.create_op(
            op.type, [], attrs, name=op.name.rsplit("/", 1)[-1] + "_ref").outputs[0]
    return g, local


__all__ = ["handle_for_default_graph"]

"""Our fused training ops written as the TF ops TF 1.15 builds for the same update.

- SigmoidCrossEntropyWithLogits(z, x) = max(x, 0) - x z + log1p(exp(-|x|)), as
  tf.nn.sigmoid_cross_entropy_with_logits builds it (Select/Neg/Exp/Log1p);
  its gradient SigmoidCrossEntropyWithLogitsGrad(g, z, x) = (-g x, g (sigmoid(x) - z))
  (the second output moves to its own node; readers are rewired);
- SparseApplyGradientDescent(var, alpha, grad, indices) = ScatterSub(var, indices,
  grad * alpha) (TF's GradientDescentOptimizer._apply_sparse);
- SparseApplyAdam: TF 1.15 AdamOptimizer's sparse update: duplicate indices summed
  (Unique + UnsortedSegmentSum), m and v decayed whole (Assign), the gradient
  scattered into their rows (ScatterAdd), then every row of var updated (AssignSub);
- SparseApplyLazyAdam: TF's LazyAdamOptimizer: only the touched rows of m, v (Gather,
  ScatterUpdate) and var (ScatterSub).

Each keeps the node's name on the op whose output is the variable's reference.

Example:
    >>> nodes = LOWERINGS["SparseApplyAdam"](node, graph.get_operation_by_name(node.name))
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.proto import graph_pb2
from tensorweave.framework.tf_lowering_nodes import NodeBuilder

_I32 = graph_pb2.DT_INT32


def _dtype(t: Any) -> int:
    return int(t.dtype.base_dtype.as_datatype_enum)


def _data(node: Any) -> list[str]:
    return [i for i in node.input if not i.startswith("^")]


def _sigmoid_xent(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[1])
    z, x = _data(node)[:2]
    zeros = b.add("zeros", "ZerosLike", [x], T=t)
    cond = b.add("cond", "GreaterEqual", [x, zeros], T=t)
    relu = b.add("relu_logits", "Select", [cond, x, zeros], T=t)
    neg_abs = b.add("neg_abs_logits", "Select", [cond, b.add("neg", "Neg", [x], T=t), x], T=t)
    diff = b.add("sub", "Sub", [relu, b.add("mul", "Mul", [x, z], T=t)], T=t)
    log1p = b.add("log1p", "Log1p", [b.add("exp", "Exp", [neg_abs], T=t)], T=t)
    b.add(None, "AddV2", [diff, log1p], T=t)
    return b.nodes


def _sigmoid_xent_grad(node: Any, op: Any) -> tuple[list[Any], dict[str, str]]:
    b, t = NodeBuilder(node), _dtype(op.inputs[2])
    g, z, x = _data(node)[:3]
    err = b.add("error", "Sub", [b.add("sigmoid", "Sigmoid", [x], T=t), z], T=t)
    b.add("logits_grad", "Mul", [g, err], T=t)
    b.add(None, "Mul", [g, b.add("neg_logits", "Neg", [x], T=t)], T=t)
    return b.nodes, {f"{node.name}:1": f"{node.name}/logits_grad"}


def _sparse_gd(node: Any, op: Any) -> list[Any]:
    b, t = NodeBuilder(node), _dtype(op.inputs[2])
    var, alpha, grad, indices = _data(node)[:4]
    delta = b.add("delta", "Mul", [grad, alpha], T=t)
    b.add(None, "ScatterSub", [var, indices, delta], T=t, Tindices=_dtype(op.inputs[3]),
          use_locking=bool(op.get_attr("use_locking")))
    return b.nodes


def _deduplicated(b: NodeBuilder, grad: str, indices: str, t: int, ti: int) -> tuple[str, str]:
    """(summed gradient rows, unique indices): TF's _deduplicate_indexed_slices."""
    unique = b.add("unique", "Unique", [indices], T=ti, out_idx=_I32)
    rows = b.add("num_unique", "Size", [unique], T=ti, out_type=_I32)
    summed = b.add("summed_grad", "UnsortedSegmentSum", [grad, unique + ":1", rows], T=t,
                   Tindices=_I32, Tnumsegments=_I32)
    return summed, unique


def _adam_inputs(node: Any, op: Any) -> tuple[NodeBuilder, int, int, bool, list[str]]:
    return (NodeBuilder(node), _dtype(op.inputs[0]), _dtype(op.inputs[10]),
            bool(op.get_attr("use_locking")), _data(node)[:11])


def _adam_alpha(b: NodeBuilder, t: int, b1p: str, b2p: str, lr: str) -> str:
    """lr * sqrt(1 - beta2^t) / (1 - beta1^t), as TF's Adam."""
    one = b.add("one", "OnesLike", [lr], T=t)
    root = b.add("sqrt_1_minus_beta2_power", "Sqrt",
                 [b.add("1_minus_beta2_power", "Sub", [one, b2p], T=t)], T=t)
    scaled = b.add("lr_sqrt", "Mul", [lr, root], T=t)
    return b.add("alpha", "RealDiv", [scaled, b.add("1_minus_beta1_power", "Sub", [one, b1p],
                                                    T=t)], T=t)


def _sparse_adam(node: Any, op: Any) -> list[Any]:
    b, t, ti, lock, ins = _adam_inputs(node, op)
    var, m, v, b1p, b2p, lr, b1, b2, eps, grad, indices = ins
    grad, indices = _deduplicated(b, grad, indices, t, ti)
    one = b.add("one_beta", "OnesLike", [b1], T=t)
    m_decayed = b.add("m_decayed", "Assign", [m, b.add("m_times_beta1", "Mul", [m, b1], T=t)],
                      T=t, use_locking=lock, validate_shape=True)
    m_rows = b.add("m_rows", "Mul", [grad, b.add("1_minus_beta1", "Sub", [one, b1], T=t)],
                   T=t)
    m_t = b.add("m_t", "ScatterAdd", [m_decayed, indices, m_rows], T=t, Tindices=ti,
                use_locking=lock)
    v_decayed = b.add("v_decayed", "Assign", [v, b.add("v_times_beta2", "Mul", [v, b2], T=t)],
                      T=t, use_locking=lock, validate_shape=True)
    sq = b.add("grad_squared", "Mul", [grad, grad], T=t)
    v_rows = b.add("v_rows", "Mul", [sq, b.add("1_minus_beta2", "Sub", [one, b2], T=t)], T=t)
    v_t = b.add("v_t", "ScatterAdd", [v_decayed, indices, v_rows], T=t, Tindices=ti,
                use_locking=lock)
    step = b.add("step", "RealDiv", [
        b.add("alpha_m", "Mul", [_adam_alpha(b, t, b1p, b2p, lr), m_t], T=t),
        b.add("sqrt_v_eps", "AddV2", [b.add("sqrt_v", "Sqrt", [v_t], T=t), eps], T=t)], T=t)
    b.add(None, "AssignSub", [var, step], T=t, use_locking=lock)
    return b.nodes


def _sparse_lazy_adam(node: Any, op: Any) -> list[Any]:
    b, t, ti, lock, ins = _adam_inputs(node, op)
    var, m, v, b1p, b2p, lr, b1, b2, eps, grad, indices = ins
    grad, indices = _deduplicated(b, grad, indices, t, ti)
    one = b.add("one_beta", "OnesLike", [b1], T=t)

    def moment(name: str, slot: str, beta: str, g: str) -> str:
        old = b.add(f"{name}_rows", "GatherV2", [slot, indices, b.const(f"{name}_axis", 0)],
                    Tparams=t, Tindices=ti, Taxis=_I32, batch_dims=0)
        new = b.add(f"{name}_new_rows", "AddV2", [
            b.add(f"{name}_decayed", "Mul", [old, beta], T=t),
            b.add(f"{name}_added", "Mul", [g, b.add(f"1_minus_{name}_beta", "Sub", [one, beta],
                                                    T=t)], T=t)], T=t)
        b.add(f"{name}_t", "ScatterUpdate", [slot, indices, new], T=t, Tindices=ti,
              use_locking=lock)
        return new

    m_rows = moment("m", m, b1, grad)
    v_rows = moment("v", v, b2, b.add("grad_squared", "Mul", [grad, grad], T=t))
    if op.get_attr("use_nesterov"):   # m_t * beta1 + (1 - beta1) * g, as TF's nesterov Adam
        m_rows = b.add("m_nesterov", "AddV2", [
            b.add("m_nesterov_decayed", "Mul", [m_rows, b1], T=t),
            b.add("m_nesterov_grad", "Mul", [grad, b.add("1_minus_beta1_n", "Sub", [one, b1],
                                                         T=t)], T=t)], T=t)
    step = b.add("step", "RealDiv", [
        b.add("alpha_m", "Mul", [_adam_alpha(b, t, b1p, b2p, lr), m_rows], T=t),
        b.add("sqrt_v_eps", "AddV2", [b.add("sqrt_v", "Sqrt", [v_rows], T=t), eps], T=t)], T=t)
    b.add(None, "ScatterSub", [var, indices, step], T=t, Tindices=ti, use_locking=lock)
    # The moments' updates run before var's (their rows are read from the new values).
    last = b.nodes[-1]
    last.input.extend([f"^{node.name}/m_t", f"^{node.name}/v_t"])
    return b.nodes


LOWERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "SigmoidCrossEntropyWithLogits": _sigmoid_xent,
    "SigmoidCrossEntropyWithLogitsGrad": _sigmoid_xent_grad,
    "SparseApplyGradientDescent": _sparse_gd,
    "SparseApplyAdam": _sparse_adam,
    "SparseApplyLazyAdam": _sparse_lazy_adam,
}

__all__ = ["LOWERINGS"]

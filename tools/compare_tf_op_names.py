"""Compares the default node names our public API gives with TensorFlow 1.x's.

TF1 users see node names in TensorBoard, in `get_tensor_by_name("add:0")`, in code that
hunts nodes by name, and in exported graphs; they are part of the API. This tool builds
the same small graphs of public calls (the CASES below) with real TensorFlow (compat.v1,
graph mode) and with tensorweave, and lists, per case, the node names that differ, in
graph order. TensorFlow is never a dependency: the TF side runs in its own interpreter.

Usage (from the repository root):
    .venv/bin/python tools/compare_tf_op_names.py                 # diff every case
    .venv/bin/python tools/compare_tf_op_names.py operators random   # cases by substring
    /work/tfvenv/bin/python tools/compare_tf_op_names.py --side tf --record add_sub
        # prints TF's names as a Python dict literal (for tests/project/test_tf_op_names.py)

Options: --tf-python PATH (default /work/tfvenv/bin/python or $TF_PYTHON),
--side {tf,tw} (print one side's names as JSON), --record (Python literal instead).

Example:
    $ .venv/bin/python tools/compare_tf_op_names.py operators
    operators: 3 names differ
      - add         (TF)
      + AddV2       (ours)
"""
from __future__ import annotations

import difflib
import json
import os
import subprocess
import sys
from typing import Any, Callable

Case = Callable[[Any], None]
CASES: dict[str, Case] = {}


def case(fn: Case) -> Case:
    CASES[fn.__name__] = fn
    return fn


def _xy(tf: Any) -> tuple[Any, Any]:
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="x")
    y = tf.constant([[5.0, 6.0], [7.0, 8.0]], name="y")
    return x, y


# ---- operators ----------------------------------------------------------------------
@case
def operators(tf: Any) -> None:
    x, y = _xy(tf)
    _ = [x + y, x - y, x * y, x / y, x // y, x % y, x ** y, x @ y, -x, abs(x),
         x < y, x <= y, x > y, x >= y]


@case
def operators_python_operand(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [x + 1, 2 * x, 1 - x, x / 2.0, 3.0 / x, x ** 2, 2 ** x, x // 2.0, 5.0 % x]


@case
def operators_int_and_bool(tf: Any) -> None:
    i = tf.constant([7, 8], name="i")
    a = tf.constant([True, False], name="a")
    b = tf.constant([False, False], name="b")
    _ = [i / 2, i // 3, i % 3, ~a, a & b, a | b, a ^ b, -i]


@case
def operators_indexing(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [x[1:2], x[..., 0], x[0], x[:, 1], x[tf.newaxis, 0]]


@case
def operators_variables(tf: Any) -> None:
    v = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="v")
    _ = [v + 1.0, v * v, v - v, v / 2.0, -v, v[0], v @ v, abs(v)]


# ---- math and array functions -------------------------------------------------------
@case
def math_functions(tf: Any) -> None:
    x, y = _xy(tf)
    _ = [tf.add(x, y), tf.subtract(x, y), tf.multiply(x, y), tf.divide(x, y),
         tf.truediv(x, y), tf.matmul(x, y), tf.square(x), tf.sqrt(x), tf.exp(x), tf.log(x),
         tf.maximum(x, y), tf.minimum(x, y), tf.abs(x), tf.negative(x), tf.sign(x),
         tf.add_n([x, y]), tf.pow(x, y), tf.floordiv(x, y), tf.mod(x, y)]


@case
def reductions(tf: Any) -> None:
    x, _y = _xy(tf)
    b = tf.constant([True, False], name="b")
    _ = [tf.reduce_sum(x), tf.reduce_mean(x, axis=0), tf.reduce_max(x), tf.reduce_min(x),
         tf.reduce_prod(x), tf.reduce_all(b), tf.reduce_any(b), tf.reduce_sum([1.0, 2.0], 0),
         tf.reduce_mean(x, [0, 1], keepdims=True)]


@case
def arg_and_scan(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [tf.argmax(x, 1), tf.argmin(x, 0), tf.argmax([3, 1, 2]), tf.cumsum(x),
         tf.cumprod(x, axis=1), tf.cumsum([1.0, 2.0], exclusive=True, name="running")]


@case
def reduce_logsumexp(tf: Any) -> None:
    x, _y = _xy(tf)
    tf.reduce_logsumexp(x)


@case
def array_functions(tf: Any) -> None:
    x, y = _xy(tf)
    _ = [tf.reshape(x, [4]), tf.concat([x, y], 0), tf.stack([x, y]), tf.unstack(x),
         tf.gather(x, [1, 0]), tf.cast(x, tf.int32), tf.transpose(x), tf.expand_dims(x, 0),
         tf.squeeze(tf.expand_dims(x, 0)), tf.tile(x, [2, 1]), tf.split(x, 2),
         tf.split(x, [1, 1], axis=1), tf.slice(x, [0, 0], [1, 2]), tf.shape(x), tf.size(x),
         tf.rank(x), tf.identity(x), tf.reverse(x, [0]), tf.pad(x, [[1, 0], [0, 1]], "REFLECT")]


@case
def pad_mask_stack(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [tf.pad(x, [[1, 0], [0, 1]]), tf.boolean_mask(x, [True, False]),
         tf.stack([1.0, x[0, 0]])]


@case
def plain_arguments(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [tf.abs(-1.0), tf.square(2.0), tf.sqrt([4.0]), tf.exp(1.0), tf.negative(3.0),
         tf.sign(-2.0), tf.nn.relu([1.0, -1.0]), tf.sigmoid([0.0]), tf.tanh(0.5),
         tf.nn.softmax([1.0, 2.0]), tf.cast([1, 2], tf.float32), tf.identity(3.0),
         tf.shape([1, 2]), tf.size([1, 2]), tf.rank([1, 2]), tf.squeeze([[1.0]]),
         tf.maximum(x, 0.0), tf.equal(x, 1.0), tf.add_n([x, x, x]),
         tf.stop_gradient(2.0), tf.floor(1.5), tf.round(1.5), tf.reciprocal(2.0)]


@case
def fill_functions(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [tf.zeros([2, 3]), tf.ones([2]), tf.zeros_like(x), tf.ones_like(x),
         tf.fill([2, 2], 7.0), tf.range(5), tf.range(1, 7, 2), tf.one_hot([0, 2], 3),
         tf.where(x > 2.0, x, -x), tf.zeros([40, 40]), tf.ones(tf.shape(x), tf.int32),
         tf.zeros_like(tf.placeholder(tf.float32, [None])), tf.constant(3.0)]


@case
def sequence_mask(tf: Any) -> None:
    tf.sequence_mask([1, 2], 3)


@case
def random_functions(tf: Any) -> None:
    _ = [tf.random_uniform([2, 3]), tf.random_uniform([2], 1.0, 4.0),
         tf.random_uniform([2], maxval=5, dtype=tf.int32), tf.random_normal([2, 3]),
         tf.truncated_normal([2, 3], stddev=0.1), tf.random_shuffle([1, 2, 3]),
         tf.multinomial([[0.5, 0.5]], 3)]


@case
def control_flow(tf: Any) -> None:
    x, y = _xy(tf)
    _ = [tf.cond(tf.constant(True), lambda: x, lambda: y), tf.clip_by_norm(x, 1.0)]


@case
def clip_by_value(tf: Any) -> None:
    x, _y = _xy(tf)
    _ = [tf.clip_by_value(x, 1.5, 3.5), tf.clip_by_value(x, 0.0, tf.reduce_max(x))]


# ---- nn, layers, losses, metrics, training ------------------------------------------
@case
def nn_functions(tf: Any) -> None:
    x, y = _xy(tf)
    tf.constant([0, 1], name="labels")  # part of the recorded graph
    _ = [tf.nn.relu(x), tf.nn.relu6(x), tf.nn.sigmoid(x), tf.nn.tanh(x), tf.nn.softmax(x),
         tf.nn.log_softmax(x), tf.nn.l2_loss(x), tf.nn.bias_add(x, [1.0, 2.0]),
         tf.nn.bias_add(x, y[0]), tf.nn.l2_normalize(x, 1), tf.nn.moments(x, [0])]


@case
def nn_cross_entropy(tf: Any) -> None:
    x, y = _xy(tf)
    labels = tf.constant([0, 1], name="labels")
    _ = [tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=x),
         tf.nn.softmax_cross_entropy_with_logits_v2(labels=y, logits=x),
         tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x)]


@case
def nn_dropout(tf: Any) -> None:
    x, _y = _xy(tf)
    tf.nn.dropout(x, keep_prob=0.5)


@case
def embedding_lookup(tf: Any) -> None:
    params = tf.Variable([[1.0, 2.0], [3.0, 4.0]], name="emb")
    tf.nn.embedding_lookup(params, [1, 0])


@case
def layers_dense(tf: Any) -> None:
    x, _y = _xy(tf)
    tf.layers.dense(x, 3, activation=tf.nn.relu)


@case
def losses(tf: Any) -> None:
    x, y = _xy(tf)
    labels = tf.constant([0, 1], name="labels")
    tf.losses.mean_squared_error(y, x)
    tf.losses.absolute_difference(y, x)
    tf.losses.softmax_cross_entropy(y, x)
    tf.losses.sparse_softmax_cross_entropy(labels, x)
    tf.losses.sigmoid_cross_entropy(y, x)


@case
def metrics_accuracy(tf: Any) -> None:
    tf.metrics.accuracy(tf.constant([1, 0]), tf.constant([1, 1]))


@case
def variables_and_saver(tf: Any) -> None:
    tf.Variable(1.0, name="w")
    with tf.variable_scope("scope"):
        tf.get_variable("v", [2], initializer=tf.zeros_initializer())
        tf.get_variable("u", [2, 3])
    tf.train.get_or_create_global_step()
    tf.train.Saver()


@case
def gradient_descent_minimize(tf: Any) -> None:
    w = tf.Variable([1.0, 2.0], name="w")
    loss = tf.reduce_sum(w * w)
    tf.train.GradientDescentOptimizer(0.1).minimize(loss)


# ---- the two sides ------------------------------------------------------------------
def _load(side: str) -> Any:
    if side == "tf":
        import tensorflow.compat.v1 as tf  # type: ignore[import-not-found]
        tf.disable_v2_behavior()
        return tf
    import tensorweave as tw
    return tw


def node_names(tf: Any, name: str) -> list[str] | str:
    """The names of the ops case `name` builds in a fresh graph, or the error it raised."""
    g = tf.Graph()
    try:
        with g.as_default():
            CASES[name](tf)
    except Exception as e:  # noqa: BLE001 - reported per case, the others still run
        return f"error: {type(e).__name__}: {str(e)[:200]}"
    return [op.name for op in g.get_operations()]


# Where TF 2.21 (the TF at hand) builds differently from TF 1.15 (the specification),
# TF 1.15's names replace 2.21's: its random_uniform always builds /min, /max, /sub,
# /mul and the final add; its ones_like names a static shape "ones_like/Shape".
_TF115_REPLACE: dict[str, list[tuple[list[str], list[str]]]] = {
    "random_functions": [(["random_uniform/shape", "random_uniform/RandomUniform"],
                          ["random_uniform/shape", "random_uniform/min", "random_uniform/max",
                           "random_uniform/RandomUniform", "random_uniform/sub",
                           "random_uniform/mul", "random_uniform"])],
    "fill_functions": [(["ones_like/Shape/shape_as_tensor"], ["ones_like/Shape"])],
}


def _as_tf115(case_name: str, names: Any) -> Any:
    for old, new in _TF115_REPLACE.get(case_name, []):
        if isinstance(names, list):
            for i in range(len(names) - len(old) + 1):
                if names[i:i + len(old)] == old:
                    names = names[:i] + new + names[i + len(old):]
                    break
    return names


def side_names(side: str, names: list[str]) -> dict[str, Any]:
    tf = _load(side)
    if side == "tf":
        return {n: _as_tf115(n, node_names(tf, n)) for n in names}
    return {n: node_names(tf, n) for n in names}


def _run_side(python: str, side: str, names: list[str]) -> dict[str, Any]:
    out = subprocess.run([python, __file__, "--side", side, *names], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{python} --side {side} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _diff(tf_names: Any, ours: Any) -> list[str]:
    if isinstance(tf_names, str) or isinstance(ours, str):
        return [f"  TF:   {tf_names if isinstance(tf_names, str) else 'ok'}",
                f"  ours: {ours if isinstance(ours, str) else 'ok'}"]
    lines = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=tf_names, b=ours,
                                                       autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        lines += [f"  - {n}" for n in tf_names[i1:i2]] + [f"  + {n}" for n in ours[j1:j2]]
    return lines


def main(argv: list[str]) -> int:
    side = None
    record = "--record" in argv
    argv = [a for a in argv if a != "--record"]
    tf_python = os.environ.get("TF_PYTHON", "/work/tfvenv/bin/python")
    if "--tf-python" in argv:
        i = argv.index("--tf-python")
        tf_python = argv[i + 1]
        del argv[i:i + 2]
    if "--side" in argv:
        i = argv.index("--side")
        side = argv[i + 1]
        del argv[i:i + 2]
    names = [n for n in CASES if not argv or any(a in n for a in argv)]
    if side is not None:
        result = side_names(side, names)
        if record:
            print("{")
            for n, v in result.items():
                print(f"    {n!r}: {v!r},")
            print("}")
        else:
            print(json.dumps(result))
        return 0
    tf_side = _run_side(tf_python, "tf", names)
    ours = side_names("tw", names)
    bad = 0
    for n in names:
        lines = _diff(tf_side[n], ours[n])
        if lines:
            bad += 1
            print(f"{n}: differs ('-' TF only, '+' ours only)")
            print("\n".join(lines))
        else:
            print(f"{n}: same {len(ours[n])} names")
    print(f"{len(names) - bad} of {len(names)} cases name every node as TF does")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

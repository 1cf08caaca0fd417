"""Our public callables take their positional arguments as TF 1.x's do.

TF1 programs pass arguments by position (`tf.while_loop(c, b, v, None, 10, True,
False, "loop")`, `tf.assert_rank(x, 2, [x])`), so a parameter at another position,
or under another name, silently means something else here. The reference is
tests/data/tf_api_signatures.json, written by tools/gen_tf_api_signatures.py from
TF 1.15's sources and TF's `tf.compat.v1`. For every name both have:
- each positional parameter of ours is at TF's position for it, under TF's name
  (so no positional call binds a value to another parameter than in TF);
- we require no parameter TF does not require (extra ones need defaults).
Extra trailing parameters of ours are fine; a trailing TF parameter we do not
have (a feature not built, e.g. `gather`'s `batch_dims`) makes a positional call
fail loudly with TypeError rather than misbind, and is not checked here.
"""
from __future__ import annotations

import inspect
import json
from typing import Any

import numpy as np
import pytest

import tensorweave as tf
from suite_paths import TEST_DATA

REFERENCE = TEST_DATA / "tf_api_signatures.json"

# Mismatches kept on purpose, each with its reason (keep this short).
ALLOWED: dict[str, str] = {
    # Constructors that TF programs never call: TF builds these from NodeDefs and op
    # outputs; programs get them from ops, tf.as_dtype and Dataset.make_*_iterator.
    "Operation": "TF's takes a NodeDef; ops are made by op functions / Graph.create_op",
    "Tensor": "TF's takes (op, value_index, dtype); tensors are op outputs",
    "data.Iterator": "TF's takes a resource and the 3 structure parts; use from_structure",
    "keras.optimizers.Optimizer": "is tf.train.Optimizer (no OptimizerV2 base to subclass); "
                                  "its methods too",
    "Graph.create_op": "our internal op factory (attrs 3rd, called so across the tree); TF "
                       "1.x deprecates it for op functions",
    "VariableScope.get_variable": "TF's takes its private _VariableStore first; programs "
                                  "call tf.get_variable",
}


def _resolve(name: str) -> tuple[Any, Any]:
    """(the object named `name` in tensorweave, its parent) or (None, None)."""
    obj: Any = tf
    parent: Any = None
    for part in name.split("."):
        parent, obj = obj, getattr(obj, part, None)
        if obj is None:
            return None, None
    return obj, parent


def _ours(obj: Any, parent: Any = None, name: str = "") -> list[inspect.Parameter] | None:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    if inspect.isclass(obj) and params and params[0].name == "self":
        params = params[1:]
    elif inspect.isclass(parent) and inspect.isfunction(obj) and params:
        # A method looked up on its class: drop self unless it is a staticmethod.
        static = isinstance(inspect.getattr_static(parent, name.rpartition(".")[2], None),
                            staticmethod)
        if not static:
            params = params[1:]
    return params


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def signature_mismatch(tf_params: list[str], ours: list[inspect.Parameter]) -> str | None:
    """Why `ours` cannot stand in for TF's signature `tf_params`, or None if it can."""
    tf_positional = [p.lstrip("/").rstrip("=") for p in tf_params
                     if not p.startswith(("*", ":"))]
    # TF 1.x's `_sentinel=None` first parameter refuses positional calls: the rest is
    # keyword-only in practice.
    if tf_positional[:1] == ["_sentinel"]:
        tf_positional = []
    our_positional = [p for p in ours if p.kind in _POSITIONAL]
    for i, name in enumerate(tf_positional):
        if i >= len(our_positional):
            break
        if our_positional[i].name != name and name != "_":  # "_": TF names it nothing
            return (f"position {i}: TF has {name!r}, ours {our_positional[i].name!r} "
                    f"(TF: {tf_positional})")
    tf_required = {p.lstrip("/:") for p in tf_params if not p.endswith("=")
                   and not p.startswith("*")}
    tf_required |= {p.name for p, t in zip(our_positional, tf_positional) if t == "_"}
    for p in ours:
        if (p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                and p.name not in tf_required):
            return f"ours requires {p.name!r}, TF does not (TF: {tf_params})"
    return None


def _allowed(name: str) -> bool:
    # An allowed class's methods are allowed with it.
    return name in ALLOWED or name.rpartition(".")[0] in ALLOWED


def _mismatches() -> dict[str, str]:
    reference: dict[str, list[str]] = json.loads(REFERENCE.read_text())
    found: dict[str, str] = {}
    for name, tf_params in reference.items():
        obj, parent = _resolve(name)
        if obj is None or inspect.ismodule(obj) or not callable(obj):
            continue
        ours = _ours(obj, parent, name)
        if ours is None:
            continue
        why = signature_mismatch(tf_params, ours)
        if why:
            found[name] = why
    return found


def test_reference_is_tf_1_15() -> None:
    reference = json.loads(REFERENCE.read_text())
    # 1.15's order, not TF 2.x's (which put `index_type` before `name`).
    assert reference["nn.top_k"] == ["input", "k=", "sorted=", "name="]
    assert reference["while_loop"][7:9] == ["name=", "maximum_iterations="]
    assert len(reference) > 1000


def test_positional_parameters_match_tf() -> None:
    found = _mismatches()
    unexpected = {k: v for k, v in found.items() if not _allowed(k)}
    assert not unexpected, "\n".join(f"{k}: {v}" for k, v in sorted(unexpected.items()))


def test_allow_list_is_current() -> None:
    stale = sorted(set(ALLOWED) - set(_mismatches()))
    assert not stale, f"no longer mismatched, drop from ALLOWED: {stale}"


@pytest.mark.parametrize("tf_params, ours, bad", [
    (["a", "b="], "def f(a, b=None, c=None): pass", False),
    (["a", "b="], "def f(b, a=None): pass", True),
    (["a", "b="], "def f(a, b=None, *, c): pass", True),
    (["a", "name=", "k="], "def f(a, k=None, name=None): pass", True),
    (["a", "name=", "k="], "def f(a, name=None): pass", False),
    (["_sentinel=", "labels="], "def f(labels=None): pass", False),
])
def test_checker_catches_order_and_requirements(tf_params: list[str], ours: str,
                                                bad: bool) -> None:
    scope: dict[str, Any] = {}
    exec(ours, scope)  # noqa: S102 - a tiny function literal for the checker
    params = list(inspect.signature(scope["f"]).parameters.values())
    assert (signature_mismatch(tf_params, params) is not None) is bad


def test_positional_calls_bind_as_in_tf() -> None:
    with tf.Graph().as_default():
        loop = tf.while_loop(lambda i: i < 3, lambda i: i + 1, [tf.constant(0)], None, 10,
                             True, False, "counted")
        assert loop.op.name.startswith("counted")
        x = tf.placeholder(tf.float32)
        check = tf.assert_rank(x, 1, ["shape was", tf.shape(x)], 5)
        parts = tf.string_split(["a-b"], "-")
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match="shape was"):
                sess.run(check, {x: [[1.0]]})
            assert sess.run(loop) == 3
            assert list(sess.run(parts).values) == [b"a", b"b"]


def test_deprecated_argument_names_still_work() -> None:
    with tf.Graph().as_default(), tf.Session() as sess:
        raw = tf.constant([b"\x01\x00"])
        assert sess.run(tf.decode_raw(bytes=raw, out_type=tf.int16)).tolist() == [[1]]
        assert sess.run(tf.decode_raw(raw, tf.int16)).tolist() == [[1]]
        assert sess.run(tf.string_to_number(input=["2"])) == [2.0]
        loss = tf.nn.weighted_cross_entropy_with_logits(targets=[1.0], logits=[0.0],
                                                        pos_weight=1.0)
        assert abs(sess.run(loss)[0] - 0.6931472) < 1e-6
        with pytest.raises(ValueError, match="not both"):
            tf.decode_raw(raw, tf.int16, bytes=raw)
        with pytest.raises(ValueError, match="Keyword arguments are required"):
            tf.sparse.split(tf.SparseTensor([[0, 0]], [1.0], [1, 2]), 2, 1)


def test_keras_positional_and_renamed_arguments() -> None:
    keras = tf.keras
    lstm = keras.layers.LSTM(4, "tanh", "sigmoid", False)
    assert lstm.use_bias is False  # 4th is use_bias in TF 1.x, not unit_forget_bias
    gru = keras.layers.GRU(3, return_sequences=True, reset_after=True)
    assert gru.return_sequences and gru.reset_after
    with pytest.raises(TypeError, match="multiple values"):
        keras.layers.GRU(3, "tanh", "sigmoid", True, "zeros", "zeros", "zeros", None,
                         kernel_regularizer=None)
    assert keras.optimizers.Adam(lr=0.5)._lr == 0.5
    assert keras.optimizers.Adam(0.25)._lr == 0.25
    with pytest.raises(TypeError, match="unexpected keyword"):
        keras.optimizers.SGD(learnin_rate=0.1)
    with tf.Graph().as_default(), tf.Session() as sess:
        x = tf.constant(np.arange(12, dtype=np.float32).reshape(1, 3, 4))  # [b, c, steps]
        pooled = keras.layers.GlobalAveragePooling1D("channels_first")(x)
        np.testing.assert_allclose(sess.run(pooled), [[1.5, 5.5, 9.5]])

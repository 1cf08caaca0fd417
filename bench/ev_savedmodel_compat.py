"""EmbeddingVariable SavedModels served by real TensorFlow (issue 34).

tensorweave trains models on DeepRec's `tf.get_embedding_variable` (int64 ids, plain and
in 3 partitions; int32 ids; string ids, plain and in 2 partitions; and an Estimator
whose model_fn uses one) and exports each as a SavedModel (`simple_save`, or
`Estimator.export_savedmodel`). Then:

1. tensorweave's loader serves each export in a new graph and session: known ids and
   unknown ones;
2. real TF (TENSORFLOW_PYTHON, `tf.compat.v1.saved_model.loader.load`) serves the same
   exports through their serving signature, on the same ids; it also reads the
   variables with `tf.train.list_variables` (DeepRec's `<name>-keys`, `-values`,
   `-freqs`, `-versions`) and saves the served table again through the export's
   SaverDef (its KvExport written as TF ops), whose `-keys`/`-values` must hold the
   same rows.

Served rows must equal the trained rows for known ids and the table's
`default_value_no_permission` (here -0.5) for unknown ones, in both, exactly (the
Estimator's scores, sums of rows, within 1e-5).

    TENSORFLOW_PYTHON=/work/tfvenv/bin/python .venv/bin/python -m bench.ev_savedmodel_compat
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

import numpy as np

from bench.common import ROOT, tensorflow_python

DIM, NO_PERMISSION = 8, -0.5
# name -> (key dtype, partitions, known ids, unknown ids)
CASES: dict[str, tuple[str, int, list[Any], list[Any]]] = {
    "int64": ("int64", 1, [3, -7, 10**12, 42, 5, 11], [8, -10**12]),
    "int64_3_parts": ("int64", 3, [3, -7, 10**12, 42, 5, 11], [8, -10**12]),
    "int32": ("int32", 1, [3, -7, 100000, 42, 5], [8, -100]),
    "string": ("string", 1, ["apple", "kiwi", "", "plum", "fig"], ["durian", "apple "]),
    "string_2_parts": ("string", 2, ["apple", "kiwi", "", "plum", "fig"], ["durian", "x"]),
}

_TF_SIDE = r"""
import json, os, sys
import numpy as np
import tensorflow as tf
v1 = tf.compat.v1
v1.disable_v2_behavior()
work = sys.argv[1]
asks = json.load(open(os.path.join(work, "asks.json")))
out = {}
for case, (path, sig_key, inp, outp, ids, dtype) in asks.items():
    feed = [i.encode() for i in ids] if dtype == "string" else np.asarray(ids, dtype)
    with v1.Session(graph=tf.Graph()) as sess:
        mg = v1.saved_model.loader.load(sess, ["serve"], path)
        sig = mg.signature_def[sig_key]
        got = sess.run(sig.outputs[outp].name, {sig.inputs[inp].name: feed})
        saver = mg.saver_def
        again = os.path.join(work, case + "_resaved", "ckpt")
        sess.run(saver.save_tensor_name, {saver.filename_tensor_name: again})
    names = dict(tf.train.list_variables(os.path.join(path, "variables", "variables")))
    resaved = {}
    for n in names:
        if n.endswith("-keys") and "/Adagrad" not in n:
            keys = tf.train.load_variable(again, n)
            vals = tf.train.load_variable(again, n[:-len("keys")] + "values")
            resaved.update({(k.decode() if isinstance(k, bytes) else str(int(k))): v.tolist()
                            for k, v in zip(keys, vals)})
    out[case] = {"served": got.tolist(), "variables": {n: list(s) for n, s in names.items()},
                 "resaved": resaved}
json.dump(out, open(os.path.join(work, "tf_side.json"), "w"))
"""


def _train_and_export(name: str, work: str) -> dict[str, Any]:
    """One case: trains, exports with simple_save; the trained rows of its known ids."""
    import tensorweave as tf
    key, parts, known, _unknown = CASES[name]
    dtype = {"int64": tf.int64, "int32": tf.int32, "string": tf.string}[key]
    feed = [k.encode() for k in known] if key == "string" else known
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        ids = tf.placeholder(dtype, [None], name="ids")
        option = tf.EmbeddingVariableOption(tf.InitializerOption(
            default_value_dim=16, default_value_no_permission=NO_PERMISSION))
        emb = tf.get_embedding_variable(
            "emb", DIM, key_dtype=dtype, ev_option=option,
            partitioner=tf.fixed_size_partitioner(parts) if parts > 1 else None)
        rows = tf.identity(tf.nn.embedding_lookup(emb, ids), name="rows")
        loss = tf.reduce_sum(tf.square(rows - tf.linspace(-1.0, 1.0, DIM)))
        train = tf.train.AdagradOptimizer(0.3).minimize(loss,
                                                        tf.train.get_or_create_global_step())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for batch in (feed[:3], feed[2:], feed, feed[::2]):
                sess.run(train, {ids: batch})
            trained = sess.run(rows, {ids: feed})
            path = os.path.join(work, name)
            tf.saved_model.simple_save(sess, path, {"ids": ids}, {"rows": rows})
    return {"path": path, "sig": "serving_default", "in": "ids", "out": "rows",
            "trained": trained}


def _estimator(work: str) -> dict[str, Any]:
    """An Estimator with an EmbeddingVariable (2 parts): trained, exported, predicted."""
    import tensorweave as tf
    known = CASES["int64"][2]

    def model_fn(features: Any, labels: Any, mode: str) -> Any:
        emb = tf.get_embedding_variable("user_embedding", DIM,
                                        partitioner=tf.fixed_size_partitioner(2))
        score = tf.reduce_sum(tf.nn.embedding_lookup(emb, features["user"]), axis=1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"score": score},
                                              export_outputs={"score": tf.estimator.export
                                                              .PredictOutput({"score": score})})
        loss = tf.reduce_sum(tf.square(score - labels))
        step = tf.train.get_or_create_global_step()
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=tf.train.AdagradOptimizer(0.2).minimize(loss, step))

    est = tf.estimator.Estimator(model_fn, model_dir=os.path.join(work, "est_model"))
    labels = np.linspace(-1, 1, len(known)).astype(np.float32)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(
        ({"user": np.asarray(known, np.int64)}, labels)).batch(2).repeat(), steps=8)
    predicted = np.array([p["score"] for p in est.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"user": known}).batch(len(known)))])
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"user": tf.placeholder(tf.int64, [None], name="user")})
    path = os.fsdecode(est.export_savedmodel(os.path.join(work, "est_export"), receiver))
    return {"path": path, "sig": "score", "in": "user", "out": "score", "trained": predicted}


def _serve_here(case: dict[str, Any], ids: list[Any], dtype: str) -> np.ndarray:
    import tensorweave as tf
    feed = [i.encode() for i in ids] if dtype == "string" else np.asarray(ids, dtype)
    with tf.Graph().as_default(), tf.Session() as sess:
        sig = tf.saved_model.loader.load(sess, ["serve"], case["path"]).signature_def[
            case["sig"]]
        return sess.run(sig.outputs[case["out"]].name, {sig.inputs[case["in"]].name: feed})


def _expected(case: dict[str, Any], n_known: int, n_unknown: int) -> np.ndarray:
    """Trained rows for the known ids, then the no-permission row (or score) for the rest."""
    trained = np.asarray(case["trained"])
    fill = NO_PERMISSION if trained.ndim == 2 else 0.0   # the Estimator's: a sum of zeros
    return np.concatenate([trained, np.full((n_unknown,) + trained.shape[1:], fill,
                                            trained.dtype)])


def _check(name: str, case: dict[str, Any], tf_side: dict[str, Any], known: list[Any],
           here: np.ndarray) -> bool:
    want = _expected(case, len(known), len(here) - len(known))
    served = np.asarray(tf_side["served"], np.float32)
    d_tf, d_here = float(np.abs(served - want).max()), float(np.abs(here - want).max())
    d_both = float(np.abs(served - here).max())
    variables = tf_side["variables"]
    layout = all(any(n.endswith(s) for n in variables)
                 for s in ("-keys", "-values", "-freqs", "-versions"))
    resaved = tf_side["resaved"]
    trained = np.asarray(case["trained"])
    same = trained.ndim != 2 or all(
        np.array_equal(np.asarray(resaved[str(k)], np.float32), row)
        for k, row in zip(known, trained))
    print(f"{name:15s} {len(known)} known + {len(here) - len(known)} unknown ids: real TF "
          f"max |diff| {d_tf:.1e}, tensorweave {d_here:.1e}, between them {d_both:.1e}; "
          f"{len(variables)} checkpoint tensors in DeepRec's layout {layout}; "
          f"TF's re-save of the table ({len(resaved)} ids) holds the rows {same}")
    # Rows are copied, so exactly equal; the Estimator's scores are sums, which TF and
    # tensorweave may add in another order.
    tol = 0.0 if trained.ndim == 2 else 1e-5
    return max(d_tf, d_here, d_both) <= tol and layout and same


def main(argv: list[str] | None = None) -> bool:
    exe = tensorflow_python()
    if exe is None:
        print("ev_savedmodel_compat: TENSORFLOW_PYTHON is not set; nothing to compare against")
        return False
    with tempfile.TemporaryDirectory() as work:
        cases = {name: _train_and_export(name, work) for name in CASES}
        cases["estimator"] = _estimator(work)
        asks = {}
        for name, case in cases.items():
            key, _parts, known, unknown = CASES.get(name, CASES["int64"])
            asks[name] = (case["path"], case["sig"], case["in"], case["out"],
                          known + unknown, key)
        with open(os.path.join(work, "asks.json"), "w") as f:
            json.dump(asks, f)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        res = subprocess.run([exe, "-c", _TF_SIDE, work], capture_output=True, text=True,
                             env=env, cwd=ROOT)
        if res.returncode != 0:
            print(f"real TF failed:\n{res.stderr[-3000:]}")
            return False
        tf_side = json.load(open(os.path.join(work, "tf_side.json")))
        ok = True
        for name, case in cases.items():
            key, _parts, known, unknown = CASES.get(name, CASES["int64"])
            here = _serve_here(case, known + unknown, key)
            ok &= _check(name, case, tf_side[name], known, here)
    print("ev_savedmodel_compat:", "OK" if ok else "MISMATCH")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)

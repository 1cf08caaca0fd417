"""SavedModel export of DeepRec's EmbeddingVariable (issue 34): the table is kept, so a
served model looks ids up.

Specification: issue 34 ("SavedModel export keeps the table so a served model looks ids
up") and DeepRec's docs/docs_en/Embedding-Variable-Export-Format.md (the variables hold
`<name>-keys`, `-values`, `-freqs`, `-versions`, readable with tf.train.load_variable).
Our own words and values: a model trained here, exported with simple_save,
SavedModelBuilder or Estimator.export_savedmodel, loaded into a new graph and session
(one test in another process): known ids read their trained rows, unknown ids the
table's `default_value_no_permission` row, and serving does not grow the table. Real
TensorFlow serving the same exports is bench/ev_savedmodel_compat.py.
"""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.proto import saved_model_pb2
from suite_paths import REPO_ROOT

pytestmark = pytest.mark.usefixtures("fresh_graph")

SERVE = tf.saved_model.tag_constants.SERVING
DIM = 4
KNOWN = {"int64": [3, -7, 10**12, 42, 5], "int32": [3, -7, 100000, 42, 5],
         "string": [b"apple", b"kiwi", b"", b"plum", b"fig"]}
UNKNOWN = {"int64": [8, -10**12], "int32": [8, -100], "string": [b"durian", b"apple "]}
DTYPES = {"int64": tf.int64, "int32": tf.int32, "string": tf.string}


def _model(key: str, parts: int, no_permission: float = 0.0):
    """ids placeholder -> EmbeddingVariable rows ("rows"), and an Adagrad step on them."""
    ids = tf.placeholder(DTYPES[key], [None], name="ids")
    option = tf.EmbeddingVariableOption(
        tf.InitializerOption(default_value_dim=7, default_value_no_permission=no_permission))
    emb = tf.get_embedding_variable(
        "emb", DIM, key_dtype=DTYPES[key], ev_option=option,
        partitioner=tf.fixed_size_partitioner(parts) if parts > 1 else None)
    rows = tf.identity(tf.nn.embedding_lookup(emb, ids), name="rows")
    target = tf.constant(np.linspace(-1, 1, DIM, dtype=np.float32))
    loss = tf.reduce_sum(tf.square(rows - target))
    train = tf.train.AdagradOptimizer(0.3).minimize(loss, tf.train.get_or_create_global_step())
    return ids, rows, train


def _train_and_export(export: str, key: str = "int64", parts: int = 1,
                      no_permission: float = 0.0) -> np.ndarray:
    """Trains on the known ids, exports with simple_save; returns their trained rows."""
    ids, rows, train = _model(key, parts, no_permission)
    known = KNOWN[key]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in (known[:3], known[2:], known, known[::2]):
            sess.run(train, {ids: batch})
        want = sess.run(rows, {ids: known})
        tf.saved_model.simple_save(sess, export, {"ids": ids}, {"rows": rows})
    return want


def _serve(export: str, *batches: list) -> list[np.ndarray]:
    """Loads `export` into a new graph and session; the rows of each batch of ids."""
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], export)
        sig = mg.signature_def["serving_default"]
        return [sess.run(sig.outputs["rows"].name, {sig.inputs["ids"].name: b})
                for b in batches]


@pytest.mark.parametrize("key,parts", [("int64", 1), ("int64", 3), ("int32", 1),
                                       ("string", 1), ("string", 2)])
def test_served_lookups_read_the_trained_rows(tmp_path, key, parts):
    export = str(tmp_path / "m")
    want = _train_and_export(export, key, parts)
    known, unknown = KNOWN[key], UNKNOWN[key]
    got, mixed = _serve(export, known, [unknown[0], known[1], unknown[1], known[1]])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(mixed[[1, 3]], want[[1, 1]])
    np.testing.assert_array_equal(mixed[[0, 2]], np.zeros([2, DIM]))


def test_unknown_ids_read_no_permission_and_the_table_does_not_grow(tmp_path):
    export = str(tmp_path / "m")
    want = _train_and_export(export, no_permission=-0.25)
    with tf.Graph().as_default(), tf.Session() as sess:
        mg = tf.saved_model.loader.load(sess, [SERVE], export)
        sig = mg.signature_def["serving_default"]
        ids, rows = sig.inputs["ids"].name, sig.outputs["rows"].name
        table = sess.graph.get_tensor_by_name("emb:0")
        before = sess.run(table).shape
        first = sess.run(rows, {ids: [99, 3, 99]})
        again = sess.run(rows, {ids: [99]})
        assert sess.run(table).shape == before == (len(KNOWN["int64"]) + 1, DIM)
    np.testing.assert_array_equal(first[[0, 2]], np.full([2, DIM], -0.25, np.float32))
    np.testing.assert_array_equal(first[1], want[0])
    np.testing.assert_array_equal(again, np.full([1, DIM], -0.25, np.float32))


def test_an_id_the_counter_filter_had_not_admitted_stays_out_when_served(tmp_path):
    export = str(tmp_path / "m")
    ids = tf.placeholder(tf.int64, [None], name="ids")
    option = tf.EmbeddingVariableOption(tf.InitializerOption(default_value_no_permission=-1.0),
                                        filter_option=tf.CounterFilter(filter_freq=3))
    emb = tf.get_embedding_variable("emb", DIM, ev_option=option)
    rows = tf.identity(tf.nn.embedding_lookup(emb, ids), name="rows")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(rows, {ids: [1, 2]})
        want = sess.run(rows, {ids: [1, 2, 9]})   # 9: seen once, not admitted
        tf.saved_model.simple_save(sess, export, {"ids": ids}, {"rows": rows})
    (got,) = _serve(export, [1, 2, 9, 9, 9, 9])   # serving counts nothing: still not
    np.testing.assert_array_equal(got[:3], want)
    np.testing.assert_array_equal(got[2:], np.full([4, DIM], -1.0, np.float32))


def test_export_is_stock_tensorflow_ops_with_the_table_in_it(tmp_path):
    export = str(tmp_path / "m")
    _train_and_export(export, parts=2)
    sm = saved_model_pb2.SavedModel.FromString((tmp_path / "m" / "saved_model.pb")
                                               .read_bytes())
    nodes = {n.name: n.op for n in sm.meta_graphs[0].graph_def.node}
    assert not [op for op in nodes.values() if op.startswith("Kv")]
    for part in ("emb/part_0", "emb/part_1"):
        assert nodes[part] == "VariableV2"
        assert nodes[f"{part}/id_table"] == "MutableHashTableV2"
        assert nodes[f"{part}/Adagrad"] == "VariableV2"   # a slot: rows only, no table
        assert f"{part}/Adagrad/id_table" not in nodes
    assert "LookupTableFindV2" in nodes.values()


def test_export_variables_hold_deeprecs_layout(tmp_path):
    export = str(tmp_path / "m")
    want = _train_and_export(export)
    prefix = str(tmp_path / "m" / "variables" / "variables")
    shapes = dict(tf.train.list_variables(prefix))
    n = len(KNOWN["int64"])
    for name in ("emb", "emb/Adagrad"):
        assert shapes[f"{name}-keys"] == [n] and shapes[f"{name}-values"] == [n, DIM]
        assert shapes[f"{name}-freqs"] == [n] and shapes[f"{name}-versions"] == [n]
    keys = tf.train.load_variable(prefix, "emb-keys").tolist()
    values = tf.train.load_variable(prefix, "emb-values")
    np.testing.assert_array_equal(values[[keys.index(k) for k in KNOWN["int64"]]], want)
    assert tf.train.load_variable(prefix, "emb-freqs").min() >= 1


def test_builder_and_a_partitioned_string_table_served_in_another_process(tmp_path):
    export = str(tmp_path / "m")
    ids, rows, train = _model("string", 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: KNOWN["string"]})
        want = sess.run(rows, {ids: KNOWN["string"]})
        b = tf.saved_model.builder.SavedModelBuilder(export)
        sig = tf.saved_model.signature_def_utils.predict_signature_def({"ids": ids},
                                                                       {"rows": rows})
        b.add_meta_graph_and_variables(sess, [SERVE], signature_def_map={"lookup": sig})
        b.save()
    code = ("import json, sys\nimport tensorweave as tf\n"
            "with tf.Session() as sess:\n"
            "    sig = tf.saved_model.loader.load(sess, ['serve'], sys.argv[1])"
            ".signature_def['lookup']\n"
            "    ids = [s.encode() for s in json.loads(sys.argv[2])]\n"
            "    print(json.dumps(sess.run(sig.outputs['rows'].name, "
            "{sig.inputs['ids'].name: ids}).tolist()))\n")
    asked = [k.decode() for k in KNOWN["string"]] + ["never seen"]
    out = subprocess.run([sys.executable, "-c", code, export, json.dumps(asked)], cwd=REPO_ROOT,
                         capture_output=True, text=True, check=True, timeout=120).stdout
    got = np.asarray(json.loads(out.splitlines()[-1]), np.float32)
    np.testing.assert_array_equal(got[:-1], want)
    np.testing.assert_array_equal(got[-1], np.zeros(DIM))


def test_estimator_export_savedmodel_keeps_the_table(tmp_path):
    known = KNOWN["int64"]

    def model_fn(features, labels, mode):
        emb = tf.get_embedding_variable("user_embedding", DIM)
        rows = tf.nn.embedding_lookup(emb, features["user"])
        score = tf.reduce_sum(rows, axis=1)
        if mode == tf.estimator.ModeKeys.PREDICT:
            return tf.estimator.EstimatorSpec(mode, predictions={"score": score},
                                              export_outputs={"score": tf.estimator.export
                                                              .PredictOutput({"score": score})})
        loss = tf.reduce_sum(tf.square(score - labels))
        step = tf.train.get_or_create_global_step()
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=tf.train.AdagradOptimizer(0.2).minimize(loss, step))

    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path / "model"))
    labels = np.linspace(-1, 1, len(known)).astype(np.float32)
    est.train(lambda: tf.data.Dataset.from_tensor_slices(
        ({"user": np.asarray(known, np.int64)}, labels)).batch(2).repeat(), steps=6)
    want = np.array([p["score"] for p in est.predict(lambda: tf.data.Dataset
                                                     .from_tensor_slices({"user": known})
                                                     .batch(5))])
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(
        {"user": tf.placeholder(tf.int64, [None], name="user")})
    export = est.export_savedmodel(str(tmp_path / "export"), receiver)
    with tf.Graph().as_default(), tf.Session() as sess:
        sig = tf.saved_model.loader.load(sess, [SERVE], export).signature_def["score"]
        got = sess.run(sig.outputs["score"].name, {sig.inputs["user"].name: known + [77]})
    np.testing.assert_allclose(got[:-1], want, rtol=1e-6)
    assert got[-1] == 0.0

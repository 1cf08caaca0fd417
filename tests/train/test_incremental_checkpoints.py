"""Incremental checkpoints (issue 33): DeepRec's `Saver(incremental_save_restore=True)`,
`Saver.incremental_save`, and what a restore makes of a full checkpoint plus its chain.

Specification: DeepRec's docs/docs_en/Incremental-Checkpoint.md and its
incremental_saver tests (what they check: a sparse variable's changed rows only, a dense
one whole, restore = full + incremental, partitioned variables, Adagrad slots). Our own
words and values.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import checkpoint_delta as delta
from tensorweave.train import incremental_checkpoints as incr

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _model(partitions: int = 1):
    kw = {"partitioner": tf.fixed_size_partitioner(partitions)} if partitions > 1 else {}
    emb = tf.get_variable("emb", [400, 4], initializer=tf.ones_initializer(), **kw)
    dense = tf.get_variable("dense", [3], initializer=tf.zeros_initializer())
    tf.get_variable("still", [2], initializer=tf.ones_initializer(), trainable=False)
    ids = tf.placeholder(tf.int64, [None], name="ids")
    loss = tf.reduce_sum(tf.nn.embedding_lookup(emb, ids)) + tf.reduce_sum(dense * dense - dense)
    step = tf.train.get_or_create_global_step()
    train = tf.train.AdagradOptimizer(0.1).minimize(loss, global_step=step)
    return ids, step, train


def _values(sess):
    return {v.op.name: sess.run(v) for v in tf.global_variables()}


def _entries(prefix):
    with open(prefix + ".index") as f:
        return json.load(f)["tensors"]


# ---- digests ---------------------------------------------------------------------
def test_row_digests_find_exactly_the_changed_rows():
    a = np.random.default_rng(1).normal(size=[300, 5]).astype(np.float32)
    b = a.copy()
    b[[3, 150]] += 1e-7 * np.abs(b[[3, 150]]).max() + 1e-6
    assert delta.changed(delta.row_digests(a), delta.row_digests(a.copy())) == "same"
    assert list(delta.changed(delta.row_digests(a), delta.row_digests(b))) == [3, 150]
    c = a.copy()
    c[:200] += 1   # most rows changed: written whole
    assert delta.changed(delta.row_digests(a), delta.row_digests(c)) is None


def test_row_digests_see_changes_a_linear_sum_would_cancel():
    # Flipping the sign of the high float of two 8-byte words changes each word by
    # 2**63: a plain sum of word * odd multiplier cancels; the digest must not.
    a = np.ones([100, 4], np.float32)
    b = a.copy()
    b[7, 1] = -1.0
    b[7, 3] = -1.0
    assert list(delta.changed(delta.row_digests(a), delta.row_digests(b))) == [7]


def test_small_and_string_tensors_are_compared_whole():
    small = np.arange(6, dtype=np.int64).reshape(3, 2)
    assert isinstance(delta.row_digests(small), bytes)
    assert delta.changed(delta.row_digests(small), delta.row_digests(small + 0)) == "same"
    assert delta.changed(delta.row_digests(small), delta.row_digests(small + 1)) is None
    words = np.array([b"a", b"bc"], dtype=object)
    assert delta.changed(delta.row_digests(words),
                         delta.row_digests(np.array([b"a", b"bd"], dtype=object))) is None
    assert delta.changed(None, delta.row_digests(small)) is None   # no digests: whole


# ---- Saver -----------------------------------------------------------------------
@pytest.mark.parametrize("partitions", [1, 4])
def test_chain_holds_only_changes_and_restores_exactly(tmp_path, partitions):
    ids, step, train = _model(partitions)
    saver = tf.train.Saver(sharded=True, incremental_save_restore=True)
    where = incr.incremental_path(str(tmp_path))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        full = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        sess.run(train, {ids: [1, 2, 300]})
        first = saver.incremental_save(sess, where, global_step=step)
        sess.run(train, {ids: [2, 399]})
        second = saver.incremental_save(sess, where, global_step=step)
        want = _values(sess)
        sess.run(tf.global_variables_initializer())
        assert saver.restore(sess, second) == second
        got = _values(sess)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert delta.chain(second) == [full, first, second]
    e = _entries(second)
    assert e["still"]["delta"] == "same" and "offset" not in e["still"]
    assert "delta" not in e["dense"]   # a dense update: whole
    emb_rows = sum(v["delta"]["rows"]["count"] for k, v in e.items()
                   if k.startswith("emb") and "Adagrad" not in k and v.get("delta") != "same")
    assert emb_rows == 2   # rows 2 and 399, not the 400
    # Every reader resolves the chain: TF's checkpoint_utils and CheckpointReader.
    np.testing.assert_array_equal(tf.train.load_variable(second, "emb"), want["emb"]
                                  if "emb" in want else np.concatenate(
                                      [want[f"emb/part_{i}"] for i in range(partitions)]))
    shapes = dict(tf.train.list_variables(second))
    assert shapes["dense"] == [3] and shapes["global_step"] == []


def test_state_files_name_full_ones_for_tf_and_the_chain_below(tmp_path):
    ids, step, train = _model()
    saver = tf.train.Saver(incremental_save_restore=True)
    where = incr.incremental_path(str(tmp_path))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        links = []
        for i in range(3):
            sess.run(train, {ids: [i]})
            links.append(saver.incremental_save(sess, where, global_step=step))
        assert tf.train.latest_checkpoint(str(tmp_path)) == str(tmp_path / "model.ckpt-0")
        st = tf.train.get_checkpoint_state(os.path.dirname(where))
        assert st.model_checkpoint_path == links[-1]
        assert list(st.all_model_checkpoint_paths) == links
        sess.run(train, {ids: [9]})
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)   # a new full one
    assert tf.train.get_checkpoint_state(os.path.dirname(where)) is None
    assert not any(os.path.exists(p + ".index") for p in links)


def test_refused_with_what_to_do(tmp_path):
    ids, step, train = _model()
    plain = tf.train.Saver()
    with pytest.raises(ValueError, match="checkpoint_format='tensorweave'"):
        tf.train.Saver(incremental_save_restore=True, checkpoint_format="tensorflow")
    saver = tf.train.Saver(incremental_save_restore=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        with pytest.raises(ValueError, match="incremental_save_restore=True"):
            plain.incremental_save(sess, incr.incremental_path(str(tmp_path)))
        with pytest.raises(ValueError, match="save.. a full checkpoint first"):
            saver.incremental_save(sess, incr.incremental_path(str(tmp_path)), global_step=0)
        saver.save(sess, str(tmp_path / "model.ckpt"))
        with pytest.raises(ValueError, match="would overwrite the checkpoint it builds on"):
            saver.incremental_save(sess, str(tmp_path / "model.ckpt"))


def test_task_without_digests_writes_whole_and_stays_correct(tmp_path):
    # A restarted ps (or chief) has no digests of the parent: the shard is whole.
    ids, step, train = _model()
    saver = tf.train.Saver(incremental_save_restore=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        sess.run(train, {ids: [5]})
        delta._STORES.clear()
        p = saver.incremental_save(sess, incr.incremental_path(str(tmp_path)), global_step=step)
        want = _values(sess)
    e = _entries(p)
    assert all("delta" not in v for v in e.values())
    np.testing.assert_array_equal(tf.train.load_variable(p, "emb"), want["emb"])


def test_damaged_link_falls_back_to_the_last_intact_one(tmp_path):
    ids, step, train = _model()
    saver = tf.train.Saver(incremental_save_restore=True)
    where = incr.incremental_path(str(tmp_path))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        full = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        links, states = [], []
        for i in range(3):
            sess.run(train, {ids: [i]})
            links.append(saver.incremental_save(sess, where, global_step=step))
            states.append(_values(sess))
        shard = links[1] + "-00000-of-00001"
        raw = bytearray(open(shard, "rb").read())
        raw[20] ^= 0xFF
        open(shard, "wb").write(bytes(raw))
        assert incr.newest_incremental(str(tmp_path), full) == links[0]
        sess.run(tf.global_variables_initializer())
        assert saver.restore(sess, links[2], fallback=True) == links[0]
        assert sess.run(step) == states[0]["global_step"]


# ---- MonitoredTrainingSession / hooks --------------------------------------------
def _train_mts(d, steps, crash):
    with tf.Graph().as_default():
        ids, step, train = _model()
        sess = tf.train.MonitoredTrainingSession(
            checkpoint_dir=d, save_checkpoint_secs=600, save_incremental_checkpoint_secs=0,
            log_step_count_steps=None, save_summaries_steps=None)
        start = sess.run(step)
        for i in range(steps):
            sess.run(train, {ids: [i % 400]})
        end = sess.run(step)
        if not crash:
            sess.close()
        return start, end


def test_monitored_session_restores_full_plus_increments(tmp_path):
    # A chief killed mid-run (no final save): the next one starts where the newest
    # incremental checkpoint was, not at the 600 s full one.
    start, end = _train_mts(str(tmp_path), 12, crash=True)
    assert (start, end) == (0, 12)
    newest = tf.train.get_checkpoint_state(os.path.dirname(incr.incremental_path(
        str(tmp_path)))).model_checkpoint_path
    assert newest.endswith("-12")   # the last step was saved incrementally (interval 0)
    start, _ = _train_mts(str(tmp_path), 1, crash=False)
    assert start == 12


def test_incremental_hook_needs_full_saves_and_an_incremental_saver(tmp_path):
    with tf.Graph().as_default():
        _model()
        with pytest.raises(ValueError, match="needs full checkpoints too"):
            tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                              save_checkpoint_secs=None,
                                              save_incremental_checkpoint_secs=5)
    with tf.Graph().as_default():
        _model()
        hook = tf.train.CheckpointSaverHook(str(tmp_path), save_secs=600,
                                            saver=tf.train.Saver(), incremental_save_secs=1)
        with pytest.raises(ValueError, match="incremental_save_restore=True"):
            with tf.train.MonitoredSession(hooks=[hook]):
                pass


# ---- on parameter servers --------------------------------------------------------
@pytest.mark.cluster_shape(ps=2, workers=1)
def test_each_ps_writes_its_own_changes(inprocess_cluster, tmp_path):
    spec, servers = inprocess_cluster
    target = servers[("worker", 0)].target
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=spec)):
            ids, step, train = _model(partitions=2)   # emb/part_0 and _1 on two ps
        saver = tf.train.Saver(sharded=True, incremental_save_restore=True)
        where = incr.incremental_path(str(tmp_path))
        with tf.Session(target) as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
            sess.run(train, {ids: [3]})   # "mod" partitioning: a row of emb/part_1 only
            p = saver.incremental_save(sess, where, global_step=step)
            want = _values(sess)
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, p)
            got = _values(sess)
    for name, value in want.items():
        np.testing.assert_array_equal(got[name], value, err_msg=name)
    assert os.path.exists(p + "-00001-of-00002")   # one shard per ps, written there
    e = _entries(p)
    assert e["emb/part_1"]["delta"]["rows"]["count"] == 1
    assert e["emb/part_0"]["delta"] == "same" and e["emb/part_0/Adagrad"]["delta"] == "same"


def test_exported_for_tensorflow_an_incremental_savers_save_is_tfs_full_save():
    from tensorweave.framework.tf_lowering import lower_for_tensorflow
    _model()
    saver = tf.train.Saver(sharded=True, incremental_save_restore=True)
    g = tf.get_default_graph()
    gd = g.as_graph_def()
    lower_for_tensorflow(gd, g)
    ops = {n.op for n in gd.node}
    assert "SaveShardDelta" not in ops and "SaveV2" in ops
    save = next(n for n in gd.node if n.op == "SaveV2")
    # its tensors are the snapshots, not the lineage string
    assert not any("lineage" in i for i in save.input)
    assert saver.saver_def.save_tensor_name


def test_deeprecs_estimator_idiom(tmp_path, monkeypatch):
    # DeepRec's docs: the model_fn's Scaffold and chief CheckpointSaverHook carry the
    # incremental saves; as TF, that hook replaces the RunConfig's (one full save per
    # step, not two) and the saving listeners hear every save, incremental ones too.
    def input_fn():
        ids = np.arange(64, dtype=np.int64)
        return tf.data.Dataset.from_tensor_slices(
            ({"ids": ids}, ids.astype(np.float32))).repeat().batch(4)

    def model_fn(features, labels, mode, params):
        emb = tf.get_variable("emb", [64, 2], partitioner=tf.fixed_size_partitioner(2))
        out = tf.reduce_sum(tf.nn.embedding_lookup(emb, features["ids"]), axis=1)
        loss = tf.reduce_mean(tf.square(out - labels))
        train_op = tf.train.AdagradOptimizer(0.1).minimize(
            loss, global_step=tf.train.get_global_step())
        scaffold = tf.train.Scaffold(saver=tf.train.Saver(
            sharded=True, incremental_save_restore=True), incremental_save_restore=True)
        return tf.estimator.EstimatorSpec(
            mode, loss=loss, train_op=train_op, scaffold=scaffold,
            training_chief_hooks=[tf.train.CheckpointSaverHook(
                params["model_dir"], save_secs=600, scaffold=scaffold,
                incremental_save_secs=0)])

    heard = []

    class Listener(tf.train.CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            heard.append((global_step_value, os.path.exists(
                incr.incremental_path(str(tmp_path)) + f"-{global_step_value}.index")))

    full_saves = []
    real_save = tf.train.Saver.save
    monkeypatch.setattr(tf.train.Saver, "save", lambda self, sess, path, global_step=None,
                        **kw: full_saves.append(global_step) or real_save(
                            self, sess, path, global_step, **kw))
    est = tf.estimator.Estimator(model_fn, model_dir=str(tmp_path),
                                 params={"model_dir": str(tmp_path)},
                                 config=tf.estimator.RunConfig(save_checkpoints_secs=600))
    est.train(input_fn, steps=4, saving_listeners=[Listener()])
    assert heard == [(0, False), (1, True), (2, True), (3, True), (4, True), (4, False)]
    assert full_saves == [0, 4]
    # the final full save dropped the chain
    assert not os.path.exists(incr.incremental_path(str(tmp_path)) + "-4.index")

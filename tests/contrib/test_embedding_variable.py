"""DeepRec's EmbeddingVariable (issue 34, first part): `tf.get_embedding_variable`, its
lookups, optimizer updates, admission filter, eviction and checkpoints.

Specification: DeepRec's docs/docs_en/Embedding-Variable.md, Feature-Filter.md,
Feature-Eviction.md and Embedding-Variable-Export-Format.md (what they state: a table
that grows with the ids, the doc example's values, rows of ids not admitted read
default_value_no_permission and are not trained, eviction at save, `-keys`/`-values`/
`-freqs`/`-versions` in checkpoints). Our own words and values; the optimizer updates
are checked against the same model on a dense variable.
"""
from __future__ import annotations

import collections

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")

IDS = [[0, 1, 2, 5, 6, 7], [5, 7, 7, 9], [0, 9, 2]]


def test_deeprec_doc_example_values():
    var = tf.get_embedding_variable("var_0", embedding_dim=3,
                                    initializer=tf.ones_initializer(tf.float32))
    emb = tf.nn.embedding_lookup(var, tf.cast([0, 1, 2, 5, 6, 7], tf.int64))
    loss = tf.reduce_sum(tf.multiply(emb, 2.0))
    opt = tf.train.AdagradOptimizer(0.1)
    train = opt.apply_gradients(opt.compute_gradients(loss))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = [sess.run([emb, train, loss])[::2] for _ in range(3)]
    # Adagrad from 0.1 with gradient 2 each step: 1 -> 0.90122706 -> 0.8309542
    np.testing.assert_allclose([g[0][0, 0] for g in got], [1.0, 0.90122706, 0.8309542],
                               rtol=1e-6)
    np.testing.assert_allclose([g[1] for g in got], [36.0, 32.444176, 29.914352], rtol=1e-6)


@pytest.mark.parametrize("make_opt", [
    lambda: tf.train.GradientDescentOptimizer(0.3),
    lambda: tf.train.AdagradOptimizer(0.2),
    lambda: tf.train.AdamOptimizer(0.05),
    lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    lambda: tf.train.RMSPropOptimizer(0.05),
    lambda: tf.train.FtrlOptimizer(0.1, l1_regularization_strength=0.01),
    lambda: tf.train.ProximalAdagradOptimizer(0.1),
], ids=["sgd", "adagrad", "adam", "momentum", "rmsprop", "ftrl", "proximal_adagrad"])
def test_updates_match_the_same_model_on_a_dense_variable(make_opt):
    start = np.random.default_rng(3).normal(size=[16, 4]).astype(np.float32)
    ids = tf.placeholder(tf.int64, [None])
    target = tf.constant(np.linspace(-1, 1, 4, dtype=np.float32))
    ev = tf.get_embedding_variable(
        "ev", 4, initializer=tf.constant_initializer(start),
        ev_option=tf.EmbeddingVariableOption(tf.InitializerOption(default_value_dim=16)))
    dense = tf.get_variable("dense", initializer=start)
    losses = [tf.reduce_sum(tf.square(tf.nn.embedding_lookup(v, ids) - target))
              for v in (ev, dense)]
    trains = [make_opt().minimize(loss) for loss in losses]
    look = [tf.nn.embedding_lookup(v, [0, 1, 2, 5, 6, 7, 9]) for v in (ev, dense)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in IDS * 3:
            sess.run(trains, {ids: batch})
        got_ev, got_dense = sess.run(look)
    np.testing.assert_allclose(got_ev, got_dense, rtol=2e-6, atol=1e-7)


def test_memory_follows_the_ids_seen_not_a_vocabulary():
    ev = tf.get_embedding_variable("ev", 2, initializer=tf.ones_initializer())
    ids = tf.constant([10**15, -3, 7, 10**15], tf.int64)
    rows = tf.nn.embedding_lookup(ev, ids)
    keys = ev.saveable_objects()[0].specs[0].tensor
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(rows), np.ones([4, 2]))
        assert sorted(sess.run(keys).tolist()) == [-3, 7, 10**15]


def test_counter_filter_admits_after_filter_freq_lookups():
    option = tf.EmbeddingVariableOption(
        init_option=tf.InitializerOption(default_value_no_permission=-5.0),
        filter_option=tf.CounterFilter(filter_freq=3))
    ev = tf.get_embedding_variable("ev", 2, initializer=tf.ones_initializer(),
                                   ev_option=option)
    ids = tf.placeholder(tf.int64, [None])
    rows = tf.nn.embedding_lookup(ev, ids)
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
    keys = ev.saveable_objects()[0].specs[0].tensor
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        seen = [sess.run([rows, train], {ids: [4]})[0][0, 0] for _ in range(2)]
        assert seen == [-5.0, -5.0] and sess.run(keys).size == 0   # not admitted, untrained
        sess.run(train, {ids: [4, 8]})   # the third lookup of 4 admits it (ones) and trains it
        np.testing.assert_array_equal(sess.run(rows, {ids: [4, 8]}), [[0.0, 0.0], [-5, -5]])
        assert sess.run(keys).tolist() == [4]


def test_string_keys():
    ev = tf.get_embedding_variable("words", 3, key_dtype=tf.string,
                                   initializer=tf.zeros_initializer())
    words = tf.placeholder(tf.string, [None])
    rows = tf.nn.embedding_lookup(ev, words)
    train = tf.train.GradientDescentOptimizer(0.5).minimize(-tf.reduce_sum(rows))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {words: ["cat", "dog", "cat"]})
        np.testing.assert_allclose(sess.run(rows, {words: ["cat", "dog", "emu"]}),
                                   [[1.0] * 3, [0.5] * 3, [0.0] * 3])


def _trained(tmp_path, evict=None, steps=4):
    option = tf.EmbeddingVariableOption(evict_option=evict)
    step = tf.train.get_or_create_global_step()
    ev = tf.get_embedding_variable("emb", 2, initializer=tf.ones_initializer(),
                                   ev_option=option)
    ids = tf.placeholder(tf.int64, [None])
    rows = tf.nn.embedding_lookup(ev, ids)
    train = tf.train.AdagradOptimizer(0.1).minimize(tf.reduce_sum(rows), global_step=step)
    return ev, ids, rows, train, step


def test_checkpoint_holds_deeprecs_layout_and_restores(tmp_path):
    ev, ids, rows, train, step = _trained(tmp_path)
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in ([1, 2], [2, 3], [3]):
            sess.run(train, {ids: batch})
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        want = sess.run(rows, {ids: [1, 2, 3]})
        sess.run(train, {ids: [4, 1]})   # after the save: id 4 is new, id 1 moves on
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(rows, {ids: [1, 2, 3]}), want)
        keys = ev.saveable_objects()[0].specs[0].tensor
        assert sorted(sess.run(keys).tolist()) == [1, 2, 3]   # id 4 went with the restore
    names = dict(tf.train.list_variables(path))
    for part in ("keys", "values", "freqs", "versions"):
        assert f"emb-{part}" in names and f"emb/Adagrad-{part}" in names
    assert names["emb-values"] == [3, 2]
    np.testing.assert_array_equal(sorted(tf.train.load_variable(path, "emb-keys")), [1, 2, 3])
    freqs = dict(zip(tf.train.load_variable(path, "emb-keys"),
                     tf.train.load_variable(path, "emb-freqs")))
    assert freqs == {1: 1, 2: 2, 3: 2}


def test_global_step_eviction_happens_at_save(tmp_path):
    ev, ids, rows, train, step = _trained(tmp_path, tf.GlobalStepEvict(steps_to_live=2))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for batch in ([1], [2], [3], [4]):   # looked up at global steps 0, 1, 2, 3
            sess.run(train, {ids: batch})
        keys = ev.saveable_objects()[0].specs[0].tensor
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
        # at step 4, ids last seen before step 2 are dropped
        assert sorted(tf.train.load_variable(path, "emb-keys").tolist()) == [3, 4]
        assert sorted(sess.run(keys).tolist()) == [3, 4]


def test_l2_weight_eviction():
    ev = tf.get_embedding_variable(
        "ev", 2, initializer=tf.ones_initializer(),
        ev_option=tf.EmbeddingVariableOption(evict_option=tf.L2WeightEvict(0.5)))
    ids = tf.placeholder(tf.int64, [None])
    rows = tf.nn.embedding_lookup(ev, ids)
    train = tf.train.GradientDescentOptimizer(0.4).minimize(tf.reduce_sum(rows))
    keys = ev.saveable_objects()[0].specs[0].tensor
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        # L2 norms: id 1's row 0.6, 0.6 -> 0.85; id 2's 0.2, 0.2 -> 0.28
        sess.run(train, {ids: [1, 2, 2]})
        assert sorted(sess.run(keys).tolist()) == [1]   # an export is a save: evicts


def test_refused_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="regularizer is not supported"):
        tf.get_embedding_variable("ev", 2, regularizer=lambda x: x)
    with pytest.raises(TypeError, match="key_dtype must be int64, int32 or string"):
        tf.get_embedding_variable("ev2", 2, key_dtype=tf.float32)


def test_partitioned_by_id_mod_partitions(tmp_path):
    ev = tf.get_embedding_variable("emb", 2, initializer=tf.ones_initializer(),
                                   partitioner=tf.fixed_size_partitioner(3))
    assert [p.op.name for p in ev] == ["emb/part_0", "emb/part_1", "emb/part_2"]
    ids = tf.placeholder(tf.int64, [None])
    rows = tf.nn.embedding_lookup(ev, ids)
    train = tf.train.GradientDescentOptimizer(1.0).minimize(tf.reduce_sum(rows))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {ids: [3, 4, 5, 300000000000]})
        # (a lookup admits: 7 joins part 1)
        np.testing.assert_array_equal(sess.run(rows, {ids: [4, 7]}), [[0, 0], [1, 1]])
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    keys = {i: sorted(tf.train.load_variable(path, f"emb/part_{i}-keys").tolist())
            for i in range(3)}
    assert keys == {0: [3, 300000000000], 1: [4, 7], 2: [5]}


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_on_two_ps_tasks(inprocess_cluster, tmp_path):
    spec, servers = inprocess_cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        ev = tf.get_embedding_variable("emb", 2, initializer=tf.ones_initializer(),
                                       partitioner=tf.fixed_size_partitioner(2))
        ids = tf.placeholder(tf.int64, [None])
        rows = tf.nn.embedding_lookup(ev, ids)
        train = tf.train.AdagradOptimizer(0.5).minimize(tf.reduce_sum(rows))
    assert [p.device for p in ev] == ["/job:ps/task:0", "/job:ps/task:1"]
    saver = tf.train.Saver(sharded=True)
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {ids: [10, 11, 12]})
        want = sess.run(rows, {ids: [10, 11, 12]})
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(rows, {ids: [10, 11, 12]}), want)
    assert want[0, 0] < 1.0


def test_sparse_lookups_on_a_partitioned_table():
    ev = tf.get_embedding_variable("ev", 2, initializer=tf.ones_initializer(),
                                   partitioner=tf.fixed_size_partitioner(2))
    sp = tf.SparseTensor(indices=[[0, 0], [0, 1], [1, 0]],
                         values=tf.constant([10, 11, 12], tf.int64), dense_shape=[2, 2])
    summed = tf.nn.embedding_lookup_sparse(ev, sp, None, combiner="sum")
    mean = tf.nn.safe_embedding_lookup_sparse(ev, sp, combiner="mean")
    train = tf.train.GradientDescentOptimizer(0.5).minimize(tf.reduce_sum(summed))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_sum, got_mean = sess.run([summed, mean])
        np.testing.assert_array_equal(got_sum, [[2, 2], [1, 1]])
        np.testing.assert_array_equal(got_mean, [[1, 1], [1, 1]])
        sess.run(train)
        np.testing.assert_array_equal(sess.run(summed), [[1, 1], [0.5, 0.5]])


@pytest.mark.parametrize("partition_num", [None, 2])
def test_categorical_column_with_embedding_trains_as_an_identity_column(partition_num):
    # DeepRec's doc example (input_layer, Ftrl), checked against the same model on
    # categorical_column_with_identity: the same rows for the same ids.
    sp = tf.SparseTensor(indices=[[0, 0], [1, 1], [2, 2], [3, 3], [4, 4]],
                         values=tf.cast([1, 2, 3, 4, 5], tf.dtypes.int64),
                         dense_shape=[5, 5])
    cols = [tf.feature_column.categorical_column_with_embedding(
                "col_emb", dtype=tf.dtypes.int64, partition_num=partition_num),
            tf.feature_column.categorical_column_with_identity("col_emb", 8)]
    outs, trains = [], []
    for i, col in enumerate(cols):
        with tf.variable_scope(f"m{i}"):
            emb = tf.feature_column.input_layer({"col_emb": sp}, [
                tf.feature_column.embedding_column(col, dimension=3,
                                                   initializer=tf.ones_initializer())])
        opt = tf.train.FtrlOptimizer(0.1, l1_regularization_strength=2.0,
                                     l2_regularization_strength=0.00001)
        outs.append(emb)
        trains.append(opt.minimize(tf.reduce_sum(emb * 2.0)))
    assert "m0/input_layer/col_emb_embedding/embedding_weights" in \
        [v.op.name.split("/part_")[0] for v in tf.global_variables()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(trains)
        got_ev, got_dense = sess.run(outs)
    np.testing.assert_allclose(got_ev, got_dense, rtol=1e-6)
    assert got_ev[0, 0] < 1.0


def test_tf_dtypes_module():
    assert tf.dtypes.int64 is tf.int64 and tf.dtypes.as_dtype("float32") is tf.float32
    assert tf.dtypes.cast is tf.cast


@pytest.mark.parametrize("saved_parts, restored_parts", [(3, 1), (3, 2), (1, 4), (2, 2)])
def test_restores_onto_another_number_of_partitions(tmp_path, saved_parts, restored_parts):
    ids_seen = [1, 2, 3, 4, 5, 6, 7, 10**12]

    def build(parts):
        kw = {"partitioner": tf.fixed_size_partitioner(parts)} if parts > 1 else {}
        ev = tf.get_embedding_variable("emb", 2, initializer=tf.ones_initializer(), **kw)
        ids = tf.placeholder(tf.int64, [None])
        rows = tf.nn.embedding_lookup(ev, ids)
        opt = tf.train.AdagradOptimizer(0.3)
        train = opt.minimize(tf.reduce_sum(rows * tf.constant([1.0, -2.0])))
        return ev, ids, rows, train

    with tf.Graph().as_default():
        _, ids, rows, train = build(saved_parts)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(4):
                sess.run(train, {ids: ids_seen[i:i + 5]})
            want = sess.run(rows, {ids: ids_seen})
            sess.run(train, {ids: ids_seen})
            want_next = sess.run(rows, {ids: ids_seen})   # one more Adagrad step
            saver.save(sess, str(tmp_path / "model.ckpt"))
    with tf.Graph().as_default():
        ev, ids, rows, train = build(restored_parts)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, str(tmp_path / "model.ckpt"))
            np.testing.assert_allclose(sess.run(rows, {ids: ids_seen}), want_next)
            assert want[0, 0] != want_next[0, 0]
            # the Adagrad accumulators came along: the next step is the same one
            sess.run(train, {ids: ids_seen})
            got = sess.run(rows, {ids: ids_seen})
    with tf.Graph().as_default():
        _, ids, rows, train = build(saved_parts)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, str(tmp_path / "model.ckpt"))
            sess.run(train, {ids: ids_seen})
            np.testing.assert_allclose(got, sess.run(rows, {ids: ids_seen}), rtol=1e-6)


def test_sync_replicas_trains_it_as_a_dense_variable():
    # SyncReplicasOptimizer aggregates its sparse gradients (rows of the table) in a
    # SparseConditionalAccumulator, then applies them: as for a dense variable. No token
    # ahead (num_tokens=0): each step waits for the chief's apply of its gradient, so no
    # gradient goes stale (with one token ahead, which step's gradient arrives stale and
    # is dropped depends on the chief thread's timing).
    got = []
    for make in (lambda: tf.get_embedding_variable("v", 2, initializer=tf.ones_initializer()),
                 lambda: tf.get_variable("v", [8, 2], initializer=tf.ones_initializer())):
        with tf.Graph().as_default():
            step = tf.train.get_or_create_global_step()
            var = make()
            ids = tf.placeholder(tf.int64, [None])
            loss = tf.reduce_sum(tf.nn.embedding_lookup(var, ids) * tf.constant([1., 3.]))
            opt = tf.train.SyncReplicasOptimizer(tf.train.AdagradOptimizer(0.5),
                                                 replicas_to_aggregate=1, total_num_replicas=1)
            train = opt.minimize(loss, global_step=step)
            look = tf.nn.embedding_lookup(var, tf.constant([1, 2, 5], tf.int64))
            with tf.train.MonitoredTrainingSession(
                    hooks=[opt.make_session_run_hook(True, num_tokens=0)]) as sess:
                for batch in ([1, 2], [2, 5], [1, 1]):
                    sess.run(train, {ids: batch})
                got.append(sess.run([look, step]))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-6)
    assert got[0][1] == got[1][1] == 3 and got[0][0][0, 0] < 1.0


class _DictModel:
    """The index as a dict did it (the first implementation's rules, spelled out): the
    reference the NumPy index must match lookup for lookup."""

    def __init__(self, filter_freq):
        self.filter_freq, self.rows, self.pending, self.free, self.n = filter_freq, {}, {}, [], 1
        self.freqs, self.versions = {}, {}

    def lookup(self, ids, step):
        counts = collections.Counter(ids.tolist())   # (ints in key order, strings as met)
        where = {}
        for k, c in (sorted(counts.items()) if ids.dtype != object else counts.items()):
            if k in self.rows:
                row = where[k] = self.rows[k]
                self.freqs[row] += c   # (the version is the update's: KvStamp)
                continue
            seen = self.pending.pop(k, 0) + c
            if seen < self.filter_freq:
                self.pending[k], where[k] = seen, 0
                continue
            row = self.free.pop() if self.free else self.n
            self.n += row == self.n
            self.rows[k] = where[k] = row
            self.freqs[row], self.versions[row] = seen, step
        return [where[k] for k in ids.tolist()]

    def remove(self, keys):
        for k in keys:
            self.free.append(self.rows.pop(k))

    def live(self):
        return sorted(self.rows, key=self.rows.get)


@pytest.mark.parametrize("key_dtype", [tf.int64, tf.string])
@pytest.mark.parametrize("filter_freq", [0, 3])
def test_the_numpy_index_admits_counts_and_reuses_rows_as_a_dict_did(filter_freq, key_dtype):
    from tensorweave.ops.state.kv_variable_ops import EmbeddingResource, KvIndex, _default_rows
    index, model = KvIndex(key_dtype, filter_freq, 0, 0.0), _DictModel(filter_freq)
    emb = EmbeddingResource("emb", tf.float32, 2, index)
    emb.defaults = np.arange(10, dtype=np.float32).reshape(5, 2)
    index.clear()
    rng = np.random.default_rng(7)
    for step in range(60):
        ids = rng.zipf(1.5, 40).astype(np.int64) * rng.choice([-1, 1], 40)
        if key_dtype == tf.string:
            ids = index.keys_of([str(i) for i in ids.tolist()])
        assert index.lookup(ids, step).tolist() == model.lookup(ids, step)
        if step % 7 == 6:   # forget some ids, as an eviction does
            keys, _ = index.live()
            gone = keys[rng.random(len(keys)) < 0.3]
            index.remove(gone)
            model.remove(gone.tolist())
        keys, rows = index.live()
        assert keys.tolist() == model.live()
        assert index.freqs[rows].tolist() == [model.freqs[model.rows[k]] for k in keys.tolist()]
        assert index.versions[rows].tolist() == [model.versions[model.rows[k]]
                                                 for k in keys.tolist()]
        np.testing.assert_array_equal(emb.value[rows], emb.defaults[_default_rows(keys, 5)])
    pending = dict(zip(*(a.tolist() for a in index.pending.items())))
    assert pending == model.pending and (filter_freq == 0) == (not pending)

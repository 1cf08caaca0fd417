"""An EmbeddingVariable trained on 2 ps tasks restores onto a cluster of 1 and of 4 ps
(the ids spread again by id % parts), through a sharded Saver as a restarted job does."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.testing.cluster import InProcessCluster

IDS = [3, 10, 11, 12, 17, 10**12, -5]


def _model(spec, parts):
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        kw = {"partitioner": tf.fixed_size_partitioner(parts)} if parts > 1 else {}
        ev = tf.get_embedding_variable("emb", 2, initializer=tf.ones_initializer(), **kw)
        ids = tf.placeholder(tf.int64, [None])
        rows = tf.nn.embedding_lookup(ev, ids)
        step = tf.train.get_or_create_global_step()
        train = tf.train.AdagradOptimizer(0.5).minimize(tf.reduce_sum(rows * rows),
                                                        global_step=step)
    return ev, ids, rows, train


def _restored(path, ps):
    with tf.Graph().as_default(), InProcessCluster(ps=ps, workers=1) as c:
        ev, ids, rows, _ = _model(c.spec, ps)
        parts = list(ev) if ps > 1 else [ev]
        assert [p.device for p in parts] == [f"/job:ps/task:{i}" for i in range(ps)]
        with tf.Session(c.servers[("worker", 0)].target) as sess:
            tf.train.Saver(sharded=True).restore(sess, path)
            keys = [sess.run(p.saveable_objects()[0].specs[0].tensor) for p in parts]
            return sess.run(rows, {ids: IDS}), keys


@pytest.mark.transports("inprocess", why="what is tested is the restore's spreading of ids "
                        "over the ps tasks, the same over every transport")
def test_trained_on_two_ps_restores_onto_one_and_four(tmp_path):
    with tf.Graph().as_default(), InProcessCluster(ps=2, workers=1) as c:
        _, ids, rows, train = _model(c.spec, 2)
        with tf.Session(c.servers[("worker", 0)].target) as sess:
            sess.run(tf.global_variables_initializer())
            for i in range(4):
                sess.run(train, {ids: IDS[: 3 + i]})
            want = sess.run(rows, {ids: IDS})
            path = tf.train.Saver(sharded=True).save(sess, str(tmp_path / "m.ckpt"))
    assert not np.allclose(want[:3], 1.0)   # trained away from the initial ones
    for ps in (1, 4):
        got, keys = _restored(path, ps)
        np.testing.assert_allclose(got, want, rtol=1e-6)
        # each ps holds exactly its ids (id % ps), all ids once over the cluster
        for part, held in enumerate(keys):
            assert all(k % ps == part for k in held.tolist()), (ps, part, held)
        assert sorted(k for held in keys for k in held.tolist()) == sorted(IDS)

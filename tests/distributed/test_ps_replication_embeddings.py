"""EmbeddingVariables in ps replicas: a ps's EmbeddingVariable (its ids, their rows in the
variable and in every optimizer slot, frequencies, versions, the filter's pending ids
with their counts, default rows and settings) travels in its replica, and a ps restarted
from it goes on training exactly as the ps it replaces would have."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed import replica, replica_embeddings, replica_store
from tensorweave.distributed.server import Server
from tensorweave.runtime.resource_mgr import ResourceMgr
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from replication_helpers import DirectHolder
from suite_markers import TASK_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")

PS0, W0 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
START = np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3)  # default rows
# Ids seen once stay pending (filter_freq 2); 3 and 4 go idle, and an export (a save)
# after BEFORE[:5] evicts them (GlobalStepEvict): their rows are free.
BEFORE = [[1, 2, 3], [1, 2, 4], [5, 1, 3], [1, 2, 4], [1, 2, 6], [1, 2, 7], [2, 1]]
AFTER = [[1, 2, 8], [8, 9, 5], [9, 3, 10], [6, 10, 11]]


class Model:
    """An EmbeddingVariable with a filter, eviction and Adagrad: `ids`, `rows`, `train`;
    `exports` (KvExport: [keys, values, freqs, versions] per part, evicting, then the
    slot's values per part) and `names` (the parts' resources)."""

    def __init__(self, key_dtype=tf.int64, parts: int = 1) -> None:
        step = tf.train.get_or_create_global_step()
        option = tf.EmbeddingVariableOption(
            tf.InitializerOption(default_value_dim=8, default_value_no_permission=-3.0),
            filter_option=tf.CounterFilter(filter_freq=2),
            evict_option=tf.GlobalStepEvict(steps_to_live=1))
        ev = tf.get_embedding_variable(
            "emb", 3, key_dtype=key_dtype, initializer=tf.constant_initializer(START),
            ev_option=option,
            partitioner=tf.fixed_size_partitioner(parts) if parts > 1 else None)
        self.ids = tf.placeholder(key_dtype, [None])
        self.rows = tf.nn.embedding_lookup(ev, self.ids)
        opt = tf.train.AdagradOptimizer(0.3)
        self.train = opt.minimize(tf.reduce_sum(tf.square(self.rows - 0.5)),
                                  global_step=step)
        evs = list(ev) if parts > 1 else [ev]
        self.names = [e.op.name for e in evs]
        self.exports = [t.tensor for e in evs for t in e.saveable_objects()[0].specs] + [
            opt.get_slot(e, "accumulator").saveable_objects()[0].specs[1].tensor for e in evs]


def _feed(batch, key_dtype):
    return [str(i).encode() for i in batch] if key_dtype == tf.string else batch


def _state(resources: ResourceMgr, name: str) -> dict:
    """Everything of a group, by buffer row."""
    index = resources.lookup("", name).index
    keys, rows = index.live()
    pending = dict(zip(*(a.tolist() for a in index.pending.items())))
    return {"n": index.n, "keys": keys.tolist(), "rows": rows.tolist(),
            "freqs": index.freqs[rows].tolist(), "versions": index.versions[rows].tolist(),
            "pending": pending, "free": index.free.tolist(),
            "settings": (index.filter_freq, index.steps_to_live, index.l2_threshold),
            "members": [(m.name, m.no_permission, m.defaults.tolist(), m.value[rows].tolist())
                        for m in index.members]}


@pytest.mark.parametrize("key_dtype,parts", [(tf.int64, 1), (tf.string, 1), (tf.int64, 2)],
                         ids=["int64", "string", "partitioned"])
def test_a_group_loaded_from_its_replica_trains_on_as_the_original(key_dtype, parts):
    m = Model(key_dtype, parts)
    with tf.Session() as sess, tf.Session() as again:
        sess.run(tf.global_variables_initializer())
        _train_restore_and_go_on(m, key_dtype, parts, sess, again)


def _train_restore_and_go_on(m: Model, key_dtype, parts: int, sess, again) -> None:
    resources, holder = sess._runtime.device.resource_mgr, DirectHolder()
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: holder, 0.1)
    for i, batch in enumerate(BEFORE):
        sess.run(m.train, {m.ids: _feed(batch, key_dtype)})
        if i == 4:
            sess.run(m.exports)   # evicts 3 and 4: free rows
            assert sender.send_once()   # whole; the rest of BEFORE as changed rows
    assert sender.send_once() and len(holder.puts) == 2
    groups = [e.embedding for e in holder.puts[1][0].entry if e.HasField("embedding")]
    assert len(groups) == parts and not any(g.whole for g in groups)
    resp, tensors = holder.store.get(PS0)
    restored = ResourceMgr()
    assert replica_store.load(restored, resp.entry, tensors) == (1, 0, parts)
    for name in m.names:
        want = _state(resources, name)
        assert want["pending"] and want["free"] and len(want["members"]) == 2
        assert _state(restored, name) == want
    # The restored ps trains on: pending ids admitted at their count, new ids, free rows
    # reused, slots aligned; the same values as the ps that was not lost.
    again._runtime.device.resource_mgr = restored
    for batch in AFTER:
        feed = {m.ids: _feed(batch, key_dtype)}
        np.testing.assert_array_equal(sess.run([m.rows, m.train], feed)[0],
                                      again.run([m.rows, m.train], feed)[0])
    for name in m.names:
        assert _state(restored, name) == _state(resources, name)


def test_an_untouched_group_costs_no_copy_a_trained_id_sends_its_rows(monkeypatch):
    m = Model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        _trained_rows_are_sent(m, sess, monkeypatch)


def _trained_rows_are_sent(m: Model, sess, monkeypatch) -> None:
    resources, holder = sess._runtime.device.resource_mgr, DirectHolder()
    sender = replica.ReplicaSender(PS0, 7, resources, W0, lambda t: holder, 0)
    for batch in BEFORE:
        sess.run(m.train, {m.ids: batch})
    assert sender.send_once()
    copies: list = []
    copy = replica_embeddings._copy
    monkeypatch.setattr(replica_embeddings, "_copy", lambda i: copies.append(i) or copy(i))
    assert sender.send_once() and len(holder.puts) == 1 and not copies
    row = int(resources.lookup("", m.names[0]).index.rows.find([1])[0])
    sess.run(m.train, {m.ids: [1]})   # one id trained: its row (variable, slot, version)
    assert sender.send_once() and len(copies) == 1
    group, tensors = _group_of(holder.puts[-1])
    assert not group.whole and not group.side and tensors[0].tolist() == [row]
    assert len(tensors) == 7   # rows, ids, held, freqs, versions; the variable's, slot's
    # A lookup alone holds no update gate, yet counts: the end of its step sends it.
    sess.run(m.rows, {m.ids: [1, 12]})
    sender.after_step(updated=False)
    group, tensors = _group_of(holder.puts[-1])
    assert group.side and tensors[0].tolist() == [row]   # its count; 12 pending
    assert dict(zip(tensors[-2].tolist(), tensors[-1].tolist()))[12] == 1
    sender.after_step(updated=False)   # nothing looked up since: no put
    assert len(holder.puts) == 3


def _group_of(put):
    """(ReplicaEmbedding, its tensors) of a put holding one group."""
    req, tensors = put
    at = 0
    for e in req.entry:
        if e.HasField("embedding"):
            return e.embedding, tensors[at:at + replica_embeddings.tensor_count(e)]
        at += 2 if e.rows else 1
    raise AssertionError(f"no EmbeddingVariable in {req}")


def test_a_holder_without_the_group_refuses_its_changed_rows():
    m = Model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(m.train, {m.ids: [1, 1]})
        key = ("", m.names[0])
        group = replica_embeddings.snapshot(sess._runtime.device.resource_mgr, None)[key][1]
    e, tensors = replica_embeddings.whole(key, group)
    e.embedding.whole = False
    with pytest.raises(tf.errors.FailedPreconditionError, match="send the whole state"):
        replica_embeddings.apply(None, e, iter(tensors))


@pytest.mark.slow
@pytest.mark.transports("grpc", why=TASK_PROCESSES)
def test_a_ps_killed_comes_back_from_its_standby_with_its_embeddings(monkeypatch, tmp_path):
    """A ps process holding an EmbeddingVariable trained with Adagrad by a worker (this
    process), its replica on a ps_standby process, sent after every step: SIGKILLed and
    started again, it serves every trained row and slot row, count and version exactly,
    the chief's next session finds the model live (initializes nothing over it), and
    training goes on with new ids as on a ps never lost (a local session)."""
    env = {knobs.PS_REPLICATION.name: "1", knobs.PS_REPLICA_SECS.name: "0"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with tf.Graph().as_default():   # the ps that is never lost
        here = Model()
        local = tf.Session()
        local.run(tf.global_variables_initializer())
    with tf.device("/job:ps/task:0"):
        m = Model()
    spec = cluster_dict(1, 1, {"ps_standby": 1})
    with LocalCluster(spec=spec, in_process=(("worker", 0),), env=env) as lc:
        worker = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
        try:
            with tf.Session(worker.target) as sess:
                sess.run(tf.global_variables_initializer())
                for batch in BEFORE[:5]:
                    sess.run(m.train, {m.ids: batch})
                    local.run(here.train, {here.ids: batch})
                trained = sess.run(m.exports)   # (evicts 3 and 4, as a save would)
                local.run(here.exports)
            lc.kill("ps", 0)
            lc.restart("ps", 0)
            with tf.train.MonitoredTrainingSession(
                    master=worker.target, is_chief=True, checkpoint_dir=str(tmp_path),
                    save_checkpoint_secs=None, save_summaries_steps=None,
                    log_step_count_steps=0) as sess:
                back = sess.run(m.exports)
                for batch in AFTER:
                    np.testing.assert_array_equal(
                        sess.run([m.rows, m.train], {m.ids: batch})[0],
                        local.run([here.rows, here.train], {here.ids: batch})[0])
                after, want = sess.run(m.exports), local.run(here.exports)
        finally:
            worker.stop()
            local.close()
        ps_log = lc.output("ps", 0)
    assert len(trained[0]) == 2 and trained[-1].shape == (2, 3)   # ids 1 and 2, their slots
    for got, was in zip(back, trained):
        np.testing.assert_array_equal(got, was)
    for got, was in zip(after, want):
        np.testing.assert_array_equal(got, was)
    assert "and 1 EmbeddingVariables from its replica on /job:ps_standby" in ps_log, ps_log

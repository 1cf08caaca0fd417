"""MonitoredSession / MonitoredTrainingSession / SessionManager: local and in-process
cluster (chief and non-chief) behaviour."""
from __future__ import annotations

import threading
import time

import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.testing.cluster import cluster_dict
from tensorweave.train.basic_session_run_hooks import FinalOpsHook, StopAtStepHook
from tensorweave.train.device_setter import replica_device_setter
from tensorweave.train.monitored_session import MonitoredSession, MonitoredTrainingSession
from tensorweave.train.session_creators import ChiefSessionCreator, WorkerSessionCreator
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner
from tensorweave.train.saver import Saver
from tensorweave.train.checkpoint_management import latest_checkpoint
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_manager import SessionManager
from tensorweave.train.session_run_hook import SessionRunHook
from suite_markers import TASK_PROCESSES


def _model(task: int | None = None, spec: dict | None = None):
    """global_step and v (both +1 per train step); under a replica device setter if spec."""
    dev = replica_device_setter(cluster=spec, worker_device=f"/job:worker/task:{task}") \
        if spec else None
    with tf.device(dev):
        step = tf.train.get_or_create_global_step()
        v = tf.Variable(0.0, name="v")
        train = tf.group(tf.assign_add(v, 1.0), tf.assign_add(step, 1))
    return step, v, train


class FailOnce(SessionRunHook):
    """Raises `error` from before_run on call number `at`; counts created sessions."""

    def __init__(self, error: type, at: int) -> None:
        self.error, self.at, self.calls, self.sessions = error, at, 0, 0

    def after_create_session(self, session, coord):
        self.sessions += 1

    def before_run(self, run_context):
        self.calls += 1
        if self.calls == self.at:
            raise self.error(None, None, "injected: a ps task was restarted")


def test_initializes_finalizes_and_unfinalizes(graph):
    step, v, train = _model()
    with MonitoredTrainingSession() as sess:
        assert graph.finalized
        assert sess.run([step, v]) == [0, 0.0]
        sess.run(train)
        assert sess.run(step) == 1
        assert not sess.should_stop()
    assert not graph.finalized  # handed back as it was
    assert sess.should_stop()  # closed
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(step)


def test_checkpoint_restore_continues_global_step(tmp_path):
    ckpt = str(tmp_path)
    for expected_start, expected_end in ((0, 3), (3, 5)):
        with tf.Graph().as_default():
            step, v, train = _model()
            starts = []

            class Start(SessionRunHook):
                def after_create_session(self, session, coord):
                    starts.append(int(session.run(step)))  # noqa: B023 - this iteration's
            stop = StopAtStepHook(num_steps=expected_end - expected_start)
            with MonitoredTrainingSession(checkpoint_dir=ckpt, hooks=[stop, Start()]) as sess:
                while not sess.should_stop():
                    sess.run(train)
            assert starts == [expected_start]
        assert latest_checkpoint(ckpt).endswith(f"model.ckpt-{expected_end}")
    with tf.Graph().as_default():
        step, v, train = _model()
        with MonitoredTrainingSession(checkpoint_dir=ckpt, save_checkpoint_secs=None) as sess:
            assert sess.run([step, v]) == [5, 5.0]


@pytest.mark.parametrize("error", [tf.errors.AbortedError, tf.errors.UnavailableError])
def test_preemption_recreates_session_from_checkpoint(graph, tmp_path, error):
    step, v, train = _model()
    fail = FailOnce(error, at=5)
    with MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_steps=3,
                                  hooks=[fail]) as sess:
        for _ in range(4):
            sess.run(train)  # global step 4; checkpoints at 0 and 3
        # The 5th run fails; a new (local, so blank) session restores checkpoint 3 and
        # the run is retried in it.
        assert sess.run([step, v]) == [3, 3.0]
        sess.run(train)
        assert sess.run(step) == 4
    assert fail.sessions == 2


def test_out_of_range_ends_loop_cleanly_and_runs_end(graph):
    q = FIFOQueue(10, [tf.float32], shapes=[[]])
    fill = q.enqueue_many([[1.0, 2.0, 3.0]])
    close = q.close()
    item = q.dequeue()
    total = tf.Variable(0.0, name="total")
    add = tf.assign_add(total, item)
    final = FinalOpsHook(total)

    def init_fn(scaffold, sess):
        sess.run(fill)
        sess.run(close)
    seen = 0
    creator = ChiefSessionCreator(scaffold=Scaffold(init_fn=init_fn))
    with MonitoredSession(session_creator=creator, hooks=[final]) as sess:
        while not sess.should_stop():
            sess.run(add)
            seen += 1
    assert seen == 3
    assert final.final_ops_values == 6.0


def test_other_errors_propagate_and_skip_end(graph):
    final = FinalOpsHook(tf.constant(1.0))
    with pytest.raises(ValueError, match="boom"), MonitoredSession(hooks=[final]):
        raise ValueError("boom")
    assert final.final_ops_values is None


def test_queue_runners_started_and_joined(graph):
    q = FIFOQueue(4, [tf.float32], shapes=[[]])
    qr = QueueRunner(q, [q.enqueue([tf.constant(1.0)])])
    add_queue_runner(qr)
    item = q.dequeue()
    coords = []

    class Grab(SessionRunHook):
        def after_create_session(self, session, coord):
            coords.append(coord)
    sess = MonitoredSession(hooks=[Grab()], stop_grace_period_secs=5)
    assert [sess.run(item) for _ in range(6)] == [1.0] * 6
    sess.close()
    assert coords[0].should_stop() and coords[0].joined


def test_run_step_fn(graph):
    step, v, train = _model()
    with MonitoredSession(hooks=[StopAtStepHook(num_steps=100)]) as sess:
        def step_fn(ctx):
            ctx.run_with_hooks(train)
            if ctx.session.run(step) >= 2:
                ctx.request_stop()  # raises StopIteration, which ends the with block
            return "ran"
        with pytest.raises(ValueError, match="one `step_context` argument"):
            sess.run_step_fn(lambda: None)
        assert sess.run_step_fn(step_fn) == "ran"
        sess.run_step_fn(step_fn)
        raise AssertionError("request_stop() did not leave the with block")
    assert sess.should_stop()


def test_non_chief_waits_for_chief_and_starts_fast(inprocess_cluster):
    spec, servers = inprocess_cluster
    result: dict = {}

    def worker():
        with tf.Graph().as_default():
            step, v, train = _model(1, spec)
            t0 = time.monotonic()
            with MonitoredTrainingSession(master=servers[("worker", 1)].target,
                                          is_chief=False, max_wait_secs=20) as sess:
                result["ready_at"] = time.monotonic()
                result["waited"] = result["ready_at"] - t0
                sess.run(train)
                result["step"] = sess.run(step)
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    time.sleep(0.5)
    assert "ready_at" not in result, "the worker started before the chief initialized"
    with tf.Graph().as_default():
        step, v, train = _model(0, spec)
        with MonitoredTrainingSession(master=servers[("worker", 0)].target,
                                      is_chief=True) as sess:
            chief_ready = time.monotonic()
            t.join(10)
            assert not t.is_alive()
            assert sess.run(step) == 1  # the worker's step went to the shared variable
    assert result["waited"] >= 0.4
    # About a second after the chief (the settle that lets its first post-session work
    # come first), never TF 1.x's 30 s poll.
    assert result["ready_at"] - chief_ready < 5.0
    assert result["step"] == 1


def test_non_chief_times_out_naming_uninitialized_variables(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.Graph().as_default():
        _model(1, spec)
        t0 = time.monotonic()
        with pytest.raises(tf.errors.DeadlineExceededError) as info:
            MonitoredTrainingSession(master=servers[("worker", 1)].target, is_chief=False,
                                     max_wait_secs=0.5)
        assert time.monotonic() - t0 < 2.0
    msg = str(info.value)
    assert "not ready after waiting 0.5 secs" in msg
    assert "global_step" in msg and "v" in msg and "is_chief" in msg


def test_worker_session_creator_directly(inprocess_cluster):
    spec, servers = inprocess_cluster
    with tf.Graph().as_default():
        step, v, train = _model(0, spec)
        init = tf.global_variables_initializer()
        with tf.Session(servers[("worker", 0)].target) as s:
            s.run(init)
        with MonitoredSession(session_creator=WorkerSessionCreator(
                master=servers[("worker", 0)].target, max_wait_secs=5)) as sess:
            assert sess.run(v) == 0.0


# ---- SessionManager ------------------------------------------------------------------
def test_session_manager_prepare_session(graph, tmp_path):
    step, v, train = _model()
    ready = tf.report_uninitialized_variables()
    init = tf.global_variables_initializer()
    saver = Saver()
    sm = SessionManager(ready_op=ready)
    sess = sm.prepare_session("", init_op=init)
    sess.run(train)
    saver.save(sess, str(tmp_path / "model.ckpt"), global_step=step)
    with pytest.raises(RuntimeError, match="init_op"):
        SessionManager(ready_op=ready).prepare_session("")
    with pytest.raises(RuntimeError, match="did not make model ready"):
        SessionManager(ready_op=ready).prepare_session("", init_fn=lambda s: None)
    restored = sm.prepare_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert restored.run([step, v]) == [1, 1.0]
    sess2, ok = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path))
    assert ok and sess2.run(step) == 1
    _, ok = sm.recover_session("", saver=saver, checkpoint_dir=str(tmp_path / "empty"))
    assert not ok
    with pytest.raises(ValueError, match="Can not provide both checkpoint_dir"):
        sm.prepare_session("", init_op=init, saver=saver, checkpoint_dir="a",
                           checkpoint_filename_with_path="b")
    with pytest.raises(ValueError, match="local_init_op"):
        SessionManager(ready_for_local_init_op=ready)


def test_session_manager_wait_for_session(inprocess_cluster):
    spec, servers = inprocess_cluster
    target = servers[("worker", 1)].target
    with tf.Graph().as_default() as g:
        step, v, train = _model(1, spec)
        sm = SessionManager(ready_op=tf.report_uninitialized_variables(), graph=g)
        init = tf.global_variables_initializer()
        with pytest.raises(tf.errors.DeadlineExceededError, match="v, global_step|global_step"):
            sm.wait_for_session(target, max_wait_secs=0.3)
        timer = threading.Timer(0.3, lambda: tf.Session(target, graph=g).run(init))
        timer.start()
        t0 = time.monotonic()
        sess = sm.wait_for_session(target, max_wait_secs=10)
        assert 0.25 < time.monotonic() - t0 < 5.0  # 0.3 s + a 1 s settle; TF 1.x: 30 s
        assert sess.run(v) == 0.0
        timer.join()


def test_chief_writes_summaries_and_step_rate(graph, tmp_path):
    import glob
    import os

    from tensorweave.summary import scalar, summary_iterator
    step, v, train = _model()
    scalar("value", v)
    with MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=2,
                                  log_step_count_steps=2,
                                  hooks=[StopAtStepHook(num_steps=6)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    steps_by_tag: dict = {}
    for path in glob.glob(os.path.join(str(tmp_path), "events.out.tfevents.*")):
        for event in summary_iterator(path):
            for value in event.summary.value:
                steps_by_tag.setdefault(value.tag, []).append(event.step)
    assert steps_by_tag["value"][:3] == [1, 3, 5]
    assert "global_step/sec" in steps_by_tag


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_recovers_when_a_ps_process_restarts(tmp_path):
    """A real ps process is killed and restarted mid-training: the chief's next step
    fails with UnavailableError/AbortedError, the session is re-created from the last
    checkpoint and training goes on."""
    from tensorweave.testing.cluster import LocalCluster
    spec = cluster_dict(1, 1)
    with LocalCluster(spec=spec, in_process=(("worker", 0),)) as procs:
        server = Server(spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                step, v, train = _model(0, spec)
                counter = FailOnce(tf.errors.CancelledError, at=-1)  # only counts sessions
                with MonitoredTrainingSession(master=server.target, is_chief=True,
                                              checkpoint_dir=str(tmp_path),
                                              save_checkpoint_steps=2,
                                              hooks=[counter]) as sess:
                    for _ in range(3):
                        sess.run(train)  # checkpoints at 0 and 2
                    procs.kill("ps", 0)
                    procs.start_task("ps", 0)
                    procs.wait_task("ps", 0)
                    sess.run(train)  # fails on the new ps, recovers at 2, runs
                    assert sess.run([step, v]) == [3, 3.0]
                assert counter.sessions == 2
        finally:
            server.stop()

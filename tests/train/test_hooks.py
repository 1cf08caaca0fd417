"""Session-run hooks on local (in-process) monitored sessions."""
from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    StepCounterHook,
    StopAtStepHook,
)
from tensorweave.train.hook_utils import SecondOrStepTimer
from tensorweave.train.monitored_session import MonitoredSession, SingularMonitoredSession
from tensorweave.train.checkpoint_management import latest_checkpoint
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.session_run_hook import SessionRunArgs, SessionRunHook


def _counter_model():
    step = tf.train.get_or_create_global_step()
    v = tf.Variable(0.0, name="v")
    train = tf.group(tf.assign_add(v, 1.0), tf.assign_add(step, 1))
    return step, v, train


def _run_until_stop(sess, op, limit=100):
    n = 0
    while not sess.should_stop() and n < limit:
        sess.run(op)
        n += 1
    return n


class RecordingHook(SessionRunHook):
    """Records its calls in a shared list, tagged with its name."""

    def __init__(self, name, calls, stop_after=None, fetches=None):
        self.name, self.calls, self.stop_after, self.fetches = name, calls, stop_after, fetches
        self.results = []

    def begin(self):
        self.calls.append((self.name, "begin"))

    def after_create_session(self, session, coord):
        self.calls.append((self.name, "after_create_session"))

    def before_run(self, run_context):
        self.calls.append((self.name, "before_run"))
        return SessionRunArgs(self.fetches) if self.fetches is not None else None

    def after_run(self, run_context, run_values):
        self.calls.append((self.name, "after_run"))
        self.results.append(run_values.results)
        if self.stop_after is not None and len(self.results) >= self.stop_after:
            run_context.request_stop()

    def end(self, session):
        self.calls.append((self.name, "end"))


def test_timer_steps_and_secs():
    t = SecondOrStepTimer(every_steps=3)
    assert t.should_trigger_for_step(1)
    assert t.update_last_triggered_step(1) == (None, None)
    assert not t.should_trigger_for_step(1)
    assert not t.should_trigger_for_step(3)
    assert t.should_trigger_for_step(4)
    secs, steps = t.update_last_triggered_step(4)
    assert steps == 3 and secs >= 0
    ts = SecondOrStepTimer(every_secs=0.05)
    ts.update_last_triggered_step(0)
    assert not ts.should_trigger_for_step(1)
    time.sleep(0.06)
    assert ts.should_trigger_for_step(1)
    with pytest.raises(ValueError, match="both every_secs and every_steps"):
        SecondOrStepTimer(every_secs=1, every_steps=1)
    with pytest.raises(ValueError, match="neither"):
        SecondOrStepTimer()


def test_stop_at_step_num_steps(graph):
    step, v, train = _counter_model()
    with MonitoredSession(hooks=[StopAtStepHook(num_steps=4)]) as sess:
        assert _run_until_stop(sess, train) == 4
        assert sess.should_stop()


def test_stop_at_step_last_step_with_restored_step(graph):
    step, v, train = _counter_model()
    # Start the global step at 7: last_step=10 leaves 3 steps; num_steps counts from 7.
    scaffold = Scaffold(init_fn=lambda scaffold, sess: step.load(7, sess))
    with SingularMonitoredSession(hooks=[StopAtStepHook(last_step=10)],
                                  scaffold=scaffold) as sess:
        assert _run_until_stop(sess, train) == 3
        assert sess.raw_session().run(step) == 10


def test_stop_at_step_arguments(graph):
    with pytest.raises(ValueError, match="One of num_steps or last_step must be specified"):
        StopAtStepHook()
    with pytest.raises(ValueError, match="Only one of num_steps or last_step can be"):
        StopAtStepHook(num_steps=1, last_step=2)
    tf.Variable(1.0)
    with pytest.raises(RuntimeError, match="get_or_create_global_step"):
        MonitoredSession(hooks=[StopAtStepHook(num_steps=1)])


def test_logging_tensor_hook_every_n_iter_and_at_end(graph, caplog):
    step, v, train = _counter_model()
    hook = LoggingTensorHook({"value": v}, every_n_iter=2, at_end=True)
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        with MonitoredSession(hooks=[hook, StopAtStepHook(num_steps=5)]) as sess:
            _run_until_stop(sess, train)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("value = ")]
    # Iterations 0, 2, 4 log the value read in that step; then the end logs 5.0.
    assert len(lines) == 4
    assert lines[-1].startswith("value = 5.0")


def test_logging_tensor_hook_names_and_formatter(graph, caplog):
    step, v, train = _counter_model()
    seen = []
    hook = LoggingTensorHook(["v"], every_n_iter=1, formatter=lambda d: seen.append(d) or "x")
    with MonitoredSession(hooks=[hook, StopAtStepHook(num_steps=2)]) as sess:
        _run_until_stop(sess, train)
    assert len(seen) == 2 and set(seen[0]) == {"v"}
    with pytest.raises(ValueError, match="exactly one"):
        LoggingTensorHook({"v": v})
    with pytest.raises(ValueError, match="positive"):
        LoggingTensorHook({"v": v}, every_n_iter=0)


def test_nan_tensor_hook_raises_and_skips_end(graph):
    x = tf.placeholder(tf.float32, [])
    loss = x * 2.0
    ends = []
    hook = RecordingHook("rec", ends)
    with pytest.raises(NanLossDuringTrainingError, match="NaN loss"):
        with MonitoredSession(hooks=[NanTensorHook(loss), hook]) as sess:
            sess.run(loss, feed_dict={x: 1.0})
            sess.run(loss, feed_dict={x: float("nan")})
    # end() runs only after a normal end of training.
    assert ("rec", "end") not in ends


def test_nan_tensor_hook_requests_stop(graph):
    x = tf.placeholder(tf.float32, [])
    with MonitoredSession(hooks=[NanTensorHook(x, fail_on_nan_loss=False)]) as sess:
        sess.run(x, feed_dict={x: 1.0})
        assert not sess.should_stop()
        sess.run(x, feed_dict={x: np.nan})
        assert sess.should_stop()


def test_final_ops_hook_values(graph):
    step, v, train = _counter_model()
    hook = FinalOpsHook({"v": v, "doubled": v * 2.0})
    with MonitoredSession(hooks=[hook, StopAtStepHook(num_steps=3)]) as sess:
        _run_until_stop(sess, train)
        assert hook.final_ops_values is None
    assert hook.final_ops_values == {"v": 3.0, "doubled": 6.0}


def test_final_ops_hook_with_feed(graph):
    x = tf.placeholder(tf.float32, [])
    hook = FinalOpsHook(x + 1.0, final_ops_feed_dict={x: 41.0})
    with MonitoredSession(hooks=[hook]):
        pass
    assert hook.final_ops_values == 42.0


def test_global_step_waiter_hook(graph):
    step, v, train = _counter_model()
    with SingularMonitoredSession() as driver:
        raw = driver.raw_session()
        hook = GlobalStepWaiterHook(wait_until_step=3)
        hook.begin()

        class Ctx:
            session = raw
        done = threading.Event()

        def wait():
            hook.before_run(Ctx())
            done.set()
        t = threading.Thread(target=wait, daemon=True)
        t.start()
        assert not done.wait(0.2)
        for _ in range(3):
            raw.run(train)
        assert done.wait(2.0), "the waiter did not notice the global step reaching 3"
        t.join(1)
        assert hook.before_run(Ctx()) is None  # started: no more waiting


def test_hook_order_fetch_merge_and_request_stop(graph):
    step, v, train = _counter_model()
    calls = []
    first = RecordingHook("a", calls, fetches={"step": step})
    second = RecordingHook("b", calls, stop_after=2, fetches=[v])
    with MonitoredSession(hooks=[first, second]) as sess:
        assert sess.run(v) == 0.0
        assert not sess.should_stop()
        out = sess.run({"t": train, "v": v})
        assert out["t"] is None
        assert sess.should_stop()
        with pytest.raises(RuntimeError, match="should_stop"):
            sess.run(train)
    assert calls[:4] == [("a", "begin"), ("b", "begin"), ("a", "after_create_session"),
                         ("b", "after_create_session")]
    assert calls[4:8] == [("a", "before_run"), ("b", "before_run"), ("a", "after_run"),
                          ("b", "after_run")]
    assert calls[-2:] == [("a", "end"), ("b", "end")]
    assert first.results[0] == {"step": 0}
    assert second.results[0] == [0.0]


def test_hook_feeds_merge_and_conflict(graph):
    x = tf.placeholder(tf.float32, [])
    y = tf.placeholder(tf.float32, [])
    total = x + y

    class FeedHook(SessionRunHook):
        def before_run(self, run_context):
            return SessionRunArgs(None, feed_dict={y: 10.0})
    with MonitoredSession(hooks=[FeedHook()]) as sess:
        assert sess.run(total, feed_dict={x: 1.0}) == 11.0
        with pytest.raises(RuntimeError, match="Same tensor is fed by a SessionRunHook and user"):
            sess.run(total, feed_dict={x: 1.0, y: 2.0})


def test_checkpoint_saver_hook_steps_and_listener(graph, tmp_path):
    step, v, train = _counter_model()
    saved = []

    class Listener(CheckpointSaverListener):
        def after_save(self, session, global_step_value):
            saved.append(global_step_value)
    hook = CheckpointSaverHook(str(tmp_path), save_steps=2, listeners=[Listener()])
    with MonitoredSession(hooks=[hook, StopAtStepHook(num_steps=5)]) as sess:
        _run_until_stop(sess, train)
    assert saved == [0, 2, 4, 5]
    assert latest_checkpoint(str(tmp_path)).endswith("model.ckpt-5")
    assert (tmp_path / "graph.pbtxt").exists()


def test_step_counter_hook_logs_rate(graph, caplog):
    step, v, train = _counter_model()
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        with MonitoredSession(hooks=[StepCounterHook(every_n_steps=2),
                                     StopAtStepHook(num_steps=6)]) as sess:
            _run_until_stop(sess, train)
    assert any(r.getMessage().startswith("global_step/sec: ") for r in caplog.records)

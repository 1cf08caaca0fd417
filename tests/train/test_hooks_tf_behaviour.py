"""The basic session-run hooks against the behaviour TF 1.x specifies for them
(tensorflow/python/training/basic_session_run_hooks_test.py): timers, StopAtStepHook,
LoggingTensorHook, GlobalStepWaiterHook, FinalOpsHook, FeedFnHook, NanTensorHook and
ProfilerHook. Saving hooks are in test_saving_hooks.py. Our own tests.

Time is never measured: a fake clock replaces `time` inside the hook modules and
`base.waits` (whose back-off the waiting hooks use).
"""
from __future__ import annotations

import glob
import json
import logging
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.base import waits
from tensorweave.summary.writer import FileWriterCache, summary_iterator
from tensorweave.train import hook_utils
from tensorweave.train.basic_session_run_hooks import (
    FeedFnHook,
    FinalOpsHook,
    GlobalStepWaiterHook,
    LoggingTensorHook,
    NanLossDuringTrainingError,
    NanTensorHook,
    ProfilerHook,
    StopAtStepHook,
)
from tensorweave.train.hook_utils import SecondOrStepTimer
from tensorweave.train.monitored_session import SingularMonitoredSession
from tensorweave.train.session_run_hook import SessionRunContext
from tensorweave.train.wrapped_sessions import HookedSession

pytestmark = pytest.mark.usefixtures("graph")

START = 1484695987.209386  # a realistic epoch time, as large times expose float rounding


class FakeClock:
    """Stands in for the `time` module inside hook modules; `sleep` can be scripted."""

    def __init__(self, now: float = START) -> None:
        self.now = now
        self.on_sleep = None
        self.sleeps = 0

    def time(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        self.sleeps += 1
        if self.on_sleep is not None:
            self.on_sleep(self.sleeps)


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(hook_utils, "time", c)
    monkeypatch.setattr(waits, "time", c)  # the waits' clock (GlobalStepWaiterHook's polls)
    return c


def _hooked(sess, *hooks):
    for h in hooks:
        h.begin()
    return HookedSession(sess, list(hooks))


# ---- SecondOrStepTimer --------------------------------------------------------------
def test_timer_rejects_both_or_neither_period():
    with pytest.raises(ValueError):
        SecondOrStepTimer(every_secs=2.0, every_steps=10)
    with pytest.raises(ValueError):
        SecondOrStepTimer()


def test_timer_every_secs_triggers_once_the_period_has_passed(clock):
    timer = SecondOrStepTimer(every_secs=1.0)
    assert timer.should_trigger_for_step(1)
    timer.update_last_triggered_step(1)
    assert not timer.should_trigger_for_step(1) and not timer.should_trigger_for_step(2)
    clock.now += 1.0
    assert not timer.should_trigger_for_step(1)  # the step already triggered
    assert timer.should_trigger_for_step(2)


def test_timer_every_steps_and_elapsed_counts(clock):
    timer = SecondOrStepTimer(every_steps=3)
    assert timer.should_trigger_for_step(1)
    assert timer.update_last_triggered_step(1) == (None, None)
    assert [timer.should_trigger_for_step(s) for s in (1, 2, 3, 4)] == [False, False, False,
                                                                       True]
    clock.now += 0.5
    assert timer.update_last_triggered_step(5) == (0.5, 4)
    clock.now += 0.25
    assert timer.update_last_triggered_step(7) == (0.25, 2)
    assert timer.last_triggered_step() == 7


# ---- StopAtStepHook -----------------------------------------------------------------
def _stop_hook_session(hook, start):
    step = tf.train.get_or_create_global_step()
    noop = tf.no_op()
    value = tf.placeholder(tf.int64)
    set_step = tf.assign(step, value)
    sess = tf.Session()
    mon = _hooked(sess, hook)
    sess.run(set_step, {value: start})
    hook.after_create_session(sess, None)
    return sess, mon, lambda v: sess.run(set_step, {value: v}), noop


def test_stop_at_last_step_and_stop_is_sticky():
    sess, mon, set_step, noop = _stop_hook_session(StopAtStepHook(last_step=10), 5)
    for v, stops in ((None, False), (9, False), (10, True)):
        if v is not None:
            set_step(v)
        mon.run(noop)
        assert mon.should_stop() == stops
    set_step(11)
    mon._should_stop = False  # past the limit it asks again at once
    mon.run(noop)
    assert mon.should_stop()
    sess.close()


def test_stop_after_num_steps_counts_from_the_step_at_session_creation():
    sess, mon, set_step, noop = _stop_hook_session(StopAtStepHook(num_steps=10), 5)
    for v, stops in ((None, False), (13, False), (14, False), (15, True)):
        if v is not None:
            set_step(v)
        mon.run(noop)
        assert mon.should_stop() == stops
    sess.close()


def test_stop_when_the_step_jumps_past_the_limit():
    sess, mon, set_step, noop = _stop_hook_session(StopAtStepHook(num_steps=10), 5)
    mon.run(noop)
    set_step(15)
    mon.run(noop)
    assert mon.should_stop()
    sess.close()


def test_stop_at_step_argument_errors_and_missing_global_step():
    with pytest.raises(ValueError, match="Only one of num_steps or last_step"):
        StopAtStepHook(num_steps=10, last_step=20)
    with pytest.raises(ValueError):
        StopAtStepHook()
    with pytest.raises(RuntimeError, match="get_or_create_global_step"):
        StopAtStepHook(last_step=3).begin()


# ---- LoggingTensorHook --------------------------------------------------------------
@pytest.fixture
def logged(caplog):
    caplog.set_level(logging.INFO, logger="tensorweave")

    def text():
        out = " | ".join(r.getMessage() for r in caplog.records)
        caplog.clear()
        return out
    return text


def test_logging_hook_argument_errors():
    for bad in (0, -10):
        with pytest.raises(ValueError, match="every_n_iter"):
            LoggingTensorHook(tensors=["t"], every_n_iter=bad)
    with pytest.raises(ValueError, match="exactly one of"):
        LoggingTensorHook(tensors=["t"], every_n_iter=5, every_n_secs=5)
    with pytest.raises(ValueError, match="exactly one of"):
        LoggingTensorHook(tensors=["t"])


def test_logging_hook_at_end_only(logged):
    t = tf.constant(42.0, name="foo")
    hook = LoggingTensorHook(tensors=[t.name], at_end=True)
    with tf.Session() as sess:
        mon = _hooked(sess, hook)
        logged()
        for _ in range(3):
            mon.run(tf.constant(3))
            assert "foo" not in logged()
        hook.end(sess)
        assert "foo:0 = 42.0" in logged()


@pytest.mark.parametrize("at_end", [False, True])
def test_logging_hook_every_n_iter_and_reset_by_begin(logged, at_end):
    t = tf.constant(42.0, name="foo")
    train = tf.constant(3)
    hook = LoggingTensorHook(tensors=[t.name], every_n_iter=10, at_end=at_end)
    with tf.Session() as sess:
        for _ in range(2):  # begin() again restarts the count
            mon = _hooked(sess, hook)
            mon.run(train)
            assert "foo" in logged()
            for _ in range(3):
                for _ in range(9):
                    mon.run(train)
                    assert "foo" not in logged()
                mon.run(train)
                assert "foo" in logged()
            mon.run(train)
            assert "foo" not in logged()
            hook.end(sess)
            assert ("foo" in logged()) == at_end


def test_logging_hook_first_log_has_no_elapsed_time(logged):
    hook = LoggingTensorHook(tensors={"foo": tf.constant(42.0)}, every_n_iter=1)
    with tf.Session() as sess:
        mon = _hooked(sess, hook)
        mon.run(tf.constant(3))
        first = logged()
        assert "foo = 42.0" in first and "sec" not in first
        mon.run(tf.constant(3))
        assert "sec" in logged()


@pytest.mark.parametrize("at_end", [False, True])
def test_logging_hook_every_n_secs(clock, logged, at_end):
    t = tf.constant(42.0, name="foo")
    train = tf.constant(3)
    hook = LoggingTensorHook(tensors=[t.name], every_n_secs=1.0, at_end=at_end)
    with tf.Session() as sess:
        for _ in range(2):
            mon = _hooked(sess, hook)
            mon.run(train)
            assert "foo" in logged()
            mon.run(train)
            assert "foo" not in logged()
            clock.now += 1.0
            mon.run(train)
            assert "foo" in logged()
            hook.end(sess)
            assert ("foo" in logged()) == at_end


def test_logging_hook_formatter_gets_values_by_tag(logged):
    t = tf.constant(42.0, name="foo")
    hook = LoggingTensorHook(tensors=[t.name], every_n_iter=10,
                             formatter=lambda values: f"qqq={values[t.name]}")
    with tf.Session() as sess:
        _hooked(sess, hook).run(tf.constant(3))
    assert logged() == "qqq=42.0"


# ---- GlobalStepWaiterHook -----------------------------------------------------------
def test_global_step_waiter_does_not_wait_for_step_zero(clock):
    tf.train.get_or_create_global_step()
    hook = GlobalStepWaiterHook(wait_until_step=0)
    hook.begin()
    with tf.Session() as sess:
        hook.before_run(SessionRunContext(original_args=None, session=sess))
    assert clock.sleeps == 0


def test_global_step_waiter_polls_until_the_step_is_reached(clock):
    step = tf.train.get_or_create_global_step()
    value = tf.placeholder(tf.int64)
    set_step = tf.assign(step, value)
    hook = GlobalStepWaiterHook(wait_until_step=1000)
    hook.begin()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())

        def advance(n):
            assert n <= 2, "the hook should have returned after the second wait"
            sess.run(set_step, {value: 500 if n == 1 else 1100})
        clock.on_sleep = advance
        hook.before_run(SessionRunContext(original_args=None, session=sess))
    assert clock.sleeps == 2


# ---- FinalOpsHook / FeedFnHook / NanTensorHook --------------------------------------
def test_final_ops_hook_scalar_tensor_and_feed():
    scalar, vector = tf.constant(4), tf.constant([1, 6, 3, 5, 2, 4])
    fed = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        for ops, feed, want in ((scalar, None, 4), (vector, None, [1, 6, 3, 5, 2, 4]),
                                (fed, {fed: [4, -3]}, [4, -3])):
            hook = FinalOpsHook(ops, feed)
            hook.begin()
            hook.end(sess)
            assert np.asarray(hook.final_ops_values).tolist() == want


def test_final_ops_hook_out_of_range_warns_and_raises(caplog):
    it = tf.data.Dataset.range(1).make_one_shot_iterator()
    nxt = it.get_next()
    hook = FinalOpsHook(nxt)
    hook.begin()
    with tf.Session() as sess:
        sess.run(nxt)
        with pytest.raises(tf.errors.OutOfRangeError):
            hook.end(sess)
    assert any("input" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


def test_feed_fn_hook_feeds_each_run():
    x = tf.placeholder(tf.float32)
    y = x + 1
    values = iter([1.0, 5.0])
    with tf.Session() as sess:
        mon = _hooked(sess, FeedFnHook(lambda: {x: next(values)}))
        assert mon.run(y) == 2.0 and mon.run(y) == 6.0
    with pytest.raises(TypeError, match="callable"):
        FeedFnHook({x: 1.0})


@pytest.mark.parametrize("fail", [True, False])
def test_nan_tensor_hook_fail_on_nan_loss(fail):
    loss = tf.placeholder(tf.float32)
    with tf.Session() as sess:
        mon = _hooked(sess, NanTensorHook(loss, fail_on_nan_loss=fail))
        mon.run(loss, {loss: 1.0})
        assert not mon.should_stop()
        if fail:
            with pytest.raises(NanLossDuringTrainingError):
                mon.run(loss, {loss: np.nan})
        else:
            mon.run(loss, {loss: np.nan})
            assert mon.should_stop()


# ---- ProfilerHook -------------------------------------------------------------------
@pytest.fixture
def profiled(tmp_path):
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    yield str(tmp_path), train
    FileWriterCache.clear()


def _timelines(out):
    return sorted(glob.glob(os.path.join(out, "timeline-*.json")))


def test_profiler_hook_argument_errors():
    with pytest.raises(ValueError):
        ProfilerHook(save_secs=10, save_steps=20)
    with pytest.raises(ValueError):
        ProfilerHook(save_secs=None, save_steps=None)


@pytest.mark.parametrize("kw", [{"save_secs": 2}, {"save_steps": 1}])
def test_profiler_hook_never_traces_the_first_step(profiled, kw):
    out, train = profiled
    with SingularMonitoredSession(hooks=[ProfilerHook(output_dir=out, **kw)]) as sess:
        sess.run(train)
        assert _timelines(out) == []


def test_profiler_hook_save_secs_traces_periodically(profiled, clock):
    out, train = profiled
    with SingularMonitoredSession(hooks=[ProfilerHook(save_secs=2, output_dir=out)]) as sess:
        for offset, files in ((0, 0), (2.5, 1), (2.6, 1), (4.4, 1), (4.5, 2)):
            clock.now = START + offset
            sess.run(train)
            assert len(_timelines(out)) == files


def test_profiler_hook_save_steps_writes_valid_timelines(profiled):
    out, train = profiled
    hook = ProfilerHook(save_steps=2, output_dir=out, show_memory=True)
    with SingularMonitoredSession(hooks=[hook]) as sess:
        for files in (0, 1, 1, 2, 2):
            sess.run(train)
            assert len(_timelines(out)) == files
    assert [os.path.basename(p) for p in _timelines(out)] == ["timeline-2.json",
                                                              "timeline-4.json"]
    with open(_timelines(out)[0]) as f:
        events = json.load(f)["traceEvents"]
    assert all("ph" in e for e in events)
    assert "AssignAdd" in {e["name"] for e in events if e["ph"] == "X"}


def test_profiler_hook_adds_run_metadata_for_tensorboard(profiled):
    out, train = profiled
    with SingularMonitoredSession(hooks=[ProfilerHook(save_steps=1, output_dir=out)]) as sess:
        sess.run(train)
        sess.run(train)
    FileWriterCache.get(out).flush()
    events = [e for path in glob.glob(os.path.join(out, "events.out.tfevents.*"))
              for e in summary_iterator(path) if e.HasField("tagged_run_metadata")]
    assert [e.tagged_run_metadata.tag for e in events] == ["step_2"]
    md = tf.RunMetadata.FromString(events[0].tagged_run_metadata.run_metadata)
    assert any(n.timeline_label.startswith("AssignAdd = AssignAdd(")
               for d in md.step_stats.dev_stats for n in d.node_stats)

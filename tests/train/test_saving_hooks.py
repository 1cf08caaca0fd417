"""CheckpointSaverHook, StepCounterHook and SummarySaverHook against the behaviour TF 1.x
specifies (tensorflow/python/training/basic_session_run_hooks_test.py). Our own tests.

Time is never measured: a fake clock replaces `time` inside hook_utils (the timers).
"""
from __future__ import annotations

import os

import pytest

import tensorweave as tf
from tensorweave.train import hook_utils
from tensorweave.train.basic_session_run_hooks import (
    CheckpointSaverHook,
    CheckpointSaverListener,
    StepCounterHook,
    SummarySaverHook,
)
from tensorweave.train.monitored_session import SingularMonitoredSession
from tensorweave.train.checkpoint_management import load_variable
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.wrapped_sessions import HookedSession

START = 1484695987.209386


class FakeClock:
    def __init__(self) -> None:
        self.now = START

    def time(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(hook_utils, "time", c)
    return c


class RecordingWriter:
    """A summary writer that keeps what hooks add, by global step."""

    def __init__(self) -> None:
        self.summaries: dict[int, list] = {}
        self.session_logs: list = []

    def add_summary(self, summary, global_step=None):
        if isinstance(summary, bytes):
            summary = tf.Summary.FromString(summary)
        self.summaries.setdefault(global_step, []).append(summary)

    def add_session_log(self, entry, global_step=None):
        self.session_logs.append((entry.status, global_step))

    def flush(self):
        pass

    def values(self):
        return {step: {v.tag: v.simple_value for s in sums for v in s.value}
                for step, sums in self.summaries.items()}


class CountingListener(CheckpointSaverListener):
    def __init__(self) -> None:
        self.counts = {"begin": 0, "before_save": 0, "after_save": 0, "end": 0}
        self.ask_for_stop = False

    def begin(self):
        self.counts["begin"] += 1

    def before_save(self, session, global_step_value):
        self.counts["before_save"] += 1

    def after_save(self, session, global_step_value):
        self.counts["after_save"] += 1
        return self.ask_for_stop

    def end(self, session, global_step_value):
        self.counts["end"] += 1


@pytest.fixture
def model(tmp_path):
    with tf.Graph().as_default() as g:
        step = tf.train.get_or_create_global_step()
        yield g, str(tmp_path), step, tf.assign_add(step, 1)


def _saved_step(model_dir):
    return int(load_variable(model_dir, "global_step"))


def _hooked_with_scaffold(hook, scaffold=None):
    """A raw session around `hook` (begin called, scaffold finalized and initialized)."""
    scaffold = scaffold or Scaffold()
    hook.begin()
    scaffold.finalize()
    sess = tf.Session()
    sess.run(scaffold.init_op)
    return sess, HookedSession(sess, [hook])


# ---- CheckpointSaverHook ------------------------------------------------------------
def test_checkpoint_hook_argument_errors(model):
    _, d, _, _ = model
    scaffold = Scaffold()
    with pytest.raises(ValueError):
        CheckpointSaverHook(d, saver=tf.train.Saver(), scaffold=scaffold, save_steps=1)
    with pytest.raises(ValueError):
        CheckpointSaverHook(d, save_secs=10, save_steps=20)
    with pytest.raises(ValueError):
        CheckpointSaverHook(d)


def test_checkpoint_hook_without_saver_or_scaffold_uses_the_default_saver(model):
    _, d, _, train = model
    hook = CheckpointSaverHook(d, save_steps=1)
    hook.begin()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        HookedSession(sess, [hook]).run(train)
    assert _saved_step(d) == 1


@pytest.mark.parametrize("kw", [{"save_secs": 2}, {"save_steps": 2}])
def test_checkpoint_hook_saves_in_the_first_step(model, kw):
    _, d, _, train = model
    sess, mon = _hooked_with_scaffold(CheckpointSaverHook(d, **kw))
    mon.run(train)
    assert _saved_step(d) == 1
    sess.close()


def test_checkpoint_hook_save_steps_periodic_and_at_end(model):
    _, d, _, train = model
    hook = CheckpointSaverHook(d, save_steps=2)
    sess, mon = _hooked_with_scaffold(hook)
    for want in (1, 1, 3, 3, 5, 5):
        mon.run(train)
        assert _saved_step(d) == want
    hook.end(sess)  # step 6 was not saved yet: end saves it
    assert _saved_step(d) == 6
    sess.close()


def test_checkpoint_hook_save_secs_periodic(model, clock):
    _, d, _, train = model
    sess, mon = _hooked_with_scaffold(CheckpointSaverHook(d, save_secs=2))
    for offset, want in ((0, 1), (0.5, 1), (2.5, 3), (2.6, 3), (2.7, 3), (10, 6)):
        clock.now = START + offset
        mon.run(train)
        assert _saved_step(d) == want
    sess.close()


def test_checkpoint_hook_listener_calls_with_save_secs(model, clock):
    _, d, _, train = model
    listener = CountingListener()
    hook = CheckpointSaverHook(d, save_secs=2, listeners=[listener])
    sess, mon = _hooked_with_scaffold(hook)
    for offset in (0.5, 0.5, 3.0, 3.5, 4.0, 6.5, 7.0):  # saves at 0.5, 3.0 and 6.5
        clock.now = START + offset
        mon.run(train)
    clock.now = START + 7.5
    hook.end(sess)  # and at the end (step 7 was not saved)
    assert listener.counts == {"begin": 1, "before_save": 4, "after_save": 4, "end": 1}
    sess.close()


@pytest.mark.parametrize("use_scaffold", [True, False])
def test_checkpoint_hook_listeners_in_a_monitored_session(model, use_scaffold):
    _, d, step, train = model
    first, second = CountingListener(), CountingListener()
    scaffold = Scaffold() if use_scaffold else None
    hook = CheckpointSaverHook(d, save_steps=1, scaffold=scaffold, listeners=[first, second])
    with SingularMonitoredSession(hooks=[hook], scaffold=scaffold, checkpoint_dir=d) as sess:
        sess.run(train)
        sess.run(train)
        assert sess.raw_session().run(step) == 2
    # Saves: at session creation (step 0), after steps 1 and 2; end finds step 2 saved.
    want = {"begin": 1, "before_save": 3, "after_save": 3, "end": 1}
    assert first.counts == want and second.counts == want
    with tf.Graph().as_default():
        restored = tf.train.get_or_create_global_step()
        with SingularMonitoredSession(checkpoint_dir=d) as sess:
            assert sess.run(restored) == 2


def test_checkpoint_listener_can_stop_training(model):
    _, d, _, train = model
    listener = CountingListener()
    hook = CheckpointSaverHook(d, save_steps=1, listeners=[listener])
    with SingularMonitoredSession(hooks=[hook], checkpoint_dir=d) as sess:
        sess.run(train)
        sess.run(train)
        assert not sess.should_stop()
        listener.ask_for_stop = True
        sess.run(train)
        assert sess.should_stop()


def test_checkpoint_hook_saves_before_the_first_step_and_writes_the_graph(model):
    _, d, _, train = model
    hook = CheckpointSaverHook(d, save_steps=2)
    sess, mon = _hooked_with_scaffold(hook)
    hook.after_create_session(sess, None)
    assert _saved_step(d) == 0
    assert os.path.exists(os.path.join(d, "graph.pbtxt"))
    mon.run(train)
    assert _saved_step(d) == 0
    mon.run(train)
    assert _saved_step(d) == 2
    sess.close()


def test_checkpoint_hook_with_several_steps_per_run(tmp_path):
    d = str(tmp_path)
    with tf.Graph().as_default():
        step = tf.train.get_or_create_global_step()
        train = tf.assign_add(step, 5)
        hook = CheckpointSaverHook(d, save_steps=10)
        hook._set_steps_per_run(5)
        sess, mon = _hooked_with_scaffold(hook)
        for want in (5, 5, 15, 15, 25):
            mon.run(train)
            assert _saved_step(d) == want
        mon.run(train)
        hook.end(sess)
        assert _saved_step(d) == 30
        sess.close()


# ---- StepCounterHook ----------------------------------------------------------------
def _counter(every_n_steps=None, every_n_secs=None, increment=1, steps_per_run=None):
    tf.train.get_or_create_global_step()
    train = tf.assign_add(tf.train.get_global_step(), increment)
    writer = RecordingWriter()
    hook = StepCounterHook(every_n_steps=every_n_steps, every_n_secs=every_n_secs,
                           summary_writer=writer)
    if steps_per_run:
        hook._set_steps_per_run(steps_per_run)
    hook.begin()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    return sess, HookedSession(sess, [hook]), hook, writer, train


def test_step_counter_every_n_steps(model, clock, caplog):
    sess, mon, hook, writer, train = _counter(every_n_steps=10)
    for _ in range(30):
        clock.now += 0.01
        mon.run(train)
    hook.end(sess)
    assert sorted(writer.summaries) == [11, 21]
    for step in (11, 21):
        (value,) = writer.summaries[step][0].value
        assert value.tag == "global_step/sec" and value.simple_value > 0
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    sess.close()


def test_step_counter_every_n_secs(model, clock):
    sess, mon, hook, writer, train = _counter(every_n_secs=0.1)
    mon.run(train)
    for _ in range(2):
        clock.now += 0.2
        mon.run(train)
    hook.end(sess)
    assert sorted(writer.summaries) == [2, 3]
    assert all(s[0].value[0].simple_value > 0 for s in writer.summaries.values())
    sess.close()


def test_step_counter_tag_follows_the_global_step_name():
    with tf.Graph().as_default():
        with tf.variable_scope("bar"):
            step = tf.get_variable("foo", initializer=tf.constant(0, tf.int64),
                                   trainable=False, collections=[
                                       tf.GraphKeys.GLOBAL_STEP, tf.GraphKeys.GLOBAL_VARIABLES])
        writer = RecordingWriter()
        hook = StepCounterHook(every_n_steps=1, summary_writer=writer)
        hook.begin()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            mon = HookedSession(sess, [hook])
            mon.run(tf.assign_add(step, 1))
            mon.run(tf.assign_add(step, 1))
        assert list(writer.summaries) == [2]
        assert writer.summaries[2][0].value[0].tag == "bar/foo/sec"


def test_step_counter_warns_when_the_global_step_does_not_move(model, monkeypatch):
    # As TF: through tf.logging.log_first_n (at most 5 per process, so the test records
    # the calls instead of depending on what earlier tests logged).
    calls = []
    sess, mon, _, _, train = _counter(every_n_steps=1, increment=0)
    mon.run(train)
    monkeypatch.setattr(tf.logging, "log_first_n", lambda *a: calls.append(a))
    for _ in range(30):
        mon.run(train)
    assert len(calls) == 30
    level, msg, n, *args = calls[-1]
    assert (level, n) == (tf.logging.WARN, 5)
    assert "global step has not been increased" in msg % tuple(args)
    sess.close()


@pytest.mark.parametrize("every, per_run, want", [(10, 5, [15, 25]), (5, 5, [10, 15, 20, 25]),
                                                  (5, 10, [20, 30, 40, 50])])
def test_step_counter_with_several_steps_per_run(model, clock, every, per_run, want):
    sess, mon, hook, writer, train = _counter(every_n_steps=every, increment=per_run,
                                              steps_per_run=per_run)
    for _ in range(5):
        clock.now += 0.01
        mon.run(train)
    hook.end(sess)
    assert sorted(writer.summaries) == want
    sess.close()


# ---- SummarySaverHook ---------------------------------------------------------------
@pytest.fixture
def summaries():
    with tf.Graph().as_default():
        var = tf.Variable(0.0)
        tensor = tf.assign_add(var, 1.0)
        ops = (tf.summary.scalar("my_summary", tensor),
               tf.summary.scalar("my_summary2", tensor * 2))
        step = tf.train.get_or_create_global_step()
        yield ops, tf.assign_add(step, 1)


def _run_summary_hook(hook, train, runs, clock=None, tick=0.0):
    hook.begin()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        mon = HookedSession(sess, [hook])
        for _ in range(runs):
            mon.run(train)
            if clock is not None:
                clock.now += tick
        hook.end(sess)


def test_summary_hook_argument_errors(summaries):
    (op, _), _ = summaries
    writer = RecordingWriter()
    with pytest.raises(ValueError):
        SummarySaverHook(save_steps=1)
    with pytest.raises(ValueError):
        SummarySaverHook(save_steps=1, scaffold=Scaffold(), summary_op=op)
    with pytest.raises(ValueError):
        SummarySaverHook(save_secs=10, save_steps=20, summary_writer=writer, summary_op=op)
    with pytest.raises(ValueError):
        SummarySaverHook(summary_writer=writer, summary_op=op)


def test_summary_hook_save_steps(summaries):
    (op, _), train = summaries
    writer = RecordingWriter()
    _run_summary_hook(SummarySaverHook(save_steps=8, summary_writer=writer, summary_op=op),
                      train, 30)
    # The summary op (and so the assign_add it reads) runs only on saving steps.
    assert writer.values() == {1: {"my_summary": 1.0}, 9: {"my_summary": 2.0},
                               17: {"my_summary": 3.0}, 25: {"my_summary": 4.0}}


def test_summary_hook_several_summary_ops(summaries):
    ops, train = summaries
    writer = RecordingWriter()
    _run_summary_hook(SummarySaverHook(save_steps=8, summary_writer=writer,
                                       summary_op=list(ops)), train, 10)
    assert writer.values() == {1: {"my_summary": 1.0, "my_summary2": 2.0},
                               9: {"my_summary": 2.0, "my_summary2": 4.0}}


@pytest.mark.parametrize("secs, tick, runs, want", [
    (0.5, 0.5, 4, {1: 1.0, 2: 2.0, 3: 3.0, 4: 4.0}),
    (9.0, 3.1, 8, {1: 1.0, 4: 2.0, 7: 3.0})])
def test_summary_hook_save_secs(summaries, clock, secs, tick, runs, want):
    (op, _), train = summaries
    writer = RecordingWriter()
    _run_summary_hook(SummarySaverHook(save_secs=secs, summary_writer=writer, summary_op=op),
                      train, runs, clock, tick)
    assert writer.values() == {k: {"my_summary": v} for k, v in want.items()}

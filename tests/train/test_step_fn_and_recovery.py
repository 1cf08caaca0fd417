"""TF 1.x's monitored_session_test.py as the specification, part 3: run_step_fn and its
StepContext, and recovery when a coordinator thread reports a preemption.

Deliberate difference: TF 1.x accepts only a parameter named `step_context`; any single
parameter name is accepted here (a method's `self` aside).
"""
from __future__ import annotations

import threading

import pytest

import tensorweave as tf
from tensorweave.framework import errors


class ReusedSessionCreator:
    """Hands out one session again and again (closing it is a no-op), counting calls, so
    state survives a re-creation and the number of re-creations can be checked."""

    def __init__(self, session):
        self.session = session
        session.close = lambda: None
        self.created = 0

    def create_session(self):
        self.created += 1
        return self.session


class ThreadFailsAtRun(tf.train.SessionRunHook):
    """After the `n`-th step, a coordinator-registered thread reports `error` (the way a
    queue-runner thread would), and the step waits until it has been reported."""

    def __init__(self, n, error=None):
        self.n = n
        self.error = error or errors.AbortedError(None, None, "aborted in a thread")
        self.go, self.reported = threading.Event(), threading.Event()
        self.coord = None

    def _thread(self, coord):
        self.go.wait(10)
        try:
            raise self.error
        except Exception as e:  # noqa: BLE001 - handed to the coordinator like a runner does
            coord.request_stop(e)
        self.reported.set()

    def after_create_session(self, session, coord):
        if self.coord is None:  # only the first session gets the failing thread
            self.coord = coord
            t = threading.Thread(target=self._thread, args=(coord,), daemon=True)
            coord.register_thread(t)
            t.start()

    def after_run(self, run_context, run_values):
        self.n -= 1
        if self.n == 0:
            self.go.set()
            assert self.reported.wait(10)


class StepFailsAfterThread(ThreadFailsAtRun):
    """As above, and then the step itself fails (CancelledError): the thread's
    preemption is the root cause and must win."""

    def after_run(self, run_context, run_values):
        super().after_run(run_context, run_values)
        if self.reported.is_set() and self.n == 0:
            raise errors.CancelledError(None, None, "step cancelled after the thread failed")


def _feed_step(c, v, value):
    def step_fn(step_context):
        return step_context.run_with_hooks(fetches=v, feed_dict={c: value})
    return step_fn


@pytest.mark.parametrize("use_step_fn", [False, True])
@pytest.mark.parametrize("hook_cls", [ThreadFailsAtRun, StepFailsAfterThread])
def test_preemption_reported_by_a_thread_recreates_the_session(graph, use_step_fn, hook_cls):
    creator = ReusedSessionCreator(tf.Session())
    sess = tf.train.MonitoredSession(creator, [hook_cls(2)])
    assert creator.created == 1 and not sess.should_stop()
    c = tf.constant(0)
    v = tf.identity(c)
    run = (lambda x: sess.run_step_fn(_feed_step(c, v, x))) if use_step_fn else \
        (lambda x: sess.run(v, feed_dict={c: x}))
    assert run(51) == 51 and not sess.should_stop()
    assert run(42) == 42
    assert not sess.should_stop()  # re-created, training goes on
    assert creator.created == 2
    sess.close()


@pytest.mark.parametrize("use_step_fn", [False, True])
def test_fatal_error_reported_by_a_thread_stops_and_is_raised_on_close(graph, use_step_fn):
    creator = ReusedSessionCreator(tf.Session())
    hook = ThreadFailsAtRun(2, errors.UnknownError(None, None, "fatal in the coordinator"))
    sess = tf.train.MonitoredSession(creator, [hook])
    c = tf.constant(0)
    v = tf.identity(c)
    for x in (51, 42):
        got = sess.run_step_fn(_feed_step(c, v, x)) if use_step_fn else \
            sess.run(v, feed_dict={c: x})
        assert got == x
    assert sess.should_stop() and creator.created == 1
    with pytest.raises(errors.UnknownError, match="fatal in the coordinator"):
        sess.close()


# ---- run_step_fn -----------------------------------------------------------------------
def test_step_fn_runs_with_hooks_and_returns_its_value(graph):
    c = tf.placeholder(tf.float32)
    v = tf.identity(c)

    class Model:
        def step(self, step_context):
            return step_context.run_with_hooks(fetches=v, feed_dict={c: 3.2})
    with tf.train.MonitoredSession() as sess:
        assert sess.run_step_fn(_feed_step(c, v, 3.2)) == pytest.approx(3.2)
        assert sess.run_step_fn(Model().step) == pytest.approx(3.2)
        assert sess.run_step_fn(lambda step_context: "a value") == "a value"


def test_step_fn_with_other_arguments_is_refused(graph):
    class Model:
        def step(self, step_context, extra):
            pass
    with tf.train.MonitoredSession() as sess:
        for fn in (lambda step_context, extra: None, Model().step):
            with pytest.raises(ValueError, match="one `step_context` argument"):
                sess.run_step_fn(fn)


def test_request_stop_raises_stop_iteration_and_ends_the_with_block(graph):
    calls = []

    class Hook(tf.train.SessionRunHook):
        def before_run(self, run_context):
            calls.append("before_run")

    def stop(step_context):
        step_context.request_stop()
    with tf.train.MonitoredSession(hooks=[Hook()]) as sess:
        while not sess.should_stop():
            sess.run_step_fn(stop)
            raise AssertionError("request_stop() should have left the loop")
    assert calls == [] and sess.should_stop()  # the stop came before any hooked run
    sess = tf.train.MonitoredSession()  # no with block: the StopIteration reaches the caller
    with pytest.raises(StopIteration):
        sess.run_step_fn(stop)
    assert not sess.should_stop()
    sess.close()


@pytest.mark.parametrize("singular", [False, True])
def test_raw_session_runs_skip_hooks_and_hooked_run_sees_hook_fetches(graph, singular):
    total = tf.Variable(0.0)
    first = tf.assign_add(total, 0.3)
    hook_part = tf.assign_add(total, 0.7)
    with tf.control_dependencies([hook_part]):
        caller_part = tf.assign_add(total, 0.5)
    later = tf.assign_add(total, 1.1)
    seen = []

    class Hook(tf.train.SessionRunHook):
        def before_run(self, run_context):
            return tf.train.SessionRunArgs(fetches=hook_part)

        def after_run(self, run_context, run_values):
            seen.append(run_context.session.run(total))
            seen.append(run_context.session.run(later))

    def step_fn(step_context):
        assert step_context.session.run(first) == pytest.approx(0.3)  # no hooks called
        assert seen == []
        return step_context.run_with_hooks(fetches=caller_part)
    cls = tf.train.SingularMonitoredSession if singular else tf.train.MonitoredSession
    with cls(hooks=[Hook()]) as sess:
        assert sess.run_step_fn(step_fn) == pytest.approx(1.5)
    assert seen == pytest.approx([1.5, 2.6])


@pytest.mark.parametrize("where", ["step_fn", "after_hooked_run", "hook_before_run"])
def test_preemption_in_step_fn_reruns_the_whole_step_fn(graph, where):
    c = tf.placeholder(tf.float32)
    v = tf.identity(c)
    state = tf.Variable(0.0)
    side_effect = tf.assign_add(state, 0.31)
    raised, calls = [], []

    def preempt_once():
        if not raised:
            raised.append(True)
            raise errors.AbortedError(None, None, "Abort")

    class Hook(tf.train.SessionRunHook):
        def before_run(self, run_context):
            if where == "hook_before_run":
                preempt_once()

    def step_fn(step_context):
        calls.append(1)
        if where == "step_fn":
            preempt_once()
        step_context.session.run(side_effect)
        value = step_context.run_with_hooks(fetches=v, feed_dict={c: 3.2})
        if where == "after_hooked_run":
            preempt_once()
        return value
    raw = tf.Session()
    raw.run(tf.global_variables_initializer())
    creator = ReusedSessionCreator(raw)
    with tf.train.MonitoredSession(creator, hooks=[Hook()]) as sess:
        assert sess.run_step_fn(step_fn) == pytest.approx(3.2)
        assert raised and creator.created == 2
        ran_side_effect = 1 if where == "step_fn" else 2  # the whole step_fn ran again
        assert len(calls) == 2
        assert sess.run(state) == pytest.approx(0.31 * ran_side_effect)


def test_singular_session_step_fn_does_not_recover(graph):
    def step_fn(step_context):
        raise errors.AbortedError(None, None, "Abort")
    with tf.train.SingularMonitoredSession() as sess, \
            pytest.raises(errors.AbortedError, match="Abort"):
        sess.run_step_fn(step_fn)

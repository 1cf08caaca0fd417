"""TF 1.x's monitored_session_test.py as the specification, part 1: Scaffold defaults and
the session layers inside a MonitoredSession (wrapped, coordinated, recoverable, hooked).

Written against the behaviour a TF1 user can observe; the layer classes are tensorweave's
(`tensorweave.train.wrapped_sessions`), TF 1.x kept them private.
"""
from __future__ import annotations

import threading
import time

import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.proto.config_pb2 import RunMetadata, RunOptions
from tensorweave.train.wrapped_sessions import (
    CoordinatedSession,
    HookedSession,
    RecoverableSession,
    WrappedSession,
)


@pytest.fixture
def sess(graph):
    s = tf.Session(graph=graph)
    yield s
    s.close()


# ---- Scaffold --------------------------------------------------------------------------
def test_scaffold_creates_nothing_before_finalize(graph):
    s = tf.train.Scaffold()
    assert [s.init_op, s.init_feed_dict, s.init_fn, s.ready_op, s.ready_for_local_init_op,
            s.local_init_op, s.saver] == [None] * 7


def test_scaffold_defaults_tell_global_from_local_variables(graph):
    s = tf.train.Scaffold()
    tf.Variable(1, name="glob")
    tf.Variable(2, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    s.finalize()
    assert isinstance(s.init_op, tf.Operation) and isinstance(s.local_init_op, tf.Operation)
    assert isinstance(s.ready_op, tf.Tensor) and isinstance(s.ready_for_local_init_op, tf.Tensor)
    assert isinstance(s.saver, tf.train.Saver)
    assert s.init_feed_dict is None and s.init_fn is None
    with tf.Session() as sess:
        assert sorted(sess.run(s.ready_op)) == [b"glob", b"loc"]
        assert list(sess.run(s.ready_for_local_init_op)) == [b"glob"]  # locals don't count
        sess.run(s.init_op)
        assert len(sess.run(s.ready_for_local_init_op)) == 0
        assert list(sess.run(s.ready_op)) == [b"loc"]
        sess.run(s.local_init_op)
        assert len(sess.run(s.ready_op)) == 0


def test_scaffold_defaults_exist_without_variables(graph):
    tf.constant(1)
    s = tf.train.Scaffold().finalize()
    assert isinstance(s.init_op, tf.Operation) and isinstance(s.ready_op, tf.Tensor)
    assert isinstance(s.local_init_op, tf.Operation) and isinstance(s.saver, tf.train.Saver)


def test_two_scaffolds_share_defaults_through_graph_collections(graph):
    tf.Variable([1])
    a, b = tf.train.Scaffold().finalize(), tf.train.Scaffold().finalize()
    for name in ("init_op", "ready_op", "ready_for_local_init_op", "local_init_op", "saver"):
        assert getattr(a, name) is getattr(b, name), name


def test_scaffold_refuses_to_guess_between_two_savers(graph):
    tf.Variable([1])
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
    tf.add_to_collection(tf.GraphKeys.SAVERS, tf.train.Saver())
    with pytest.raises(RuntimeError, match="More than one item"):
        tf.train.Scaffold().finalize()


def test_scaffold_keeps_what_it_was_given(graph):
    tf.Variable([1])
    saver = tf.train.Saver()
    s = tf.train.Scaffold(init_op=2, init_feed_dict=3, init_fn=lambda scaffold, sess: 4,
                          ready_op=5, ready_for_local_init_op=6, local_init_op=7,
                          saver=saver).finalize()
    assert (s.init_op, s.init_feed_dict, s.ready_op, s.ready_for_local_init_op,
            s.local_init_op) == (2, 3, 5, 6, 7)
    assert callable(s.init_fn) and s.saver is saver


def test_scaffold_finalize_makes_the_graph_read_only(graph):
    tf.Variable([1])
    tf.train.Scaffold().finalize()
    with pytest.raises(RuntimeError, match="Graph is finalized and cannot be modified"):
        tf.constant([0])


# ---- WrappedSession --------------------------------------------------------------------
class StopAfter(WrappedSession):
    """Answers should_stop() False `n` times, then True."""

    def __init__(self, sess, n):
        super().__init__(sess)
        self.left = n

    def _check_stop(self):
        if self.left == 0:
            return True
        self.left -= 1
        return False


def test_wrapped_session_passes_properties_and_feeds(sess):
    c = tf.constant(0)
    v = tf.identity(c)
    wrapped = WrappedSession(sess)
    assert wrapped.graph is sess.graph and wrapped.sess_str == sess.sess_str
    assert wrapped.run(v, feed_dict={c: 51}) == 51


def test_wrapped_session_stops_once_closed_and_closes_twice(sess):
    wrapped = WrappedSession(sess)
    assert not wrapped.should_stop()
    wrapped.close()
    assert wrapped.should_stop()
    wrapped.close()
    assert wrapped.should_stop()


def test_should_stop_asks_own_check_then_the_wrapped_layer(sess):
    alone = StopAfter(sess, 3)
    assert [alone.should_stop() for _ in range(4)] == [False, False, False, True]
    outer = WrappedSession(StopAfter(sess, 4))
    assert [outer.should_stop() for _ in range(5)] == [False] * 4 + [True]


# ---- CoordinatedSession ----------------------------------------------------------------
def _spin_until_stop(coord):
    while not coord.should_stop():
        time.sleep(0.001)


def test_coordinated_session_stops_with_its_coordinator(sess):
    coord = tf.train.Coordinator()
    cs = CoordinatedSession(sess, coord)
    assert cs.graph is sess.graph and cs.sess_str == sess.sess_str
    assert not cs.should_stop()
    coord.request_stop()
    assert cs.should_stop()


def test_main_thread_error_does_not_stop_the_coordinator(sess):
    c = tf.constant(0)
    coord = tf.train.Coordinator()
    cs = CoordinatedSession(sess, coord)
    assert cs.run(tf.identity(c), feed_dict={c: 1}) == 1
    with pytest.raises(TypeError, match="None has invalid type"):
        cs.run([None])
    assert not coord.should_stop() and not cs.should_stop()


@pytest.mark.parametrize("fail_first", [False, True])
def test_close_stops_and_joins_registered_threads(sess, fail_first):
    coord = tf.train.Coordinator()
    threads = [threading.Thread(target=_spin_until_stop, args=(coord,)) for _ in range(3)]
    for t in threads:
        coord.register_thread(t)
        t.start()
    cs = CoordinatedSession(sess, coord, stop_grace_period_secs=10)
    if fail_first:
        with pytest.raises(TypeError):
            cs.run([None])
    assert all(t.is_alive() for t in threads)
    cs.close()
    assert not any(t.is_alive() for t in threads)
    assert coord.should_stop() and cs.should_stop()


# ---- RecoverableSession ----------------------------------------------------------------
class AbortAfter:
    """A session whose run() fails with AbortedError after `n` good calls."""

    def __init__(self, sess, n):
        self.sess, self.left = sess, n

    def close(self):
        pass

    def run(self, *args, **kwargs):
        if self.left == 0:
            raise errors.AbortedError(None, None, "aborted after n runs")
        self.left -= 1
        return self.sess.run(*args, **kwargs)


def test_recoverable_session_moves_to_a_new_session_after_abort(sess):
    c = tf.constant(0)
    v = tf.identity(c)

    class Stack:
        def __init__(self):
            self.left = [AbortAfter(sess, n) for n in (1, 2, 3)]

        def create_session(self):
            return self.left.pop(0)
    stack = Stack()
    rs = RecoverableSession(stack)
    assert len(stack.left) == 2
    assert rs.run(v, feed_dict={c: 51}) == 51 and len(stack.left) == 2
    assert rs.run(v, feed_dict={c: 42}) == 42 and len(stack.left) == 1  # 1st aborted
    assert rs.run(v, feed_dict={c: 33}) == 33
    assert rs.run(v, feed_dict={c: 24}) == 24 and len(stack.left) == 0  # 2nd aborted
    assert [rs.run(v, feed_dict={c: x}) for x in (11, 0)] == [11, 0]
    with pytest.raises(IndexError, match="pop from empty list"):  # creator's own error
        rs.run(v, feed_dict={c: -12})


# ---- HookedSession ---------------------------------------------------------------------
class Recorder(WrappedSession):
    def run(self, fetches, **kwargs):
        self.kwargs = kwargs
        return super().run(fetches)


class Hook(tf.train.SessionRunHook):
    def __init__(self, request=None):
        self.request, self.calls, self.ctx, self.values = request, [], None, None

    def before_run(self, run_context):
        self.calls.append("before_run")
        self.ctx = run_context
        return self.request

    def after_run(self, run_context, run_values):
        self.calls.append("after_run")
        self.values = run_values


def test_hooked_session_passes_every_run_argument(sess):
    inner = Recorder(sess)
    a = tf.constant([0])
    out = HookedSession(inner, []).run(a, feed_dict="a_feed", options="an_option",
                                       run_metadata="a_metadata")
    assert list(out) == [0]
    assert inner.kwargs == {"feed_dict": "a_feed", "options": "an_option",
                            "run_metadata": "a_metadata"}


def test_hooks_see_original_args_session_and_empty_results(sess):
    hooks = [Hook(), Hook()]
    a = tf.constant([0])
    HookedSession(sess, hooks).run(a)
    for h in hooks:
        assert h.calls == ["before_run", "after_run"]  # begin/after_create are not its job
        assert h.ctx.original_args == tf.train.SessionRunArgs(a)
        assert h.ctx.session is sess
        assert h.values.results is None
        assert h.values.options == RunOptions() and isinstance(h.values.run_metadata,
                                                               RunMetadata)


def test_each_hook_gets_its_own_fetches(sess):
    a, b, c = tf.constant([0]), tf.constant([5]), tf.constant([10])
    h1, h2 = Hook(tf.train.SessionRunArgs([b])), Hook(tf.train.SessionRunArgs([c]))
    assert list(HookedSession(sess, [h1, h2]).run(a)) == [0]
    assert [list(x) for x in h1.values.results] == [[5]]
    assert [list(x) for x in h2.values.results] == [[10]]


def test_feeds_from_hooks_and_caller_are_merged_and_conflicts_refused(sess):
    a, b, c = tf.constant([0]), tf.constant([0]), tf.constant([0])
    h1 = Hook(tf.train.SessionRunArgs(None, feed_dict={a: [5]}))
    h2 = Hook(tf.train.SessionRunArgs(None, feed_dict={b: [10]}))
    hooked = HookedSession(sess, [h1, h2])
    assert list(hooked.run(a + b)) == [15]
    user_feed = {c: [20]}
    assert list(hooked.run(a + b + c, feed_dict=user_feed)) == [35]
    assert user_feed == {c: [20]}  # the caller's dict is not modified
    h2.request = tf.train.SessionRunArgs(None, feed_dict={a: [10]})
    with pytest.raises(RuntimeError, match="Same tensor is fed by two hooks"):
        hooked.run(a + b)

"""How step errors reach the program, as in TF 1.x: raised by Session.run (the runtime's
frames are not the program's), cancelled steps name Session::Close(), and a recoverable
session recovers from errors built the way TF's own test doubles build them."""
from __future__ import annotations

import os
import traceback

import pytest

import tensorweave as tf
from tensorweave.train.wrapped_sessions import CoordinatedSession, RecoverableSession

from session_helpers import close_while_blocked

pytestmark = pytest.mark.usefixtures("graph")


def _innermost_file(exc: BaseException) -> str:
    return os.path.basename(traceback.extract_tb(exc.__traceback__)[-1].filename)


def test_a_failed_step_is_raised_from_session_py():
    check = tf.Assert(False, ["this step fails"])
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(check)
        assert _innermost_file(info.value) == "session.py"
        # Wrapped sessions re-raise it unchanged.
        coordinated = CoordinatedSession(sess, tf.train.Coordinator(
            clean_stop_exception_types=()))
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            coordinated.run(check)
        assert _innermost_file(info.value) == "session.py"
        assert "this step fails" in info.value.message


def test_closing_a_session_cancels_its_blocked_step_naming_session_close():
    q = tf.FIFOQueue(1, [tf.float32])
    take = q.dequeue()
    seen = close_while_blocked(tf.Session(), take)
    assert seen and "Session::Close()" in seen[0]


class _AbortOnce:
    """A session-like object whose first run fails as TF's test doubles fail: an
    AbortedError built with message None."""

    def __init__(self, sess, fail):
        self._sess, self._fail = sess, fail

    def run(self, *args, **kwargs):
        if self._fail:
            self._fail = False
            raise tf.errors.AbortedError("aborted", None, None)
        return self._sess.run(*args, **kwargs)

    def close(self):
        pass


def test_recoverable_session_recovers_from_an_error_without_a_message():
    c = tf.constant(0)
    v = tf.identity(c)
    with tf.Session() as sess:
        made = [_AbortOnce(sess, True), _AbortOnce(sess, False)]

        class Creator:
            def create_session(self):
                return made.pop(0)
        recoverable = RecoverableSession(Creator())
        assert recoverable.run(v, feed_dict={c: 7}) == 7   # recovered on the second one
        assert made == []

"""TF 1.x's session_manager_test.py as the specification: prepare_session, recover_session,
wait_for_session, local init and readiness checks.

Already covered in tests/train/test_monitored_session.py (not repeated): prepare_session with
init_op, without any initializer, with an init_fn that leaves the model unready, restore
from checkpoint_dir, recover_session found/not found, checkpoint_dir together with
checkpoint_filename_with_path, and a non-chief waiting on a cluster until the chief
initializes.

Deliberate differences from TF 1.x:
- wait_for_session polls readiness every 50-250 ms instead of sleeping
  `recovery_wait_secs` (30 s) between checks, and its DeadlineExceededError names what
  is still uninitialized; a worker that had to wait starts 1 s after the model became
  ready, so what the chief runs right after creating its session comes first (the order
  TF1 programs got from the 30 s sleep);
- a local init op that reads an uninitialized global variable fails with
  FailedPreconditionError naming it (as TF 1.x did before initializers were guarded
  against uninitialized dependencies), in prepare_session and wait_for_session alike.
"""
from __future__ import annotations

import os
import shutil
import time

import pytest

import tensorweave as tf
from tensorweave.framework import errors


def _initialized(sess, name):
    return bool(sess.run(tf.is_variable_initialized(
        sess.graph.get_tensor_by_name(name + ":0"))))


def _save_v(ckpt_dir, value=1):
    """Writes a checkpoint of one variable `v` (= value) in its own graph."""
    with tf.Graph().as_default():
        v = tf.Variable(value, name="v")
        with tf.Session() as sess:
            sess.run(v.initializer)
            tf.train.Saver({"v": v}).save(sess, os.path.join(str(ckpt_dir), "v_ckpt"))
    return tf.train.latest_checkpoint(str(ckpt_dir))


def _v_and_local_w():
    """Global v = 2 and local w initialized from v."""
    v = tf.Variable(2, name="v")
    w = tf.Variable(v, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="w")
    return v, w


@pytest.mark.parametrize("ready", ["report", "assert"])
def test_prepare_with_init_feed_dict_or_init_fn(graph, ready):
    # "assert": the obsolete style of ready_op, an op that fails while anything is
    # uninitialized, works as well.
    p = tf.placeholder(tf.float32, shape=(3,))
    fed = tf.Variable(p, name="fed")
    later = tf.Variable([125], name="later")

    def ready_op():
        return (tf.report_uninitialized_variables() if ready == "report"
                else tf.assert_variables_initialized())
    sm = tf.train.SessionManager(ready_op=ready_op())
    with pytest.raises(RuntimeError, match="did not make model ready"):
        sm.prepare_session("", init_op=fed.initializer, init_feed_dict={p: [1.0, 2, 3]})
    sess = sm.prepare_session("", init_op=fed.initializer, init_feed_dict={p: [1.0, 2, 3]},
                              init_fn=lambda s: s.run(later.initializer))
    assert list(sess.run(fed)) == [1.0, 2.0, 3.0] and list(sess.run(later)) == [125]


def test_prepare_waits_for_a_checkpoint_then_restores_without_init_op(graph, tmp_path):
    v = tf.Variable([6.0, 7.0], name="v")
    saver = tf.train.Saver({"v": v})
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError, match="no init_op or init_fn or local_init_op was given"):
        sm.prepare_session("", saver=saver, checkpoint_dir=str(empty),
                           wait_for_checkpoint=True, max_wait_secs=0.3)
    (tmp_path / "full").mkdir()
    with tf.Session() as s:
        s.run(tf.assign(v, [1.0, 2.0]))
        saver.save(s, str(tmp_path / "full" / "model"))
    shutil.copytree(str(tmp_path / "full"), str(empty), dirs_exist_ok=True)
    sess = sm.prepare_session("", saver=saver, checkpoint_dir=str(empty),
                              wait_for_checkpoint=True, max_wait_secs=2)
    assert _initialized(sess, "v") and list(sess.run(v)) == [1.0, 2.0]


@pytest.mark.parametrize("ready", ["report", "assert"])
def test_recover_from_a_checkpoint_file(graph, tmp_path, ready):
    path = _save_v(tmp_path)
    v = tf.Variable(2, name="v")
    ready_op = (tf.report_uninitialized_variables() if ready == "report"
                else tf.assert_variables_initialized())
    sm = tf.train.SessionManager(ready_op=ready_op)
    sess, ok = sm.recover_session("", saver=tf.train.Saver({"v": v}),
                                  checkpoint_filename_with_path=path)
    assert ok and _initialized(sess, "v") and sess.run(v) == 1
    with pytest.raises(ValueError, match="Can not provide both checkpoint_dir"):
        sm.recover_session("", saver=tf.train.Saver({"v": v}), checkpoint_dir=str(tmp_path),
                           checkpoint_filename_with_path=path)


def test_recover_runs_local_init_once_ready_for_it(graph, tmp_path):
    _save_v(tmp_path)
    v, w = _v_and_local_w()
    sm = tf.train.SessionManager(
        ready_op=tf.report_uninitialized_variables(),
        ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()),
        local_init_op=w.initializer)
    sess, ok = sm.recover_session("", saver=tf.train.Saver({"v": v}),
                                  checkpoint_dir=str(tmp_path))
    assert ok and sess.run([v, w]) == [1, 1]  # w copied the restored v


def test_recover_with_too_strict_ready_for_local_init_is_not_ready(graph, tmp_path):
    _save_v(tmp_path)
    v, w = _v_and_local_w()
    sm = tf.train.SessionManager(
        ready_op=tf.report_uninitialized_variables(),
        ready_for_local_init_op=tf.report_uninitialized_variables(),  # w counts too
        local_init_op=w.initializer)
    sess, ok = sm.recover_session("", saver=tf.train.Saver({"v": v}),
                                  checkpoint_dir=str(tmp_path))
    assert not ok
    assert _initialized(sess, "v") and not _initialized(sess, "w") and sess.run(v) == 1


@pytest.mark.parametrize("with_saver", [False, True])
def test_recover_without_checkpoint_still_runs_local_init(graph, tmp_path, with_saver):
    v = tf.Variable(2, name="v")
    w = tf.Variable(1, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="w")
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables(),
                                 local_init_op=w.initializer)
    kwargs = ({"saver": tf.train.Saver({"v": v}), "checkpoint_dir": str(tmp_path),
               "wait_for_checkpoint": False} if with_saver else {})
    sess, ok = sm.recover_session("", **kwargs)
    assert not ok
    assert not _initialized(sess, "v") and _initialized(sess, "w") and sess.run(w) == 1


@pytest.mark.transports()
def test_wait_for_session_runs_local_init_on_a_ready_model(graph):
    server = tf.train.Server.create_local_server()
    try:
        v, w = _v_and_local_w()
        sm = tf.train.SessionManager(
            graph=graph, ready_op=tf.report_uninitialized_variables(),
            ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()),
            local_init_op=w.initializer)
        other = tf.Session(server.target, graph=graph)
        other.run(v.initializer)  # another task made the global model ready
        sess = sm.wait_for_session(server.target, max_wait_secs=5)
        assert sess.run([v, w]) == [2, 2]
        assert _initialized(sess, "w")
        other.close()
        sess.close()
    finally:
        server.stop()


@pytest.mark.transports("grpc", why=(
    "it waits out the session manager's 5 s settle, and what it checks is the order of the "
    "chief's and the worker's runs, the same over any wire"))
def test_a_waiting_worker_sees_what_the_chief_ran_right_after_its_session(graph, monkeypatch):
    # The idiom of public TF1 programs (a distributed-TF guide's ADAG program): the chief
    # creates its session, then at once assigns its own initial values to the ps copy;
    # a worker that waited for the model must start from those values, not the random init.
    # The settle is widened from 1 s: on a loaded machine the chief's 0.3 s of start-up
    # work and its run took longer than 1 s once (CI); the order is what is checked here.
    import threading
    from tensorweave.train import session_manager
    monkeypatch.setattr(session_manager, "_SETTLE_SECS", 5.0)
    server = tf.train.Server.create_local_server()
    try:
        v = tf.Variable(tf.random_uniform([4], 10.0, 20.0), name="v")
        assign_chief_values = v.assign(tf.zeros([4]))
        init = tf.global_variables_initializer()
        ready = tf.report_uninitialized_variables()
        seen = {}

        def worker():
            sm = tf.train.SessionManager(graph=graph, ready_op=ready)
            with sm.wait_for_session(server.target, max_wait_secs=30) as sess:
                seen["v"] = sess.run(v)

        t = threading.Thread(target=worker)
        t.start()
        with tf.train.SessionManager(graph=graph, ready_op=ready).prepare_session(
                server.target, init_op=init) as chief:
            time.sleep(0.3)  # the chief's own start-up work (writing its graph, logging)
            chief.run(assign_chief_values)
            t.join(30)
        assert not t.is_alive()
        assert list(seen["v"]) == [0.0] * 4
    finally:
        server.stop()


@pytest.mark.parametrize("strict_local", [False, True])
def test_wait_for_session_gives_up_naming_what_is_missing(graph, strict_local):
    _, w = _v_and_local_w()
    kwargs = ({"ready_for_local_init_op": tf.report_uninitialized_variables(),
               "local_init_op": w.initializer} if strict_local else {})
    # recovery_wait_secs=30 would be TF 1.x's sleep between checks; the wait here still
    # ends at max_wait_secs (polling is 50-250 ms).
    sm = tf.train.SessionManager(graph=graph, ready_op=tf.report_uninitialized_variables(),
                                 recovery_wait_secs=30, **kwargs)
    with pytest.raises(errors.DeadlineExceededError,
                       match=r"Session was not ready after waiting 0\.4 secs.*\bv\b"):
        sm.wait_for_session("", max_wait_secs=0.4)


def test_local_init_reading_an_uninitialized_global_uses_its_initial_value(graph):
    # TF 1.x: an initial value reading another variable takes its initialized_value,
    # so the local init runs; the model is still not ready (v is uninitialized).
    v, w = _v_and_local_w()
    sm = tf.train.SessionManager(graph=graph, ready_op=tf.report_uninitialized_variables(),
                                 local_init_op=w.initializer)  # no ready_for_local_init_op
    with pytest.raises(RuntimeError, match="did not make model ready.*v"):
        sm.prepare_session("", init_op=None)
    sess, ok = sm.recover_session("")
    assert not ok and sess.run(w) == 2
    assert sess.run(tf.is_variable_initialized(v)) == False  # noqa: E712 (a NumPy bool)


def test_prepare_runs_a_list_of_local_init_ops_after_init(graph):
    v = tf.Variable(1, name="v")
    w = tf.Variable(v, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES], name="w")
    x = tf.Variable(3 * v, trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                    name="x")
    sm = tf.train.SessionManager(
        ready_op=tf.report_uninitialized_variables(),
        ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()),
        local_init_op=[w.initializer, x.initializer])
    sess = sm.prepare_session("", init_op=v.initializer)
    assert sess.run([v, w, x]) == [1, 1, 3]
    with pytest.raises(RuntimeError, match="did not make model ready for local_init"):
        sm.prepare_session("", init_op=None)  # v is never initialized


@pytest.mark.parametrize("as_list", [False, True])
def test_prepare_names_the_local_variable_nobody_initialized(graph, as_list):
    v, _ = _v_and_local_w()
    sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    init = [v.initializer] if as_list else v.initializer
    with pytest.raises(RuntimeError, match=r"did not make model ready.*\bw\b"):
        sm.prepare_session("", init_op=init)


def test_prepare_with_local_init_feed_dict_and_a_loop_in_an_initializer(graph):
    p = tf.placeholder(tf.float32, shape=(3,))
    loc = tf.Variable(p, name="loc", collections=[tf.GraphKeys.LOCAL_VARIABLES])
    counted = tf.while_loop(lambda i: i < 1, lambda i: i + 1, [0])
    looped = tf.Variable(tf.identity(counted), name="looped")
    sm = tf.train.SessionManager(local_init_op=loc.initializer,
                                 local_init_feed_dict={p: [1.0, 2.0, 3.0]},
                                 ready_op=tf.report_uninitialized_variables())
    sess = sm.prepare_session("", init_op=looped.initializer)
    assert list(sess.run(loc)) == [1.0, 2.0, 3.0] and sess.run(looped) == 1


def test_ready_for_local_init_needs_a_local_init_op(graph):
    with pytest.raises(ValueError, match="If you pass a ready_for_local_init_op you must "
                                         "also pass a local_init_op"):
        tf.train.SessionManager(
            ready_for_local_init_op=tf.report_uninitialized_variables(tf.global_variables()))

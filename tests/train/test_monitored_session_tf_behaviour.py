"""TF 1.x's monitored_session_test.py as the specification, part 2: MonitoredSession,
MonitoredTrainingSession, SingularMonitoredSession and run_step_fn.

Already covered elsewhere (not repeated): checkpoint restart and global-step continuity,
summaries by steps, preemption with a checkpoint, OutOfRange from a queue, queue runners,
non-chief waiting and its bounded timeout (tests/train/test_monitored_session.py); hook order,
fetch merge, request_stop and feed conflicts with the caller (tests/train/test_hooks.py).
"""
from __future__ import annotations

import glob
import os

import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.proto.config_pb2 import RunMetadata, RunOptions
from tensorweave.summary import summary_iterator


@pytest.fixture
def counter(graph):
    step = tf.train.get_or_create_global_step()
    return step, tf.assign_add(step, 1)


class RaiseOnce(tf.train.SessionRunHook):
    """Raises `error` from the `n`-th before_run, once."""

    def __init__(self, n, error):
        self.n, self.error, self.raised = n, error, False

    def before_run(self, run_context):
        self.n -= 1
        if self.n == 0 and not self.raised:
            self.raised = True
            raise self.error


class Counting(tf.train.SessionRunHook):
    def __init__(self):
        self.calls: dict = {}

    def _count(self, name):
        self.calls[name] = self.calls.get(name, 0) + 1

    def begin(self):
        self._count("begin")

    def after_create_session(self, session, coord):
        self._count("after_create_session")


def _tags(logdir):
    tags = set()
    for path in glob.glob(os.path.join(str(logdir), "events.out.tfevents.*")):
        for event in summary_iterator(path):
            tags.update(v.tag for v in event.summary.value)
    return tags


# ---- MonitoredTrainingSession arguments ------------------------------------------------
def test_summaries_by_seconds_and_in_their_own_dir(counter, tmp_path):
    step, inc = counter
    tf.summary.scalar("doubled", tf.cast(step, tf.float32) * 2.0)
    ckpt, summ = tmp_path / "ckpt", tmp_path / "summ"
    with tf.train.MonitoredTrainingSession(
            checkpoint_dir=str(ckpt), summary_dir=str(summ), save_summaries_steps=None,
            save_summaries_secs=0.1, log_step_count_steps=1) as sess:
        for _ in range(3):
            sess.run(inc)
    assert {"doubled", "global_step/sec"} <= _tags(summ)  # the first step always writes
    assert not _tags(ckpt)
    assert tf.train.latest_checkpoint(str(ckpt)) is not None


def test_no_step_rate_when_log_step_count_steps_is_none(counter, tmp_path):
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                           log_step_count_steps=None) as sess:
        for _ in range(3):
            sess.run(counter[1])
    assert "global_step/sec" not in _tags(tmp_path)


def test_chief_only_hooks_run_and_zero_secs_turns_checkpoints_off(counter, tmp_path):
    step, inc = counter
    hook = Counting()
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_checkpoint_secs=0,
                                           chief_only_hooks=[hook]) as sess:
        assert [sess.run(step), sess.run(inc), sess.run(inc)] == [0, 1, 2]
    assert hook.calls == {"begin": 1, "after_create_session": 1}
    assert tf.train.latest_checkpoint(str(tmp_path)) is None
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path)) as sess:
        assert sess.run(step) == 0  # nothing to restore


@pytest.mark.transports()
def test_non_chief_skips_chief_only_hooks_and_saves_nothing(tmp_path):
    server = tf.train.Server.create_local_server()
    try:
        with tf.Graph().as_default() as g:
            step = tf.train.get_or_create_global_step()
            inc = tf.assign_add(step, 1)
            with tf.Session(server.target, graph=g) as chief:
                chief.run(tf.global_variables_initializer())
            hook, everyone = Counting(), Counting()
            with tf.train.MonitoredTrainingSession(
                    master=server.target, is_chief=False, checkpoint_dir=str(tmp_path),
                    chief_only_hooks=[hook], hooks=[everyone], max_wait_secs=10) as sess:
                assert sess.run(inc) == 1
        assert hook.calls == {} and everyone.calls["begin"] == 1
        assert tf.train.latest_checkpoint(str(tmp_path)) is None and not _tags(tmp_path)
    finally:
        server.stop()


# ---- MonitoredSession ------------------------------------------------------------------
def test_init_fn_restores_and_stop_at_step_counts_from_there(counter, tmp_path):
    step, inc = counter
    with tf.train.MonitoredSession(hooks=[tf.train.StopAtStepHook(last_step=3)]) as sess:
        while not sess.should_stop():
            sess.run(inc)
        path = tf.train.Scaffold().finalize().saver.save(sess._tf_sess(), str(tmp_path / "s3"))

    def load(scaffold, raw):
        scaffold.saver.restore(raw, path)
    creator = tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(init_fn=load))
    with tf.train.MonitoredSession(session_creator=creator,
                                   hooks=[tf.train.StopAtStepHook(num_steps=2)]) as sess:
        assert sess.run(step) == 3
        assert sess.run(inc) == 4 and not sess.should_stop()
        assert sess.run(inc) == 5 and sess.should_stop()


def test_chief_creator_restores_from_dir_or_file(counter, tmp_path):
    step, inc = counter
    scaffold = tf.train.Scaffold()
    saver_hook = tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1, scaffold=scaffold)
    with tf.train.MonitoredSession(
            session_creator=tf.train.ChiefSessionCreator(scaffold, checkpoint_dir=str(tmp_path)),
            hooks=[saver_hook]) as sess:
        sess.run(inc)
        sess.run(inc)
    latest = tf.train.latest_checkpoint(str(tmp_path))
    for creator in (tf.train.ChiefSessionCreator(scaffold, checkpoint_dir=str(tmp_path)),
                    tf.train.ChiefSessionCreator(scaffold, checkpoint_filename_with_path=latest)):
        with tf.train.MonitoredSession(session_creator=creator) as sess:
            assert sess.run(step) == 2


@pytest.mark.parametrize("error", [errors.AbortedError, errors.UnavailableError])
def test_preemption_without_checkpoint_starts_from_a_fresh_init(counter, error):
    step, inc = counter
    hook = RaiseOnce(4, error(None, None, "preempted"))
    with tf.train.MonitoredSession(hooks=[hook]) as sess:
        assert [sess.run(step), sess.run(inc), sess.run(inc)] == [0, 1, 2]
        assert sess.run(inc) == 1  # re-created and re-initialized, then retried
        assert hook.raised and not sess.should_stop()
        assert sess.run(inc) == 2


def test_aborted_during_initialization_is_retried(counter):
    step, _ = counter
    failed = []

    def init_fn(scaffold, raw):
        if not failed:
            failed.append(True)
            raise errors.AbortedError(None, None, "ps restarted during init")
    creator = tf.train.ChiefSessionCreator(scaffold=tf.train.Scaffold(init_fn=init_fn))
    with tf.train.MonitoredSession(session_creator=creator) as sess:
        assert not sess.should_stop() and sess.run(step) == 0
    assert failed


@pytest.mark.parametrize("error", [errors.OutOfRangeError(None, None, "EOI"), StopIteration])
def test_end_of_input_from_a_step_closes_cleanly(counter, error):
    step, inc = counter
    sess = tf.train.MonitoredSession(hooks=[RaiseOnce(2, error)])
    with sess:
        assert sess.run(step) == 0
        sess.run(inc)
        raise AssertionError("not reached")
    assert sess.should_stop() and sess._is_closed()


def test_other_error_from_a_step_leaves_the_with_block(counter):
    _, inc = counter
    hook = RaiseOnce(3, RuntimeError("regular exception"))
    sess = tf.train.MonitoredSession(hooks=[hook])
    with pytest.raises(RuntimeError, match="regular exception"), sess:
        sess.run(inc)
        sess.run(inc)
        sess.run(inc)
    assert hook.raised and sess.should_stop() and sess._is_closed()


@pytest.mark.parametrize("singular", [False, True])
def test_thread_error_reported_to_coordinator_is_raised_at_exit(counter, singular):
    step, _ = counter
    sess = tf.train.SingularMonitoredSession() if singular else tf.train.MonitoredSession()
    ran_after = False
    with pytest.raises(RuntimeError, match="a thread wants to stop"), sess:
        try:
            raise RuntimeError("a thread wants to stop")
        except RuntimeError as e:
            sess._coordinated_creator.coord.request_stop(e)
        assert sess.run(step) == 0  # the step still runs
        ran_after = True
        assert sess.should_stop()
    assert ran_after


def test_graph_stays_finalized_if_it_was_before(graph):
    v = tf.Variable(0)
    tf.train.Scaffold().finalize()
    with tf.train.MonitoredSession() as sess:
        assert sess.graph is graph and sess.run(v) == 0
    assert graph.finalized


def test_close_inside_the_with_block_is_reported(graph):
    with pytest.raises(RuntimeError, match="Session is already closed"), \
            tf.train.MonitoredSession() as sess:
        sess.close()


class OptionsHook(tf.train.SessionRunHook):
    def __init__(self, **fields):
        self.fields, self.seen = fields, []

    def before_run(self, run_context):
        return tf.train.SessionRunArgs(None, options=RunOptions(**self.fields))

    def after_run(self, run_context, run_values):
        self.seen.append((run_values.options, run_values.run_metadata))


def test_run_options_of_hooks_and_caller_are_merged(graph):
    const = tf.constant(42)
    a = OptionsHook(trace_level=2, timeout_in_ms=30000, output_partition_graphs=False)
    b = OptionsHook(trace_level=3, timeout_in_ms=60000, output_partition_graphs=True,
                    report_tensor_allocations_upon_oom=True)
    with tf.train.MonitoredSession(hooks=[a, b]) as sess:
        assert sess.run(const) == 42
        options, metadata = b.seen[0]
        # Larger numbers win, flags are OR-ed (as in TF 1.x); the merge sets debug_options
        # (empty here), as TF's does.
        assert options == RunOptions(trace_level=3, timeout_in_ms=60000,
                                     output_partition_graphs=True,
                                     report_tensor_allocations_upon_oom=True,
                                     debug_options={})
        assert isinstance(metadata, RunMetadata) and len(metadata.partition_graphs) > 0
        caller = RunOptions(trace_level=1, timeout_in_ms=90000)
        sess.run(const, options=caller)
        assert b.seen[1][0] == RunOptions(trace_level=3, timeout_in_ms=90000,
                                          output_partition_graphs=True,
                                          report_tensor_allocations_upon_oom=True,
                                          debug_options={})


# ---- SingularMonitoredSession ----------------------------------------------------------
def test_singular_session_initializes_and_gives_the_raw_session(graph):
    v = tf.Variable(0)
    sess = tf.train.SingularMonitoredSession()
    with sess:
        assert sess.run(v) == 0 and sess.graph is graph
        assert isinstance(sess.raw_session(), tf.Session)
        assert not sess.should_stop()
    assert sess.should_stop() and sess.raw_session() is None


def test_singular_session_does_not_recover_from_preemption(counter):
    step, inc = counter

    class Abort(tf.train.SessionRunHook):
        def before_run(self, run_context):
            raise errors.AbortedError(None, None, "Abort")
    with tf.train.SingularMonitoredSession(hooks=[Abort()]) as sess, \
            pytest.raises(errors.AbortedError):
        sess.run(step)  # raised at once, and the session closes normally
    with pytest.raises(errors.AbortedError), tf.train.SingularMonitoredSession(
            hooks=[Abort()]) as sess:
        sess.run(step)
    sess = tf.train.SingularMonitoredSession(
        hooks=[RaiseOnce(2, errors.OutOfRangeError(None, None, "EOI"))])
    with sess:
        sess.run(step)
        sess.run(inc)
    assert sess.should_stop()

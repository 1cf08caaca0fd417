"""The hooks report through tf.logging, with TF's messages and argument errors, and the
graph-writing hooks/Supervisor write TF's graph events (GraphDef with shapes, then the
MetaGraphDef with the SaverDef)."""
from __future__ import annotations

import glob
import os

import pytest

import tensorweave as tf
from tensorweave.framework.proto import graph_pb2, meta_graph_pb2
from tensorweave.summary.writer import FileWriterCache, summary_iterator
from tensorweave.train.basic_session_run_hooks import FinalOpsHook, LoggingTensorHook
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.wrapped_sessions import HookedSession

pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture
def info_calls(monkeypatch):
    # A program patching tf.logging (as TF's own tests do) sees what the hooks log.
    calls = []
    monkeypatch.setattr(tf.logging, "info", lambda *a, **k: calls.append(a))
    return calls


def test_logging_tensor_hook_messages_go_through_tf_logging(info_calls):
    t = tf.constant(42.0, name="foo")
    hook = LoggingTensorHook({"foo": t}, every_n_iter=1)
    hook.begin()
    with tf.Session() as sess:
        mon = HookedSession(sess, [hook])
        mon.run(tf.constant(3))
        mon.run(tf.constant(3))
    first, second = info_calls
    assert first == ("%s", "foo = 42.0")                  # no time before the first log
    assert second[0] == "%s (%.3f sec)" and second[1] == "foo = 42.0"


def test_logging_tensor_hook_formatter_string_is_the_whole_message(info_calls):
    t = tf.constant(42.0, name="foo")
    hook = LoggingTensorHook([t.name], every_n_iter=10,
                             formatter=lambda values: "qqq=%s" % values[t.name])
    hook.begin()
    with tf.Session() as sess:
        HookedSession(sess, [hook]).run(tf.constant(3))
        assert info_calls == [("qqq=42.0",)]
        hook.end(sess)  # at_end is off: nothing more
    assert len(info_calls) == 1


@pytest.mark.parametrize("bad", [0, -10])
def test_logging_tensor_hook_rejects_every_n_iter_in_tfs_words(bad):
    with pytest.raises(ValueError, match=f"nvalid every_n_iter={bad}"):
        LoggingTensorHook(tensors=["t"], every_n_iter=bad)


def test_final_ops_hook_out_of_range_warns_through_tf_logging(monkeypatch):
    warned = []
    monkeypatch.setattr(tf.logging, "warning", lambda *a, **k: warned.append(a))
    ds = tf.data.Dataset.range(1)
    item = tf.data.make_one_shot_iterator(ds).get_next()
    hook = FinalOpsHook(item)
    hook.begin()
    with tf.Session() as sess:
        sess.run(item)
        with pytest.raises(tf.errors.OutOfRangeError):
            hook.end(sess)
    assert "dependency back to some input source" in warned[0][0]


def test_copy_from_scaffold_must_be_a_scaffold_in_tfs_words():
    with pytest.raises(TypeError, match="copy_from_scaffold is not a Scaffold instance"):
        Scaffold(copy_from_scaffold=1)


def test_supervisor_summary_computed_without_writer_in_tfs_words(tmp_path):
    tf.Variable(1.0)
    sv = tf.train.Supervisor(logdir=str(tmp_path), summary_writer=None)
    with sv.managed_session("", start_standard_services=False) as sess:
        with pytest.raises(RuntimeError, match="requires a summary writer"):
            sv.summary_computed(sess, b"")
    sv.stop()


def _events(logdir):
    paths = sorted(glob.glob(os.path.join(logdir, "events*")))
    return [e for p in paths for e in summary_iterator(p)]


def _assert_graph_then_meta_graph(events, graph, saver_expected):
    kinds = [e.WhichOneof("what") for e in events]
    at = kinds.index("graph_def")
    assert kinds[at + 1] == "meta_graph_def"
    gd = graph_pb2.GraphDef.FromString(events[at].graph_def)
    assert gd == graph.as_graph_def(add_shapes=True)
    with_outputs = {op.name for op in graph.get_operations() if op.outputs}
    assert with_outputs and all("_output_shapes" in n.attr
                                for n in gd.node if n.name in with_outputs)
    meta = meta_graph_pb2.MetaGraphDef.FromString(events[at + 1].meta_graph_def)
    assert meta.graph_def == graph.as_graph_def(add_shapes=True)
    assert meta.HasField("saver_def") == saver_expected


def test_supervisor_writes_graph_with_shapes_then_meta_graph(tmp_path):
    FileWriterCache.clear()
    tf.Variable([1.0, 2.0], name="v")
    logdir = str(tmp_path)
    sv = tf.train.Supervisor(logdir=logdir)
    with sv.managed_session("", start_standard_services=True):
        pass  # leaving it stops the Supervisor and closes its writer
    _assert_graph_then_meta_graph(_events(logdir), tf.get_default_graph(), True)


def test_checkpoint_saver_hook_writes_graph_then_meta_graph(tmp_path):
    FileWriterCache.clear()
    tf.train.get_or_create_global_step()
    tf.Variable(3.0, name="w")
    logdir = str(tmp_path)
    hook = tf.train.CheckpointSaverHook(logdir, save_steps=100)
    with tf.train.MonitoredSession(hooks=[hook]):
        pass
    FileWriterCache.get(logdir).flush()
    _assert_graph_then_meta_graph(_events(logdir), tf.get_default_graph(), True)


def test_file_writer_add_meta_graph_checks_its_type(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    with pytest.raises(TypeError, match="MetaGraphDef"):
        writer.add_meta_graph(graph_pb2.GraphDef())
    writer.add_meta_graph(tf.train.export_meta_graph(), global_step=7)
    writer.close()
    (ev,) = [e for e in _events(str(tmp_path)) if e.WhichOneof("what") == "meta_graph_def"]
    assert ev.step == 7


def _stop_hook_after_first_run():
    class Stop(tf.train.SessionRunHook):
        def after_run(self, run_context, run_values):
            run_context.request_stop()
    return Stop()


@pytest.mark.parametrize("phrase, make", [
    ("Either every_secs or every_steps should be provided",
     lambda: tf.train.SecondOrStepTimer()),
    ("Can not provide both every_secs and every_steps",
     lambda: tf.train.SecondOrStepTimer(every_secs=1, every_steps=1)),
    ("One of num_steps or last_step must be specified", lambda: tf.train.StopAtStepHook()),
    ("Only one of num_steps or last_step can be specified",
     lambda: tf.train.StopAtStepHook(num_steps=1, last_step=2)),
    ("You cannot provide both saver and scaffold",
     lambda: tf.train.CheckpointSaverHook("/tmp/unused", save_steps=1, saver=object(),
                                          scaffold=Scaffold())),
    ("exactly one of every_n_steps and every_n_secs should be provided",
     lambda: tf.train.StepCounterHook(every_n_steps=None, every_n_secs=None)),
    ("Exactly one of scaffold or summary_op must be provided",
     lambda: tf.train.SummarySaverHook(save_steps=1, output_dir="/tmp/unused")),
    ("Can not provide both checkpoint_dir and checkpoint_filename_with_path",
     lambda: tf.train.SessionManager().prepare_session(
         "", init_op=tf.no_op(), saver=object(), checkpoint_dir="/a",
         checkpoint_filename_with_path="/b")),
])
def test_argument_errors_carry_tfs_phrase(phrase, make):
    with pytest.raises(ValueError, match=phrase):
        make()


def test_run_after_should_stop_and_non_chief_services_in_tfs_words():
    one = tf.constant(1)
    hooked = HookedSession(tf.Session(), [_stop_hook_after_first_run()])
    hooked.run(one)
    with pytest.raises(RuntimeError, match="Run called even after should_stop requested"):
        hooked.run(one)
    with tf.device("/job:ps/task:0"):
        tf.Variable(1.0)
    sv = tf.train.Supervisor(is_chief=False)
    with pytest.raises(RuntimeError, match="Only chief supervisor can start standard services"):
        sv.start_standard_services(None)


def test_hook_tensor_names_follow_tfs_rules():
    pieces = tf.split(tf.constant([1, 2]), 2, name="pieces")
    single = tf.identity(pieces[0], name="single")
    with pytest.raises(ValueError, match="Name pieces is ambiguous"):
        LoggingTensorHook(["pieces"], every_n_iter=1).begin()
    hook = LoggingTensorHook(["single", "pieces:1"], every_n_iter=1)
    hook.begin()   # an op name stands for its only output; "op:i" names one output
    assert hook._current_tensors["single"] is single
    other = tf.Graph()
    with other.as_default():
        elsewhere = tf.constant(0)
    with pytest.raises(ValueError, match="should have graph attribute that is equal to"):
        LoggingTensorHook([elsewhere], every_n_iter=1).begin()

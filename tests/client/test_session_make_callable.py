"""Session.make_callable as TF 1.x defines it (feed lists, accept_options, early fetch
checks), GraphOptions.infer_shapes in Session.graph_def, and the type checks of
Session(graph=, config=) and Session.list_devices."""
from __future__ import annotations

import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")


def _traced():
    return tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), tf.RunMetadata()


def test_accept_options_passes_run_options_and_fills_run_metadata():
    v = tf.Variable(42.0)
    bump = tf.assign_add(v, 1.0)
    with tf.Session() as sess:
        sess.run(v.initializer)
        tensor_runner = sess.make_callable(v.read_value(), accept_options=True)
        options, metadata = _traced()
        assert tensor_runner(options=options, run_metadata=metadata) == 42.0
        assert len(metadata.step_stats.dev_stats) > 0
        op_runner = sess.make_callable(bump.op, accept_options=True)
        assert op_runner() is None
        assert sess.run(v) == 43.0
        with pytest.raises(TypeError):
            sess.make_callable(v.read_value())(options=options)   # not accepted by default


def test_feed_list_callables_take_feeds_and_run_keywords():
    ph = tf.placeholder(tf.float32)
    plus_one = ph + 1.0
    with tf.Session() as sess:
        by_name = sess.make_callable(plus_one, feed_list=[ph.name])
        options, metadata = _traced()
        assert by_name(41.0, options=options, run_metadata=metadata) == 42.0
        assert len(metadata.step_stats.dev_stats) > 0
        assert sess.make_callable([plus_one, ph], feed_list=(ph,))(1.0) == [2.0, 1.0]
        with pytest.raises(TypeError, match="`feed_list` must be a list or tuple"):
            sess.make_callable(plus_one, feed_list=ph)


def test_unrunnable_fetches_fail_when_the_callable_is_made():
    with tf.Session() as sess:
        with pytest.raises((TypeError, ValueError)):
            sess.make_callable(object())


def test_infer_shapes_adds_output_shapes_to_the_sessions_graph_def():
    tf.constant([[1, 2]], name="row")
    config = tf.ConfigProto(graph_options=tf.GraphOptions(infer_shapes=True))
    with tf.Session(config=config) as sess:
        node = sess.graph_def.node[0]
        assert node.attr["_output_shapes"].list.shape[0].dim[1].size == 2
    with tf.Session() as sess:
        assert "_output_shapes" not in sess.graph_def.node[0].attr


def test_session_arguments_of_the_wrong_type_are_type_errors():
    with pytest.raises(TypeError, match="graph must be a tf.Graph, but got int"):
        tf.Session(graph=37)
    with pytest.raises(TypeError, match="config must be a tf.ConfigProto, but got dict"):
        tf.Session(config={"log_device_placement": True})


@pytest.mark.transports()
def test_list_devices_names_the_sessions_cpu_with_tfs_fields():
    with tf.Session() as sess:
        (device,) = sess.list_devices()
    assert device.name == "/job:localhost/replica:0/task:0/device:CPU:0"
    assert (device.device_type, device.memory_limit_bytes) == ("CPU", 268435456)
    server = tf.train.Server.create_local_server()
    try:
        with tf.Session(server.target) as sess:
            assert [(d.name, d.device_type) for d in sess.list_devices()] == [
                ("/job:local/replica:0/task:0/device:CPU:0", "CPU")]
    finally:
        server.stop()

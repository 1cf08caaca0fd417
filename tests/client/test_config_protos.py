"""ConfigProto's and RunOptions' sub-messages (RPCOptions, GraphOptions/OptimizerOptions/
RewriterConfig, GPUOptions, ThreadPoolOptionProto, DebugOptions/DebugTensorWatch, the
Experimental messages): TF's names and field numbers, so protos serialized by TF parse
here; where they mean something, the session honours them."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.client import session as session_mod
from tensorweave.framework.proto import config_pb2, debug_pb2, rewriter_config_pb2
from suite_markers import DEFAULT_PROTOCOL

pytestmark = pytest.mark.usefixtures("graph")


def _numbers(message_cls):
    return {f.name: f.number for f in message_cls.DESCRIPTOR.fields}


def test_field_numbers_are_tensorflows():
    # The wire format is the contract: these numbers are TF 1.15's config.proto,
    # rewriter_config.proto and debug.proto.
    assert _numbers(config_pb2.RPCOptions) == {
        "use_rpc_for_inprocess_master": 1, "compression_algorithm": 2, "compression_level": 3,
        "cache_rpc_response": 4, "disable_session_connection_sharing": 5}
    config = _numbers(config_pb2.ConfigProto)
    assert (config["session_inter_op_thread_pool"], config["rpc_options"],
            config["isolate_session_state"], config["experimental"]) == (12, 13, 15, 16)
    graph = _numbers(config_pb2.GraphOptions)
    assert (graph["optimizer_options"], graph["infer_shapes"], graph["rewrite_options"]) == \
        (3, 5, 10)
    run = _numbers(config_pb2.RunOptions)
    assert (run["debug_options"], run["experimental"]) == (6, 8)
    assert _numbers(debug_pb2.DebugTensorWatch)["debug_urls"] == 4
    assert _numbers(debug_pb2.DebugOptions)["debug_tensor_watch_opts"] == 4
    rewriter = _numbers(rewriter_config_pb2.RewriterConfig)
    assert (rewriter["constant_folding"], rewriter["optimizers"],
            rewriter["custom_optimizers"]) == (3, 100, 200)
    assert rewriter_config_pb2.RewriterConfig.OFF == 2
    assert config_pb2.OptimizerOptions.L0 == -1


def test_bytes_written_with_tf_numbers_parse_back():
    # A ConfigProto carrying every sub-message round-trips through its serialization.
    config = tf.ConfigProto(
        rpc_options=config_pb2.RPCOptions(use_rpc_for_inprocess_master=True,
                                          compression_algorithm="gzip"),
        gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1,
                                  experimental={"use_unified_memory": True}),
        session_inter_op_thread_pool=[config_pb2.ThreadPoolOptionProto(num_threads=2)],
        experimental={"collective_group_leader": "/job:worker/task:0"})
    config.graph_options.optimizer_options.opt_level = tf.OptimizerOptions.L0
    config.graph_options.rewrite_options.constant_folding = tf.RewriterConfig.OFF
    again = tf.ConfigProto.FromString(config.SerializeToString())
    assert again == config
    assert again.graph_options.rewrite_options.constant_folding == tf.RewriterConfig.OFF


def test_public_names_are_tfs_plus_the_debug_and_rewriter_messages():
    # tf.compat.v1 exports these protos by name; the debug/rewriter ones sit beside them.
    for name in ("ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions",
                 "RunOptions", "RunMetadata", "AttrValue", "GraphDef", "NameAttrList",
                 "NodeDef", "MetaGraphDef", "TensorInfo", "Event", "Summary",
                 "SummaryMetadata", "HistogramProto", "LogMessage", "SessionLog",
                 "DebugTensorWatch", "DebugOptions", "RewriterConfig"):
        assert hasattr(getattr(tf, name), "FromString"), name
    assert tf.DebugTensorWatch is debug_pb2.DebugTensorWatch
    # The same classes the library itself produces, not look-alikes.
    assert type(tf.get_default_graph().as_graph_def()) is tf.GraphDef
    assert tf.SessionLog is tf.summary.SessionLog


def test_session_runs_with_every_sub_message_set():
    config = tf.ConfigProto(rpc_options=config_pb2.RPCOptions(compression_algorithm="gzip"))
    config.graph_options.rewrite_options.constant_folding = tf.RewriterConfig.OFF
    config.graph_options.optimizer_options.do_constant_folding = False
    with tf.Session(config=config) as sess:
        assert sess.run(tf.constant(2) * 3) == 6


def test_debug_watches_with_urls_warn_once_that_nothing_is_dumped(caplog, monkeypatch):
    monkeypatch.setattr(session_mod, "_debug_warned", False)
    c = tf.constant(4.0, name="watched")
    options = tf.RunOptions()
    options.debug_options.debug_tensor_watch_opts.add(
        node_name="watched", debug_ops=["DebugIdentity"], debug_urls=["file:///tmp/dump"])
    caplog.set_level(logging.WARNING, logger="tensorweave")
    with tf.Session() as sess:
        assert sess.run(c, options=options) == 4.0
        assert sess.run(c, options=options) == 4.0
    lines = [r.getMessage() for r in caplog.records if "debug URLs" in r.getMessage()]
    assert len(lines) == 1 and "'watched'" in lines[0] and "file:///tmp/dump" in lines[0]


class _WatchHook(tf.train.SessionRunHook):
    def __init__(self, node):
        self.node, self.seen = node, []

    def before_run(self, run_context):
        options = tf.RunOptions(trace_level=tf.RunOptions.SOFTWARE_TRACE)
        options.debug_options.debug_tensor_watch_opts.add(node_name=self.node,
                                                          debug_ops=["DebugIdentity"])
        return tf.train.SessionRunArgs(None, options=options)

    def after_run(self, run_context, run_values):
        self.seen.append(run_values.options)


def test_monitored_session_merges_debug_watches_caller_first_then_hooks():
    a_const = tf.constant(1, name="a")
    tf.constant(2, name="b")
    tf.constant(3, name="c")
    hook_b, hook_c = _WatchHook("b"), _WatchHook("c")
    with tf.train.MonitoredSession(hooks=[hook_b, hook_c]) as sess:
        caller = tf.RunOptions(timeout_in_ms=5000)
        caller.debug_options.debug_tensor_watch_opts.add(node_name="a")
        assert sess.run(a_const, options=caller) == 1
    merged = hook_c.seen[0]
    assert [w.node_name for w in merged.debug_options.debug_tensor_watch_opts] == \
        ["a", "b", "c"]
    assert (merged.timeout_in_ms, merged.trace_level) == (5000, tf.RunOptions.SOFTWARE_TRACE)


@pytest.mark.transports("grpc", why=DEFAULT_PROTOCOL)
def test_use_rpc_for_inprocess_master_goes_through_a_transport():
    server = tf.train.Server.create_local_server()
    try:
        rpc = tf.ConfigProto(rpc_options=config_pb2.RPCOptions(
            use_rpc_for_inprocess_master=True))
        x = tf.placeholder(tf.float32, [None])
        y = x * 2.0
        with tf.Session(server.target, config=rpc) as sess:
            # The session sent its graph to the master as a GraphDef (no shared Graph).
            assert sess._runtime._sent is not None
            big = np.arange(300000, dtype=np.float32)
            np.testing.assert_array_equal(sess.run(y, {x: big}), big * 2.0)
        with tf.Session(server.target) as sess:
            assert sess._runtime._sent is None  # the default: the master object directly
    finally:
        server.stop()


def test_run_options_pick_one_of_the_sessions_inter_op_pools():
    c = tf.constant(20.0)
    config = tf.ConfigProto()
    config.session_inter_op_thread_pool.add(num_threads=1)
    config.session_inter_op_thread_pool.add(num_threads=1, global_name="t1")
    with tf.Session(config=config) as sess:
        for pool in (-1, 0, 1):
            assert sess.run(c, options=tf.RunOptions(inter_op_thread_pool=pool)) == 20.0
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Invalid inter_op_thread_pool: 2"):
            sess.run(c, options=tf.RunOptions(inter_op_thread_pool=2))
    with tf.Session() as sess:   # one default pool
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="Invalid inter_op_thread_pool: 1"):
            sess.run(c, options=tf.RunOptions(inter_op_thread_pool=1))

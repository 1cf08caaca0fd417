"""RunOptions tracing: RunMetadata.step_stats / partition_graphs, and the Chrome timeline.

Specification: TF 1.x session_test (testPerStepTrace, testRunOptionsRunMetadata,
testOutputPartitionGraphs) and client/timeline_test.py; our own tests.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.client.timeline import Timeline, parse_label
from tensorweave.framework.proto.config_pb2 import StepStats

pytestmark = pytest.mark.usefixtures("graph")

LOCAL_CPU = "/job:localhost/replica:0/task:0/device:CPU:0"
FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def _nodes(md):
    return {n.node_name: n for d in md.step_stats.dev_stats for n in d.node_stats}


def test_untraced_run_leaves_run_metadata_empty():
    c = tf.constant(1.0)
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(c, run_metadata=md)
        assert not md.HasField("step_stats")
        sess.run(c, options=tf.RunOptions(), run_metadata=md)
        assert len(md.step_stats.dev_stats) == 0


def test_full_trace_records_every_executed_node_with_timings_and_labels():
    x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.constant([1.0, 2.0], name="a")
    y = tf.add(x, a, name="y")
    z = tf.reduce_sum(y * 2.0, name="z")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(z, {x: [1.0, 1.0]}, options=FULL, run_metadata=md) == 10.0
    assert [d.device for d in md.step_stats.dev_stats] == [LOCAL_CPU]
    nodes = _nodes(md)
    assert {"a", "y", "z"} <= set(nodes) and "x" not in nodes  # fed: not executed
    y_stats = nodes["y"]
    assert y_stats.timeline_label == "y = AddV2(x, a)"
    assert y_stats.all_start_micros > 1_500_000_000 * 10**6  # epoch microseconds
    assert y_stats.op_start_rel_micros <= y_stats.op_end_rel_micros <= \
        y_stats.all_end_rel_micros
    assert y_stats.thread_id > 0
    (out,) = y_stats.output
    assert out.slot == 0 and out.tensor_description.dtype == tf.float32.as_datatype_enum
    assert [d.size for d in out.tensor_description.shape.dim] == [2]
    assert out.tensor_description.allocation_description.requested_bytes == 8
    assert y_stats.memory[0].total_bytes == 8
    # Nodes start in dependency order: a producer never starts after its consumer.
    assert nodes["a"].all_start_micros <= nodes["y"].all_start_micros <= \
        nodes["z"].all_start_micros


def test_trace_is_per_run_and_replaces_previous_metadata():
    v = tf.Variable(3.0, name="v")
    inc = tf.assign_add(v, 1.0, name="inc")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(v.initializer, options=FULL, run_metadata=md)
        assert "v/Assign" in _nodes(md)
        sess.run(inc, options=FULL, run_metadata=md)
        assert "v/Assign" not in _nodes(md) and "inc" in _nodes(md)
        assert sess.run(v) == 4.0  # traced steps really ran
        sess.run(inc)  # the untraced plan is still the compiled one and still works
        assert sess.run(v) == 5.0


def test_trace_of_async_queue_ops_and_a_failing_node():
    q = tf.FIFOQueue(2, tf.float32, name="q")
    enq = q.enqueue([7.0], name="enq")
    deq = q.dequeue(name="deq")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(enq, options=FULL, run_metadata=md)
        assert sess.run(deq, options=FULL, run_metadata=md) == 7.0
        assert "deq" in _nodes(md)
        bad = tf.placeholder(tf.float32, name="bad")
        check = tf.debugging.assert_positive(bad, name="check") \
            if hasattr(tf, "debugging") else tf.assert_positive(bad, name="check")
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(check, {bad: -1.0}, options=FULL, run_metadata=tf.RunMetadata())


def test_output_partition_graphs_local():
    y = tf.identity(tf.constant(1.0, name="c"), name="y")
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(y, options=tf.RunOptions(output_partition_graphs=True), run_metadata=md)
    (gd,) = md.partition_graphs
    assert sorted(n.name for n in gd.node) == ["c", "y"]
    assert {n.device for n in gd.node} == {LOCAL_CPU}
    assert len(md.step_stats.dev_stats) == 0  # graphs asked for, no trace


def test_traced_cond_records_branch_ops():
    p = tf.placeholder(tf.bool, name="p")
    r = tf.cond(p, lambda: tf.constant(1.0, name="yes"), lambda: tf.constant(2.0, name="no"))
    md = tf.RunMetadata()
    with tf.Session() as sess:
        assert sess.run(r, {p: True}, options=FULL, run_metadata=md) == 1.0
    labels = [n.node_name for n in md.step_stats.dev_stats[0].node_stats]
    assert any("yes" in name for name in labels)


# ---- timeline ----------------------------------------------------------------------
def _events(trace_json):
    trace = json.loads(trace_json)
    assert all("ph" in e for e in trace["traceEvents"])
    return trace["traceEvents"]


def test_timeline_has_a_process_per_device_and_an_event_per_node():
    c1 = tf.constant(1.0, name="const1")
    c2 = tf.constant(2.0, name="const2")
    result = tf.add(c1, c2, name="sum") + c1 * c2
    md = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(result, options=FULL, run_metadata=md)
    for flow in (True, False):
        for mem in (True, False):
            events = _events(Timeline(md.step_stats).generate_chrome_trace_format(
                show_dataflow=flow, show_memory=mem))
            procs = [e["args"]["name"] for e in events if e["name"] == "process_name"]
            assert procs[0] == LOCAL_CPU + " Compute"
            ops = {e["args"]["name"]: e for e in events if e["ph"] == "X"}
            assert set(_nodes(md)) == set(ops)
            assert ops["sum"]["name"] == "AddV2" and ops["sum"]["args"]["input0"] == "const1"
            assert any(e["ph"] == "C" for e in events) == mem
    analysis = Timeline(md.step_stats).analyze_step_stats()
    peak = analysis.allocator_maximums["cpu"]
    assert peak.num_bytes >= 8 and peak.timestamp > 0 and "const1" in peak.tensors


def test_timeline_accepts_rpc_records_and_rejects_non_step_stats():
    stats = StepStats()
    node = stats.dev_stats.add(device="/job:worker/replica:0/task:0/cpu:0").node_stats.add()
    node.node_name, node.all_start_micros, node.op_end_rel_micros = "RecvTensor", 12345, 42
    node.timeline_label = "[1024B] edge_1_w/read from /job:ps/task:0 to /job:worker/task:0"
    (event,) = [e for e in _events(Timeline(stats).generate_chrome_trace_format())
                if e["ph"] == "X"]
    assert event["name"] == "RecvTensor" and event["args"]["bytes"] == 1024
    assert event["dur"] == 42
    assert parse_label(node) == ("RecvTensor", "RecvTensor", [])
    with pytest.raises(TypeError, match="StepStats"):
        Timeline("not stats")


@pytest.mark.cluster_shape(ps=1, workers=1)
def test_distributed_trace_merges_every_task_and_links_send_to_recv(local_cluster):
    cluster = local_cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.array([1.0, 2.0], np.float32), name="v")
    with tf.device("/job:worker/task:0"):
        y = tf.reduce_sum(v * 3.0, name="y")
    md = tf.RunMetadata()
    opts = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                         output_partition_graphs=True)
    with tf.Session(cluster.target("worker", 0)) as sess:
        sess.run(v.initializer)
        assert sess.run(y, options=opts, run_metadata=md) == 9.0
    devices = {d.device for d in md.step_stats.dev_stats}
    assert devices == {"/job:ps/replica:0/task:0/device:CPU:0",
                       "/job:worker/replica:0/task:0/device:CPU:0"}
    nodes = _nodes(md)
    assert "v/read" in nodes and "y" in nodes
    sends = [n for n in nodes if nodes[n].timeline_label.split(" = ")[1].startswith("_Send")]
    recvs = [n for n in nodes if nodes[n].timeline_label.split(" = ")[1].startswith("_Recv")]
    assert sends and recvs
    assert len(md.partition_graphs) == 2
    events = _events(Timeline(md.step_stats).generate_chrome_trace_format(show_dataflow=True))
    starts = [e for e in events if e["ph"] == "s"]
    ends = [e for e in events if e["ph"] == "t"]
    assert starts and {e["id"] for e in starts} == {e["id"] for e in ends}
    assert starts[0]["pid"] != ends[0]["pid"]  # the arrow crosses devices

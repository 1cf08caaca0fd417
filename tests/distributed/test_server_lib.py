"""What TF 1.x's server_lib tests check that a TF1 user can observe, in our own tests.

Spec files: tensorflow/python/training/server_lib_test.py,
server_lib_sparse_job_test.py, server_lib_same_variables_clear_test.py,
server_lib_same_variables_no_clear_test.py,
server_lib_same_variables_clear_container_test.py and
server_lib_multiple_containers_test.py. ClusterSpec accessors and equality are
in test_cluster_spec.py; sessions spread over several tasks in test_distributed.py.

Deliberate differences are named in the tests (`..._differs_from_tf`):
errors at Server construction and unknown targets are ValueErrors raised at
once (TF: gRPC status errors, NotFoundError).
"""

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.protocol.cluster_pb2 import ServerDef
from tensorweave.framework import errors
from tensorweave.testing.cluster import LocalCluster
from session_helpers import run_then_close
from suite_markers import PORT, TASK_PROCESSES

pytestmark = pytest.mark.usefixtures("graph")


@pytest.fixture
def server(transport):
    """An in-process local server of the test's own, over the test's transport (one shared
    by the module, as TF's cached server is, would carry state between transports)."""
    s = tf.train.Server.create_local_server()
    yield s
    s.stop()


@pytest.fixture
def remote(transport, per_transport):
    """A server in another process, over the test's transport (one per transport, shared by
    the module's tests)."""
    return per_transport.get(transport, lambda: LocalCluster(ps=0, workers=1)).target("worker", 0)


def _matmul():
    return tf.matmul(tf.constant([[2, 1]]), tf.constant([[1], [2]]))


# ---- server_lib_test.py: GrpcServerTest ----------------------------------------------

@pytest.mark.transports()
def test_run_step_on_a_local_server(server):
    with tf.Session(server.target) as sess:
        assert sess.run(_matmul()).tolist() == [[4]]


@pytest.mark.transports()
def test_two_sessions_on_one_target(server):
    e = _matmul()
    s1, s2 = tf.Session(server.target), tf.Session(server.target)
    assert s1.run(e).tolist() == [[4]] and s2.run(e).tolist() == [[4]]
    s1.close()
    s2.close()


@pytest.mark.transports()
def test_reset_of_an_unknown_container_keeps_variables_but_closes_sessions(server):
    with tf.container("spec_c0"):
        v0 = tf.Variable(1.0, name="v0")
    v1 = tf.Variable(2.0, name="v1")
    sess = tf.Session(server.target)
    sess.run(tf.global_variables_initializer())
    tf.Session.reset(server.target, ["spec_no_such_container"])
    with pytest.raises(errors.AbortedError, match="not found"):
        sess.run(v0)  # the master's sessions were closed
    sess = tf.Session(server.target)
    assert sess.run([v0, v1]) == [1.0, 2.0]
    sess.close()


def test_reset_of_a_target_nothing_serves():
    # As TF: the master is waited for until the config's operation timeout, then
    # DeadlineExceededError.
    with pytest.raises(errors.DeadlineExceededError):
        tf.Session.reset("grpc://localhost:0", ["c"],
                         config=tf.ConfigProto(operation_timeout_in_ms=5))


def test_unknown_target_is_not_found_naming_it():
    # As TF: NotFoundError (no session factory for the target), and ours names it.
    with pytest.raises(tf.errors.NotFoundError, match="'nonexistent'"):
        tf.Session.reset("nonexistent", ["c"])
    with pytest.raises(tf.errors.NotFoundError, match="'nonexistent'"):
        tf.Session("nonexistent")


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_large_constant_fetch_and_feed_over_grpc(remote):
    # 10000 x 3000 float32 = 120 MB each way, as in TF's test.
    with tf.Session(remote) as sess:
        c = tf.constant(np.full([10000, 3000], 0.5, np.float32))
        assert sess.run(tf.shape(c)).tolist() == [10000, 3000]
        fetched = sess.run(tf.fill([10000, 3000], 0.5))
        assert fetched.shape == (10000, 3000) and np.all(fetched == 0.5)
        p = tf.placeholder(tf.float32, [10000, 3000])
        lo, hi = sess.run([tf.reduce_min(p), tf.reduce_max(p)], {p: fetched})
        assert lo == 0.5 and hi == 0.5


@pytest.mark.parametrize("where", ["in_process", "over_grpc"])
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_close_cancels_a_blocked_dequeue(server, remote, where):
    sess = tf.Session(server.target if where == "in_process" else remote)
    q = tf.FIFOQueue(10, [tf.float32], shared_name=f"close_cancels_{where}")
    sess.run(q.enqueue(37.0))
    dequeue = q.dequeue()
    assert sess.run(dequeue) == 37.0
    alive, error = run_then_close(sess, dequeue, wait=0.5, join=30)
    assert not alive
    assert isinstance(error, errors.CancelledError), error
    assert "closed" in str(error)


@pytest.mark.transports()
def test_interactive_session_on_a_target(server):
    sess = tf.InteractiveSession(server.target)
    try:
        assert tf.constant(42.0).eval() == 42.0
    finally:
        sess.close()


@pytest.mark.transports()
def test_default_session_config_from_create_local_server_and_server_def():
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1))
    s = tf.train.Server.create_local_server(config=config, start=False)
    assert s.server_def.default_session_config.gpu_options.per_process_gpu_memory_fraction \
        == pytest.approx(0.1)
    sd = ServerDef(cluster=tf.train.ClusterSpec({"localhost": ["localhost:0"]}).as_cluster_def(),
                   job_name="localhost", task_index=0, protocol="grpc")
    s = tf.train.Server(sd, config=config, start=False)
    assert s.server_def.default_session_config.gpu_options.per_process_gpu_memory_fraction \
        == pytest.approx(0.1)


@pytest.mark.transports()
def test_address_without_port_is_invalid_argument_as_in_tf():
    # TF: InvalidArgumentError mentioning "port" when the server starts. Here the same
    # class, with a message naming the address.
    with pytest.raises(tf.errors.InvalidArgumentError, match="port"):
        tf.train.Server({"local": ["localhost"]}, job_name="local", task_index=0)


@pytest.mark.parametrize("where", ["in_process", "over_grpc"])
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_run_timeout_is_deadline_exceeded(server, remote, where):
    q = tf.FIFOQueue(1, [tf.float32], shared_name=f"never_filled_{where}")
    with tf.Session(server.target if where == "in_process" else remote) as sess:
        with pytest.raises(errors.DeadlineExceededError):
            sess.run(q.dequeue(), options=tf.RunOptions(timeout_in_ms=1000))


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_second_server_on_the_same_port_is_unknown_error_as_in_tf(server):
    # TF: UnknownError ("Could not start gRPC server"). Here the same class, with a
    # message naming the port and what to do.
    with pytest.raises(tf.errors.UnknownError, match="in use"):
        tf.train.Server({"local_2": [server.target[len("grpc://"):]]})


@pytest.mark.transports()
def test_graph_extended_after_queue_runners_start(server):
    with tf.Session(server.target) as sess:
        queue = tf.train.input_producer(tf.constant([0.0]))
        assert queue is not None
        var = tf.Variable(1.0, trainable=False, name="var")
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        assert sess.run(var.assign(3.0)) == 3.0
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=5)


@pytest.mark.transports()
def test_isolate_session_state_and_shared_state(server):
    init = tf.placeholder(tf.int32)
    v = tf.Variable(init, validate_shape=False, name="iso_spec_v")
    shared = [tf.Session(server.target, config=tf.ConfigProto(isolate_session_state=False))
              for _ in range(2)]
    isolated = [tf.Session(server.target, config=tf.ConfigProto(isolate_session_state=True))
                for _ in range(2)]
    for s in shared + isolated:
        with pytest.raises(errors.FailedPreconditionError):
            s.run(v)
    shared[0].run(v.initializer, {init: 86})
    assert shared[1].run(v) == 86
    for s in isolated:
        with pytest.raises(errors.FailedPreconditionError):
            s.run(v)
    shared[1].run(v.initializer, {init: [86, 99]})  # validate_shape=False: shape may change
    assert shared[0].run(v).tolist() == [86, 99]
    isolated[0].run(v.initializer, {init: 37})
    assert isolated[0].run(v) == 37 and shared[0].run(v).tolist() == [86, 99]
    with pytest.raises(errors.FailedPreconditionError):
        isolated[1].run(v)
    isolated[1].run(v.initializer, {init: [19, 86]})
    assert isolated[1].run(v).tolist() == [19, 86] and isolated[0].run(v) == 37
    for s in shared + isolated:
        s.close()


@pytest.mark.transports()
def test_shared_state_outlives_the_graph_that_made_it(server):
    sharing = tf.ConfigProto(isolate_session_state=False)
    with tf.Graph().as_default():
        w = tf.Variable([1, 2, 3], name="w_outlives")
        with tf.Session(server.target, config=sharing) as sess:
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(w)
            sess.run(w.initializer)
    with tf.Graph().as_default():
        w = tf.Variable([4, 5, 6], name="w_outlives")
        with tf.Session(server.target, config=sharing) as sess:
            assert sess.run(w).tolist() == [1, 2, 3]  # the server kept the old value
            sess.run(w.initializer)
            assert sess.run(w).tolist() == [4, 5, 6]
    with tf.Graph().as_default():
        w = tf.Variable(86, name="w_outlives")
        with tf.Session(server.target, config=sharing) as sess:
            with pytest.raises(errors.InvalidArgumentError, match="shapes"):
                sess.run(w.initializer)  # the shared value has shape [3]
    with tf.Graph().as_default():
        w = tf.Variable(37, name="w_outlives")
        with tf.Session(server.target, config=tf.ConfigProto(isolate_session_state=True)) \
                as sess:
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(w)
            sess.run(w.initializer)
            assert sess.run(w) == 37


# ---- server_lib_test.py: ServerDefTest ------------------------------------------------

@pytest.mark.parametrize("cluster, job, task", [
    ({"local": ["localhost:2222"]}, "local", 0),
    ({"local": ["localhost:2222", "localhost:2223"]}, "local", 1),
    ({"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]},
     "worker", 2),
    ({"ps": ["ps0:2222", "ps1:2222"], "worker": {0: "w0:2222", 2: "w2:2222"}}, "worker", 2),
])
def test_server_def_holds_cluster_job_task_and_protocol(cluster, job, task):
    cluster_def = tf.train.ClusterSpec(cluster).as_cluster_def()
    sd = ServerDef(cluster=cluster_def, job_name=job, task_index=task, protocol="grpc")
    assert (sd.job_name, sd.task_index, sd.protocol) == (job, task, "grpc")
    jobs = {j.name: dict(j.tasks) for j in sd.cluster.job}
    expected = {j: (dict(enumerate(t)) if isinstance(t, list) else t)
                for j, t in cluster.items()}
    assert jobs == expected
    assert tf.train.ClusterSpec(cluster_def).as_cluster_def() == cluster_def  # round trip


# ---- the one-test files ---------------------------------------------------------------

@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_sparse_job_task_37_on_a_free_port():
    """server_lib_sparse_job_test.py: a job whose only task is 37, on "localhost:0"."""
    s = tf.train.Server({"local": {37: "localhost:0"}})
    try:
        assert not s.target.endswith(":0")  # as TF: the target names the bound port
        with tf.device("/job:local/task:37"):
            a = tf.constant(1.0)
        with tf.Session(s.target) as sess:
            assert sess.run(a) == 1.0
    finally:
        s.stop()


@pytest.mark.transports()
def test_same_variables_no_clear(server):
    """server_lib_same_variables_no_clear_test.py: a second session finds the values."""
    with tf.Session(server.target) as sess:
        v0 = tf.Variable([[2, 1]], name="nc_v0")
        v1 = tf.Variable([[1], [2]], name="nc_v1")
        sess.run([v0.initializer, v1.initializer])
        assert sess.run(tf.matmul(v0, v1)).tolist() == [[4]]
    with tf.Session(server.target) as sess:
        g = tf.get_default_graph()
        new = tf.matmul(g.get_tensor_by_name("nc_v0:0"), g.get_tensor_by_name("nc_v1:0"))
        assert sess.run(new).tolist() == [[4]]


@pytest.mark.transports()
def test_same_variables_clear():
    """server_lib_same_variables_clear_test.py: reset aborts sessions, frees variables."""
    s = tf.train.Server.create_local_server()
    try:
        v0 = tf.Variable([[2, 1]], name="v0")
        v1 = tf.Variable([[1], [2]], name="v1")
        v2 = tf.matmul(v0, v1)
        sess_1, sess_2 = tf.Session(s.target), tf.Session(s.target)
        sess_1.run(tf.global_variables_initializer())
        assert sess_1.run(v2).tolist() == [[4]] and sess_2.run(v2).tolist() == [[4]]
        tf.Session.reset(s.target)
        with pytest.raises(errors.AbortedError):
            sess_2.run(v2)
        sess_2 = tf.Session(s.target)
        with pytest.raises(errors.FailedPreconditionError):
            sess_2.run(v2)
        sess_2.run(tf.global_variables_initializer())
        assert sess_2.run(v2).tolist() == [[4]]
        sess_2.close()
    finally:
        s.stop()


@pytest.mark.transports()
def test_same_variables_clear_container_named_after_the_job():
    """server_lib_same_variables_clear_container_test.py: a task's default container is
    its job's name, so resetting "local0" clears only server 0's variables."""
    server0 = tf.train.Server({"local0": ["localhost:0"]}, protocol="grpc", start=True)
    server1 = tf.train.Server({"local1": ["localhost:0"]}, protocol="grpc", start=True)
    try:
        v0 = tf.Variable(1.0, name="v0")
        v1 = tf.Variable(2.0, name="v0")
        sess_0, sess_1 = tf.Session(server0.target), tf.Session(server1.target)
        sess_0.run(v0.initializer)
        sess_1.run(v1.initializer)
        tf.Session.reset(server0.target, ["local0"])
        sess_0 = tf.Session(server0.target)
        with pytest.raises(errors.FailedPreconditionError):
            sess_0.run(v0)
        sess_0.run(v0.initializer)
        assert sess_1.run(v1) == 2.0
        tf.Session.reset(server1.target, ["local1"])
        sess_1 = tf.Session(server1.target)
        with pytest.raises(errors.FailedPreconditionError):
            sess_1.run(v1)
        assert sess_0.run(v0) == 1.0
    finally:
        server0.stop()
        server1.stop()


@pytest.mark.transports()
def test_multiple_containers():
    """server_lib_multiple_containers_test.py: resetting one container leaves the other."""
    with tf.container("test0"):
        v0 = tf.Variable(1.0, name="v0")
    with tf.container("test1"):
        v1 = tf.Variable(2.0, name="v0")
    assert v0.op.get_attr("container") == "test0" and v1.op.get_attr("container") == "test1"
    s = tf.train.Server.create_local_server()
    try:
        sess = tf.Session(s.target)
        sess.run(tf.global_variables_initializer())
        assert sess.run([v0, v1]) == [1.0, 2.0]
        tf.Session.reset(s.target, ["test0"])
        with pytest.raises(errors.AbortedError):
            sess.run(v1)
        sess = tf.Session(s.target)
        with pytest.raises(errors.FailedPreconditionError):
            sess.run(v0)
        assert sess.run(v1) == 2.0
    finally:
        s.stop()


def test_container_scope_leaves_an_explicit_container_alone():
    with tf.container("outer"):
        q = tf.FIFOQueue(1, [tf.float32])
        v = tf.Variable(1.0)
        c = tf.constant(1.0)  # stateless: no container attr to set
        with tf.container(""):
            w = tf.Variable(1.0)
    assert q.queue_ref.op.get_attr("container") == "outer"
    assert v.op.get_attr("container") == "outer" and w.op.get_attr("container") == ""
    assert "container" not in c.op.node_def.attr


# ---- server_lib_test.py: ClusterSpecTest (the rest is in test_cluster_spec.py) -------

@pytest.mark.parametrize("cluster", [
    {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]},
    {"ps": ["ps0:2222", "ps1:2222"], "worker": []},                    # a job with no task
])
def test_cluster_spec_forms_are_equivalent(cluster):
    spec = tf.train.ClusterSpec(cluster)
    expected = spec.as_cluster_def()
    assert [j.name for j in expected.job] == sorted(cluster)
    for other in (spec, expected, spec.as_dict()):
        assert tf.train.ClusterSpec(other).as_cluster_def() == expected


def test_cluster_specs_differ_by_task_order_job_name_and_address():
    ClusterSpec = tf.train.ClusterSpec
    assert ClusterSpec({"job": ["h:2222", "h:2223"]}) != ClusterSpec({"job": ["h:2223", "h:2222"]})
    assert ClusterSpec({"job1": ["h:2222"]}) != ClusterSpec({"job2": ["h:2222"]})
    assert ClusterSpec({"job": ["h:2222"]}) != ClusterSpec({"job": ["h:2223"]})
    assert ClusterSpec({}) != ClusterSpec({"job": ["h:2223"]})
    assert ClusterSpec({}) == ClusterSpec({})

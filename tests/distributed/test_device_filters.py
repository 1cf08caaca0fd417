"""ConfigProto.device_filters with TF 1.x semantics.

A filter is a partial device spec: a device passes when every field the filter
names (job, replica, task, device type, index) equals the device's. The idiom of
TF's distributed tutorials and mnist_replica.py,

    config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % i])

limits what a worker's session places on, lists, waits for and contacts.

Deliberate difference: without filters TF 1.x waits at session creation for
every task of the cluster; tensorweave waits only for the tasks a step uses,
so a missing task matters only to the steps that need it.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed import Server
from tensorweave.framework import errors
from tensorweave.framework.device import DeviceSpec, device_matches_filters, parse_filters
from tensorweave.runtime.placer import Placer
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import TASK_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")

W0 = "/job:worker/replica:0/task:0/device:CPU:0"
W1 = "/job:worker/replica:0/task:1/device:CPU:0"
PS0 = "/job:ps/replica:0/task:0/device:CPU:0"


# ---- matching ---------------------------------------------------------------------

@pytest.mark.parametrize("device, filters, expected", [
    (W0, ["/job:ps", "/job:worker/task:0"], True),      # the idiom, own task
    (W1, ["/job:ps", "/job:worker/task:0"], False),     # ... another worker
    (PS0, ["/job:ps", "/job:worker/task:0"], True),     # ... any ps task
    (W0, ["/job:worker"], True),
    (W0, ["/job:work"], False),                         # no prefix matching of names
    ("/job:worker/replica:0/task:10/device:CPU:0", ["/job:worker/task:1"], False),
    (W0, ["/job:worker/replica:0"], True),
    (W0, ["/job:worker/replica:1"], False),
    (W0, ["/cpu:0"], True),                             # device type and index only
    (W0, ["/device:CPU:*"], True),
    (W0, ["/job:worker/device:GPU:0"], False),
    (W0, ["/job:worker/cpu:1"], False),
    (W0, [], True),                                     # no filters: everything passes
    (W0, ["/job:ps", "/task:0"], True),                 # any one filter suffices
])
def test_a_filter_matches_the_fields_it_names(device, filters, expected):
    assert device_matches_filters(device, filters) is expected


def test_device_spec_matches_is_field_by_field():
    spec = DeviceSpec.from_string("/job:worker/task:1")
    assert spec.matches(DeviceSpec.from_string(W1))
    assert not spec.matches(W0)
    assert DeviceSpec().matches(W0)  # an empty spec names nothing: matches all


def test_a_bad_filter_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"Invalid device filter '/job:ps/tsk:0'"):
        parse_filters(["/job:ps", "/job:ps/tsk:0"])
    with pytest.raises(ValueError, match=r"'/job:worker/task:x'"):
        device_matches_filters(W0, ["/job:worker/task:x"])


# ---- the placer --------------------------------------------------------------------

TASKS = {"ps": [0, 1], "worker": [0, 1, 2]}


def _placer(filters, job="worker", task=1):
    return Placer(TASKS, job, task, device_filters=parse_filters(filters))


def test_unconstrained_ops_go_to_a_device_the_filters_allow():
    # The master is worker 1; its own task passes the idiom, so ops stay home.
    assert _placer(["/job:ps", "/job:worker/task:1"]).resolve("") == W1
    # Filters that exclude the master's task send unconstrained ops to an allowed one.
    assert _placer(["/job:ps"]).resolve("") == PS0
    assert _placer(["/job:worker/task:2"]).resolve("") == \
        "/job:worker/replica:0/task:2/device:CPU:0"
    assert _placer(["/job:ps/task:1"]).resolve("/cpu:0") == \
        "/job:ps/replica:0/task:1/device:CPU:0"


def test_a_job_without_task_is_completed_with_an_allowed_task():
    assert _placer(["/job:ps/task:1", "/job:worker"]).resolve("/job:ps") == \
        "/job:ps/replica:0/task:1/device:CPU:0"
    assert _placer(["/job:worker/task:2"], task=0).resolve("/job:worker") == \
        "/job:worker/replica:0/task:2/device:CPU:0"
    # Without filters the old rule holds: the own task for the own job, else task 0.
    assert _placer([]).resolve("/job:worker") == W1
    assert _placer([]).resolve("/job:ps") == PS0


def test_a_fully_named_device_is_kept_for_the_master_to_report():
    assert _placer(["/job:ps"]).resolve("/job:worker/task:0") == W0


# ---- sessions on a real cluster -----------------------------------------------------

@pytest.fixture
def half_cluster():
    """ps 0 as a process, worker 0 in this process, worker 1 never started."""
    spec = cluster_dict(ps=1, workers=2)
    with LocalCluster(spec=spec, in_process=(("worker", 0), ("worker", 1))):
        worker0 = Server(spec, job_name="worker", task_index=0)
        try:
            yield worker0
        finally:
            worker0.stop()


def _idiom(task_index=0, **kwargs):
    return tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:%d" % task_index],
                          **kwargs)


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_idiom_trains_while_another_worker_is_down(half_cluster):
    """mnist_replica.py's session config: worker 0 neither waits for nor contacts
    worker 1, which never started, and trains with MonitoredTrainingSession."""
    cluster = half_cluster.cluster
    with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                  cluster=cluster)):
        x = tf.placeholder(tf.float32, [None, 2])
        w = tf.get_variable("w", [2, 1], initializer=tf.zeros_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    hooks = [tf.train.StopAtStepHook(last_step=20)]
    with tf.train.MonitoredTrainingSession(master=half_cluster.target, is_chief=True,
                                           config=_idiom(0, operation_timeout_in_ms=20000),
                                           hooks=hooks) as sess:
        while not sess.should_stop():
            _, last = sess.run([train, step], {x: np.ones([4, 2], np.float32)})
    assert last == 20
    assert w.device == "/job:ps/task:0"


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_list_devices_shows_only_what_the_filters_allow(half_cluster):
    with tf.Session(half_cluster.target, config=_idiom(0)) as sess:
        assert [d.name for d in sess.list_devices()] == [PS0, W0]
    with tf.Session(half_cluster.target) as sess:  # no filters: the whole cluster
        assert [d.name for d in sess.list_devices()] == [PS0, W0, W1]
    # over gRPC, to the ps task's master in its own process, before any step
    ps_target = "grpc://" + half_cluster.cluster.task_address("ps", 0)
    cfg = tf.ConfigProto(device_filters=["/job:worker/task:1", "/job:ps"])
    with tf.Session(ps_target, config=cfg) as sess:
        assert [d.name for d in sess.list_devices()] == [PS0, W1]


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_a_step_on_a_filtered_out_device_names_device_and_filters(half_cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(1.0, name="on_worker1")
    with tf.Session(half_cluster.target, config=_idiom(0)) as sess:
        with pytest.raises(errors.InvalidArgumentError) as info:
            sess.run(c)
    msg = str(info.value)
    assert W1 in msg and "on_worker1" in msg
    assert "['/job:ps', '/job:worker/task:0']" in msg and "device_filters" in msg


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_unconstrained_op_runs_on_the_sessions_own_task(half_cluster, capfd):
    # As in TF, the filters never exclude the session's own task (worker 0 here), and a
    # free op goes there first (more in tests/distributed/test_device_filters_own_task.py).
    c = tf.constant(3.0, name="free_const")
    d = c * 2.0
    cfg = tf.ConfigProto(device_filters=["/job:ps"], log_device_placement=True)
    with tf.Session(half_cluster.target, config=cfg) as sess:
        assert sess.run(d) == 6.0
    err = capfd.readouterr().err
    assert f"free_const: (Const): {W0}" in err


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_a_bad_filter_fails_session_creation_naming_it(half_cluster):
    c = tf.constant(1.0)
    with pytest.raises(errors.InvalidArgumentError, match=r"'/job:ps/tsk:0'"):
        with tf.Session(half_cluster.target,
                        config=tf.ConfigProto(device_filters=["/job:ps/tsk:0"])) as sess:
            sess.run(c)


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_reset_with_device_filters_clears_only_the_filtered_tasks(half_cluster):
    with tf.device("/job:ps/task:0"):
        on_ps = tf.Variable(1.0, name="kept_on_ps")
    with tf.device("/job:worker/task:0"):
        on_worker = tf.Variable(2.0, name="cleared_on_worker")
    target = half_cluster.target
    with tf.Session(target, config=_idiom(0)) as sess:
        sess.run([on_ps.initializer, on_worker.initializer])
    # worker 1 is down: a reset filtered to worker 0 must not try to reach it
    tf.Session.reset(target, config=tf.ConfigProto(device_filters=["/job:worker/task:0"]))
    with tf.Session(target, config=_idiom(0)) as sess:
        assert sess.run(on_ps) == 1.0
        with pytest.raises(errors.FailedPreconditionError, match="cleared_on_worker"):
            sess.run(on_worker)

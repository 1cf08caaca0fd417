"""ExponentialMovingAverage against TF 1.x's moving_averages_test.py (our own tests).

Deliberate difference: the group op returned by apply() is named
"<name>/<name>" (TF 1.x: "<name>"); `a + b` is named "AddV2" here (TF 1.x: "add").
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train.moving_averages import assign_moving_average

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_assign_moving_average_without_zero_debias():
    var = tf.Variable([10.0, 11.0])
    update = assign_moving_average(var, [1.0, 2.0], 0.25, zero_debias=False)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(update), [10 * 0.25 + 0.75, 11 * 0.25 + 1.5])


def test_assign_moving_average_with_zero_debias_is_unbiased_from_the_first_step():
    var = tf.Variable([0.0, 0.0])
    value = tf.placeholder(tf.float32, [2])
    update = assign_moving_average(var, value, 0.25)  # zero_debias defaults to True
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(update, {value: [1.0, 2.0]}), [1.0, 2.0])
        # biased = 0.25*[0.75, 1.5] + 0.75*[3, 4]; unbiased = biased / (1 - 0.25**2)
        biased = 0.25 * np.array([0.75, 1.5]) + 0.75 * np.array([3.0, 4.0])
        np.testing.assert_allclose(sess.run(update, {value: [3.0, 4.0]}),
                                   biased / (1 - 0.25 ** 2), rtol=1e-6)


def _check_decay(ema, dk, dim):
    def rep(x):
        return np.full([dim] if dim else [], x, np.float32)
    v0 = tf.Variable(rep(10.0), name="v0")
    v1 = tf.Variable(rep(30.0), name="v1")
    t = v0 + v1
    update = ema.apply([v0, v1, t])
    avg0, avg1, avg2 = (ema.average(x) for x in (v0, v1, t))
    assert not [v for v in tf.trainable_variables() if v.op in (avg0.op, avg1.op, avg2.op)]
    assert {avg0.op, avg1.op, avg2.op} <= {v.op for v in tf.global_variables()}
    assert [v.op for v in tf.moving_average_variables()] == [v0.op, v1.op]  # no tensors

    def scale(n):
        return (1 - dk ** n) if ema._zero_debias else 1.0
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run([avg0, avg1, avg2])
        np.testing.assert_allclose(got, [rep(10.0), rep(30.0), rep(0.0)])
        sess.run(update)
        np.testing.assert_allclose(sess.run(avg2), rep(40.0 * (1 - dk) / scale(1)), rtol=1e-6)
        sess.run(v0.assign(rep(20.0)))
        sess.run(update)
        np.testing.assert_allclose(sess.run(avg0), rep(10.0 * dk + 20.0 * (1 - dk)),
                                   rtol=1e-6)
        np.testing.assert_allclose(sess.run(avg1), rep(30.0), rtol=1e-6)
        want2 = (40.0 * (1 - dk) * dk + 50.0 * (1 - dk)) / scale(2)
        np.testing.assert_allclose(sess.run(avg2), rep(want2), rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 5])
@pytest.mark.parametrize("zero_debias", [False, True])
def test_averages_without_num_updates(dim, zero_debias):
    _check_decay(tf.train.ExponentialMovingAverage(0.25, zero_debias=zero_debias), 0.25, dim)


@pytest.mark.parametrize("dim", [0, 5])
@pytest.mark.parametrize("zero_debias", [False, True])
def test_num_updates_caps_the_decay(dim, zero_debias):
    # min(0.25, (1 + 1) / (10 + 1)) = 2/11
    ema = tf.train.ExponentialMovingAverage(0.25, num_updates=1, zero_debias=zero_debias)
    _check_decay(ema, 2.0 / 11.0, dim)


def test_num_updates_read_from_the_global_step():
    step = tf.train.get_or_create_global_step()
    v = tf.Variable(0.0)
    ema = tf.train.ExponentialMovingAverage(0.99, num_updates=step)
    update = ema.apply([v])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        step.load(90, sess)
        sess.run(v.assign(1.0))
        sess.run(update)
        assert sess.run(ema.average(v)) == pytest.approx(1.0 - 91.0 / 100.0)  # decay 0.91


def test_apply_under_control_dependencies():
    v0 = tf.Variable(0, name="v0")
    add_to_v0 = v0.assign_add(1)
    v1 = tf.Variable([10.0], name="v1")
    assign_to_v1 = v1.assign([20.0])
    ema = tf.train.ExponentialMovingAverage(0.25)
    with tf.control_dependencies([add_to_v0]):
        ema_op = ema.apply([v1])
    avg = ema.average(v1)
    assert avg.initializer.control_inputs == []  # initialising needs no training step
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(ema_op)
        assert sess.run(v0) == 1
        np.testing.assert_allclose(sess.run(avg), [10.0])
        sess.run(assign_to_v1)
        sess.run(ema_op)
        assert sess.run(v0) == 2
        np.testing.assert_allclose(sess.run(avg), [17.5])


def test_apply_twice_reuses_shadows_and_rejects_integer_variables():
    v = tf.Variable(1.0, name="v")
    ema = tf.train.ExponentialMovingAverage(0.5)
    ema.apply([v])
    first = ema.average(v)
    ema.apply([v])
    assert ema.average(v) is first
    assert len([x for x in tf.global_variables() if x.op.name.startswith("v/Exp")]) == 1
    with pytest.raises(TypeError, match="half, float, or double.*count"):
        ema.apply([tf.Variable(0, name="count")])
    assert ema.average(tf.Variable(2.0, name="never_applied")) is None


@pytest.mark.parametrize("zero_debias", [False, True])
def test_average_names_and_variables_to_restore(zero_debias):
    v0 = tf.Variable(10.0, name="v0")
    v1 = tf.Variable(30.0, name="v1")
    v2 = tf.Variable(20.0, name="v2", trainable=False)
    t = v0 + v1
    ema = tf.train.ExponentialMovingAverage(0.25, zero_debias=zero_debias, name="foo")
    names = [ema.average_name(x) for x in (v0, v1, t)]
    assert names == ["v0/foo", "v1/foo", f"{t.op.name}/foo"]  # known before apply
    ema.apply([v0, v1, t])
    assert [ema.average(x).op.name for x in (v0, v1, t)] == names
    restore = ema.variables_to_restore()
    # The tensor's shadow is an ordinary global variable: it restores as itself.
    want = {"v0/foo": v0, "v1/foo": v1, "v2": v2, f"{t.op.name}/foo": ema.average(t)}
    if zero_debias:  # the debiasing variables of the tensor's average restore as themselves
        want[f"{t.op.name}/foo/biased"] = None
        want[f"{t.op.name}/foo/local_step"] = None
    assert sorted(restore) == sorted(want)
    for name, var in want.items():
        if var is not None:
            assert restore[name].op is var.op


def test_average_names_respect_the_current_name_scope():
    with tf.variable_scope("scope1"):
        v0 = tf.Variable(10.0, name="v0")
        v1 = tf.Variable(30.0, name="v1")
        v2 = tf.Variable(20.0, name="v2", trainable=False)
    with tf.variable_scope("scope2"):
        ema = tf.train.ExponentialMovingAverage(0.25, name="foo")
        assert ema.average_name(v0) == "scope2/scope1/v0/foo"
        ema.apply([v0, v1])
        assert ema.average(v0).op.name == "scope2/scope1/v0/foo"
        restore = ema.variables_to_restore()
    assert sorted(restore) == ["scope1/v2", "scope2/scope1/v0/foo", "scope2/scope1/v1/foo"]
    assert restore["scope1/v2"].op is v2.op


def test_variables_to_restore_for_a_subset():
    v0 = tf.Variable(10.0, name="v0")
    v1 = tf.Variable(30.0, name="v1")
    ema = tf.train.ExponentialMovingAverage(0.25, name="foo")
    ema.apply([v0, v1])
    restore = ema.variables_to_restore([v0])
    assert sorted(restore) == ["v0/foo", "v1", "v1/foo"]
    assert restore["v0/foo"].op is v0.op and restore["v1"].op is v1.op


def test_shadows_live_on_their_variables_ps_task():
    setter = tf.train.replica_device_setter(ps_tasks=2)
    with tf.device(setter):
        v0 = tf.Variable(1.0, name="v0")   # ps task 0
        v1 = tf.Variable(2.0, name="v1")   # ps task 1
        ema = tf.train.ExponentialMovingAverage(0.5)
        update = ema.apply([v0, v1])
        v2 = tf.Variable(3.0, name="v2")   # shadows took no round-robin slot: ps task 0
    assert "/job:ps/task:0" in v0.device and "/job:ps/task:1" in v1.device
    assert ema.average(v0).device == v0.device
    assert ema.average(v1).device == v1.device
    assert "/job:ps/task:0" in v2.device
    for op in update.control_inputs:  # each update runs where its shadow lives
        assert op.device in (v0.device, v1.device), op.name


def test_tensor_average_uses_the_current_device_scope():
    with tf.device("/job:ps/task:0"):
        v0 = tf.Variable(1.0, name="v0")
    with tf.device("/job:worker/task:0"):
        t = v0 * 2.0
    with tf.device("/job:worker/task:0"):
        ema = tf.train.ExponentialMovingAverage(0.5)
        ema.apply([v0, t])
    assert "/job:ps/task:0" in ema.average(v0).device
    assert "/job:worker/task:0" in ema.average(t).device


def test_saver_restores_the_averages_into_the_model_variables(tmp_path):
    w = tf.Variable([1.0, 2.0], name="w")
    step = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(0.5)
    update = ema.apply([w])
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(w.assign([3.0, 6.0]))
        sess.run(update)            # average = [2, 4]
        sess.run(w.assign([9.0, 9.0]))
        step.load(7, sess)
        path = saver.save(sess, str(tmp_path / "model"))
    tf.reset_default_graph()
    w = tf.Variable([0.0, 0.0], name="w")
    step = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(0.5)
    restore = ema.variables_to_restore()
    assert sorted(restore) == ["global_step", "w/ExponentialMovingAverage"]
    with tf.Session() as sess:
        tf.train.Saver(restore).restore(sess, path)
        np.testing.assert_allclose(sess.run(w), [2.0, 4.0])
        assert sess.run(step) == 7


@pytest.mark.cluster_shape(ps=2, workers=2)
def test_averages_on_the_ps_are_shared_by_the_workers_of_a_cluster(local_cluster):
    lc = local_cluster
    graph = tf.Graph()
    with graph.as_default(), tf.device(
            tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(lc.spec))):
        w = tf.Variable(0.0, name="w")        # ps task 0
        b = tf.Variable(0.0, name="b")        # ps task 1
        ema = tf.train.ExponentialMovingAverage(0.5)
        update = ema.apply([w, b])
        set_wb = tf.group(w.assign(4.0), b.assign(8.0))
        init = tf.global_variables_initializer()
    assert ema.average(b).device == b.device and "/job:ps/task:1" in b.device
    with tf.Session(lc.target("worker", 0), graph=graph) as worker0:
        worker0.run(init)
        worker0.run(set_wb)
        worker0.run(update)
    with tf.Session(lc.target("worker", 1), graph=graph) as worker1:
        assert worker1.run([ema.average(w), ema.average(b)]) == [2.0, 4.0]

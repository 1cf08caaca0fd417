"""Every tf.train optimizer on resource variables, with callable hyperparameters,
use_locking, run-time-shaped variables, and the protected hooks subclasses use."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.state import ResourceVariable

pytestmark = pytest.mark.usefixtures("graph")

OPTIMIZERS = {
    "sgd": lambda hp: tf.train.GradientDescentOptimizer(hp(0.1)),
    "adagrad": lambda hp: tf.train.AdagradOptimizer(hp(0.2), initial_accumulator_value=0.1),
    "adam": lambda hp: tf.train.AdamOptimizer(hp(0.05), beta1=hp(0.8), beta2=hp(0.9)),
    "momentum": lambda hp: tf.train.MomentumOptimizer(hp(0.1), hp(0.9)),
    "nesterov": lambda hp: tf.train.MomentumOptimizer(hp(0.1), hp(0.9), use_nesterov=True),
    "rmsprop": lambda hp: tf.train.RMSPropOptimizer(hp(0.05), decay=hp(0.8),
                                                    momentum=hp(0.5)),
    "rmsprop_centered": lambda hp: tf.train.RMSPropOptimizer(hp(0.05), centered=True),
    # TF checks Ftrl's l1/l2 against 0 when constructed: only its rate may be a callable.
    "ftrl": lambda hp: tf.train.FtrlOptimizer(hp(0.3), l1_regularization_strength=0.01),
    "adadelta": lambda hp: tf.train.AdadeltaOptimizer(hp(1.0), rho=hp(0.9)),
    "proximal_sgd": lambda hp: tf.train.ProximalGradientDescentOptimizer(
        hp(0.1), l1_regularization_strength=hp(0.01)),
    "proximal_adagrad": lambda hp: tf.train.ProximalAdagradOptimizer(
        hp(0.1), l2_regularization_strength=hp(0.01)),
}
W0 = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.25]]


def _plain(x):
    return x


def _as_callable(x):
    return lambda: x


def _train(name, use_resource, sparse, hp=_plain, steps=3, use_locking=False):
    with tf.Graph().as_default():
        w = tf.Variable(W0, use_resource=use_resource, name="w")
        if sparse:   # ids repeat: the update must count row 2 twice
            loss = tf.reduce_sum(tf.nn.embedding_lookup(w, [2, 0, 2]) ** 2)
        else:
            loss = tf.reduce_sum(w * w * tf.constant([[1.0, 2.0]]))
        opt = OPTIMIZERS[name](hp)
        opt._use_locking = use_locking
        train = opt.minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(steps):
                sess.run(train)
            return sess.run(w)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_resource_variable_trains_like_a_ref_variable(name, sparse):
    ref = _train(name, use_resource=False, sparse=sparse)
    res = _train(name, use_resource=True, sparse=sparse)
    assert not np.allclose(ref, W0)          # it trained
    np.testing.assert_allclose(res, ref, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_callable_hyperparameters_equal_their_values(name):
    want = _train(name, use_resource=True, sparse=False)
    got = _train(name, use_resource=True, sparse=False, hp=_as_callable)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("name", ["sgd", "adagrad", "adam", "rmsprop", "ftrl"])
def test_use_locking_gives_the_same_update(name):
    want = _train(name, use_resource=False, sparse=True)
    got = _train(name, use_resource=False, sparse=True, use_locking=True)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_variable_of_run_time_shape_gets_slots_of_that_shape(name):
    shape = tf.placeholder_with_default(tf.constant([2]), shape=[None])
    w = tf.get_variable("w", initializer=tf.fill(shape, 1.5), validate_shape=False)
    opt = OPTIMIZERS[name](_as_callable)
    train = opt.apply_gradients([(tf.constant([0.5, -0.5]), w)])
    slots = [opt.get_slot(w, n) for n in opt.get_slot_names()]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert not np.allclose(sess.run(w), [1.5, 1.5])
        for slot in slots:
            assert sess.run(tf.shape(slot)).tolist() == [2]


def test_adagrad_fills_a_dynamic_accumulator_with_its_initial_value():
    w = tf.get_variable("w", initializer=tf.constant(1.0), validate_shape=False)
    opt = tf.train.AdagradOptimizer(3.0, initial_accumulator_value=0.1, use_locking=True)
    train = opt.apply_gradients([(tf.constant(0.1), w)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        # accum = 0.1 + 0.01; w = 1 - 3 * 0.1 / sqrt(0.11)
        assert sess.run(opt.get_slot(w, "accumulator")) == pytest.approx(0.11)
        assert sess.run(w) == pytest.approx(1.0 - 0.3 / np.sqrt(0.11), rel=1e-5)


def test_slots_of_a_resource_variable_are_resource_variables():
    w = ResourceVariable([1.0, 2.0], name="w")
    opt = tf.train.AdamOptimizer(0.1)
    opt.minimize(tf.reduce_sum(w * w))
    for name in ("m", "v"):
        assert isinstance(opt.get_slot(w, name), ResourceVariable)
    assert [s.op.name for s in (opt.get_slot(w, "m"), opt.get_slot(w, "v"))] == \
        ["w/Adam", "w/Adam_1"]
    beta1_power, _ = opt._get_beta_accumulators()
    assert isinstance(beta1_power, ResourceVariable)


def test_adam_accepts_tensor_betas():
    w = tf.Variable([1.0, 2.0])
    opt = tf.train.AdamOptimizer(0.1, beta1=tf.constant(0.8), beta2=tf.constant(0.9))
    train = opt.minimize(tf.reduce_sum(w * w))
    beta1_power, beta2_power = opt._get_beta_accumulators()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sess.run(beta1_power) == pytest.approx(0.64)
        assert sess.run(beta2_power) == pytest.approx(0.81)


def test_slots_are_made_outside_control_dependencies():
    # A run-time shape makes the slot's initial value from ops built by the optimizer.
    shape = tf.placeholder_with_default(tf.constant([2]), shape=[None])
    w = tf.get_variable("w", initializer=tf.ones(shape), validate_shape=False)
    gate = tf.no_op(name="gate")
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    with tf.control_dependencies([gate]):
        opt.minimize(tf.reduce_sum(w * w))
    todo, seen = [opt.get_slot(w, "momentum").initializer], set()
    while todo:
        op = todo.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        assert gate not in op.control_inputs, op.name
        todo += [t.op for t in op.inputs]
    assert any("zeros" in name or "Fill" in name for name in seen)


class _RowSGD(tf.train.Optimizer):
    """A user's optimizer written against TF's protected API."""

    def __init__(self):
        super().__init__(use_locking=False, name="RowSGD")
        self.seen_indices = []

    def _apply_dense(self, grad, var):
        return tf.assign_sub(var, 0.5 * grad)

    def _apply_sparse(self, grad, var):
        self.seen_indices.append(grad.indices)
        return tf.scatter_sub(var, grad.indices, 0.5 * grad.values)


def test_user_optimizer_sees_duplicate_indices_summed():
    w = tf.Variable(W0)
    opt = _RowSGD()
    train = opt.minimize(tf.reduce_sum(tf.nn.embedding_lookup(w, [2, 0, 2])))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert sorted(sess.run(opt.seen_indices[0]).tolist()) == [0, 2]
        np.testing.assert_allclose(sess.run(w)[2], np.array(W0[2]) - 1.0)


def test_user_optimizer_without_resource_hooks_refuses_a_resource_variable():
    w = ResourceVariable([1.0, 2.0], name="rv")
    with pytest.raises(NotImplementedError, match="_resource_apply_dense.*rv"):
        _RowSGD().minimize(tf.reduce_sum(w * w))


def test_constraint_is_applied_after_a_dense_update():
    w = tf.Variable([1.0, -1.0], constraint=lambda x: tf.clip_by_value(x, 0.0, 0.5))
    train = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [0.5, 0.0])


def test_constraint_with_a_sparse_gradient_is_refused():
    w = tf.Variable(W0, constraint=lambda x: x)
    with pytest.raises(RuntimeError, match="constraint function on a sparse variable"):
        tf.train.GradientDescentOptimizer(0.1).minimize(
            tf.reduce_sum(tf.nn.embedding_lookup(w, [0])))


def test_callable_loss_trains_the_variables_it_reads():
    used = tf.Variable([1.0, 2.0], name="used")
    tf.Variable([5.0], name="unused")
    opt = tf.train.GradientDescentOptimizer(0.5)
    pairs = opt.compute_gradients(lambda: tf.reduce_sum(used * used))
    assert [v.name for _, v in pairs] == ["used:0"]
    train = opt.minimize(lambda: tf.reduce_sum(used * used))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(used), [0.0, 0.0])


def test_gradients_for_tensors_but_no_update_of_them():
    x = tf.constant(3.0)
    opt = tf.train.GradientDescentOptimizer(1.0)
    (grad, target), = opt.compute_gradients(lambda: x * x, [x])
    assert target is x
    with tf.Session() as sess:
        assert sess.run(grad) == pytest.approx(6.0)
    with pytest.raises(NotImplementedError, match="Trying to update a Tensor"):
        opt.apply_gradients([(grad, x)])


def test_variables_lists_those_of_the_current_graph():
    opt = tf.train.MomentumOptimizer(0.1, 0.9)
    names = []
    for name in ("first", "second"):
        with tf.Graph().as_default():
            v = ResourceVariable([1.0], name=name)
            opt.minimize(tf.reduce_sum(v))
            names.append([s.name for s in opt.variables()])
    assert names == [["first/Momentum:0"], ["second/Momentum:0"]]


def test_subclass_may_widen_the_valid_dtypes():
    class IntStep(_RowSGD):
        def _valid_dtypes(self):
            return super()._valid_dtypes() | {tf.int32}

        def _apply_dense(self, grad, var):
            return tf.assign_sub(var, grad)

    w = tf.Variable([5, 7])
    loss = tf.reduce_sum(tf.cast(w, tf.float32))
    with pytest.raises(ValueError, match="Invalid type int32 for"):
        tf.train.GradientDescentOptimizer(1.0).compute_gradients(loss, [w])
    IntStep().compute_gradients(loss, [w])          # int32 is valid for it
    train = IntStep().apply_gradients([(tf.constant([1, 2]), w)])
    with tf.Session() as sess:
        sess.run(w.initializer)
        sess.run(train)
        assert sess.run(w).tolist() == [4, 5]


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_resource_embedding_trains_on_ps_tasks(inprocess_cluster):
    _, servers = inprocess_cluster
    results = {}
    for use_resource in (False, True):
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
                emb = tf.get_variable("emb", initializer=tf.constant(W0),
                                      use_resource=use_resource)
                bias = tf.Variable([0.5, -0.5], use_resource=use_resource)
                loss = tf.reduce_sum((tf.nn.embedding_lookup(emb, [2, 0, 2]) + bias) ** 2)
                opt = tf.train.AdagradOptimizer(0.3)
                train = opt.minimize(loss)
            assert emb.device == "/job:ps/task:0" and bias.device == "/job:ps/task:1"
            assert opt.get_slot(emb, "accumulator").device == emb.device
            with tf.Session(servers[("worker", 0)].target) as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(train)
                results[use_resource] = sess.run([emb, bias])
    for ref, res in zip(results[False], results[True]):
        np.testing.assert_allclose(res, ref, rtol=1e-6)
    assert not np.allclose(results[True][0], W0)

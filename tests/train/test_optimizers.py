"""Optimizers: each update rule against a NumPy rewrite of TF1's, dense and sparse."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

W0 = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25], [2.0, -0.75]], np.float64)
GRADS = [np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]]),
         np.array([[-0.3, 0.2], [0.1, -0.4], [0.5, 0.05], [-0.2, 0.9]]),
         np.array([[0.25, 0.25], [-0.6, 0.1], [0.2, -0.3], [0.4, 0.4]])]


# ---- NumPy reference implementations (TF1 update rules) -------------------------------
class Ref:
    """NumPy state for one variable; `step(g, rows)` updates all rows or only `rows`."""

    def __init__(self, kind, **hp):
        self.kind, self.hp, self.w = kind, hp, W0.copy()
        z = np.zeros_like(W0)
        self.s = {"accum": z.copy() + hp.get("init_acc", 0.0), "m": z.copy(), "v": z.copy(),
                  "ms": np.ones_like(W0), "mom": z.copy(), "mg": z.copy()}
        self.b1p, self.b2p = hp.get("beta1", 0.9), hp.get("beta2", 0.999)

    def step(self, g, rows=None):
        hp, s = self.hp, self.s
        if self.kind == "adam":
            # TF1 dense and sparse Adam both decay every row of m and v.
            lr = hp["lr"] * np.sqrt(1 - self.b2p) / (1 - self.b1p)
            s["m"] = hp["beta1"] * s["m"] + (1 - hp["beta1"]) * g
            s["v"] = hp["beta2"] * s["v"] + (1 - hp["beta2"]) * g * g
            self.w = self.w - lr * s["m"] / (np.sqrt(s["v"]) + hp["eps"])
            self.b1p *= hp["beta1"]
            self.b2p *= hp["beta2"]
            return
        r = slice(None) if rows is None else rows
        w, g = self.w[r], g[r]
        st = {k: v[r] for k, v in s.items()}
        if self.kind == "sgd":
            w = w - hp["lr"] * g
        elif self.kind == "momentum":
            st["accum"] = hp["momentum"] * st["accum"] + g
            if hp.get("nesterov"):
                w = w - (hp["lr"] * g + hp["lr"] * hp["momentum"] * st["accum"])
            else:
                w = w - hp["lr"] * st["accum"]
        elif self.kind == "adagrad":
            st["accum"] = st["accum"] + g * g
            w = w - hp["lr"] * g / np.sqrt(st["accum"])
        elif self.kind == "rmsprop":
            st["ms"] = hp["decay"] * st["ms"] + (1 - hp["decay"]) * g * g
            denom = st["ms"]
            if hp.get("centered"):
                st["mg"] = hp["decay"] * st["mg"] + (1 - hp["decay"]) * g
                denom = st["ms"] - st["mg"] ** 2
            st["mom"] = hp["momentum"] * st["mom"] + hp["lr"] * g / np.sqrt(denom + hp["eps"])
            w = w - st["mom"]
        self.w[r] = w
        for k in s:
            s[k][r] = st[k]


CASES = {
    "sgd": (lambda: tf.train.GradientDescentOptimizer(0.1), dict(lr=0.1)),
    "momentum": (lambda: tf.train.MomentumOptimizer(0.1, 0.9), dict(lr=0.1, momentum=0.9)),
    "nesterov": (lambda: tf.train.MomentumOptimizer(0.05, 0.8, use_nesterov=True),
                 dict(lr=0.05, momentum=0.8, nesterov=True)),
    "adagrad": (lambda: tf.train.AdagradOptimizer(0.2, initial_accumulator_value=0.1),
                dict(lr=0.2, init_acc=0.1)),
    "adam": (lambda: tf.train.AdamOptimizer(0.01, 0.8, 0.95, 1e-6),
             dict(lr=0.01, beta1=0.8, beta2=0.95, eps=1e-6)),
    "rmsprop": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-6),
                dict(lr=0.01, decay=0.8, momentum=0.5, eps=1e-6)),
    "rmsprop_centered": (lambda: tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.3,
                                                           epsilon=1e-4, centered=True),
                         dict(lr=0.01, decay=0.9, momentum=0.3, eps=1e-4, centered=True)),
}
KIND = {"nesterov": "momentum", "rmsprop_centered": "rmsprop"}


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("case", sorted(CASES))
def test_dense_update_matches_numpy(case, dtype):
    make, hp = CASES[case]
    w = tf.Variable(W0.astype(dtype.as_numpy_dtype), name="w")
    g = tf.placeholder(dtype, W0.shape)
    step = tf.train.get_or_create_global_step()
    train = make().apply_gradients([(g, w)], global_step=step)
    ref = Ref(KIND.get(case, case), **hp)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for grad in GRADS:
            sess.run(train, {g: grad})
            ref.step(grad)
            tol = 1e-5 if dtype == tf.float32 else 1e-6
            np.testing.assert_allclose(sess.run(w), ref.w, rtol=tol, atol=tol)
        assert tf.train.global_step(sess, step) == len(GRADS)


@pytest.mark.parametrize("case", sorted(CASES))
def test_sparse_update_through_gather_matches_numpy(case):
    make, hp = CASES[case]
    w = tf.Variable(W0, name="w")
    idx = tf.placeholder(tf.int32, [None])
    coef = tf.placeholder(tf.float64, [None, 2])
    loss = tf.reduce_sum(tf.gather(w, idx) * coef)
    opt = make()
    train = opt.minimize(loss)
    update_types = {op.type for op in tf.get_default_graph().get_operations()
                    if op.name.startswith(opt.get_name() + "/update_")}
    assert any(t.startswith("Sparse") for t in update_types), update_types
    ref = Ref(KIND.get(case, case), **hp)
    rng = np.random.RandomState(0)
    batches = [[0, 2, 0], [3], [1, 3, 3, 1]]  # duplicate indices are summed
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for rows in batches:
            c = rng.randn(len(rows), 2)
            dense = np.zeros_like(W0)
            np.add.at(dense, rows, c)
            sess.run(train, {idx: rows, coef: c})
            ref.step(dense, rows=np.unique(rows))
            np.testing.assert_allclose(sess.run(w), ref.w, rtol=1e-6, atol=1e-8)


def test_minimize_with_real_loss_and_tensor_learning_rate():
    w = tf.Variable([1.0, -2.0], name="w")
    lr = tf.placeholder(tf.float32, [])
    loss = tf.reduce_sum(tf.square(w))  # gradient 2w
    train = tf.train.GradientDescentOptimizer(lr).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train, {lr: 0.25})
        np.testing.assert_allclose(sess.run(w), [0.5, -1.0])
        sess.run(train, {lr: 0.5})
        np.testing.assert_allclose(sess.run(w), [0.0, 0.0])


def test_slots_are_colocated_with_their_variables():
    with tf.device("/job:ps/task:1"):
        b = tf.Variable(np.zeros(3, np.float32), name="b")
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.zeros(3, np.float32), name="a")
    x = tf.placeholder(tf.float32, [3])
    loss = tf.reduce_sum(a * x) + tf.reduce_sum(b * x)
    opt = tf.train.AdamOptimizer()
    opt.minimize(loss)
    assert opt.get_slot_names() == ["m", "v"]
    for var in (a, b):
        for name in ("m", "v"):
            slot = opt.get_slot(var, name)
            assert slot.op.get_attr("_class") == [f"loc:@{var.op.name}".encode()]
            assert slot.device == var.device
            assert not slot.trainable and slot in tf.global_variables()
            assert slot not in tf.trainable_variables()
    assert opt.get_slot(a, "m").name == "a/Adam:0" and opt.get_slot(a, "v").name == "a/Adam_1:0"
    # beta powers live with the first variable by name ("a"), on ps task 0
    b1p, b2p = opt._get_beta_accumulators()
    assert b1p.name == "beta1_power:0" and b1p.device == a.device
    assert b1p.op.get_attr("_class") == [b"loc:@a"]
    assert set(opt.variables()) == {b1p, b2p} | {opt.get_slot(v, n) for v in (a, b)
                                                 for n in ("m", "v")}
    for op in tf.get_default_graph().get_operations():
        if op.type == "ApplyAdam":
            var = op.inputs[0].op
            assert op.device == var.device and op.get_attr("_class") == [
                f"loc:@{var.name}".encode()]
    for init in (opt.get_slot(b, "m").initializer, opt.get_slot(b, "m").initial_value.op):
        assert init.device == b.device


def test_global_step_creation_and_increment():
    assert tf.train.get_global_step() is None
    step = tf.train.get_or_create_global_step()
    assert step.name == "global_step:0" and step.dtype.base_dtype == tf.int64
    assert tf.train.get_or_create_global_step() is step
    assert tf.train.get_global_step() is step
    assert step in tf.global_variables() and step not in tf.trainable_variables()
    assert tf.get_collection(tf.GraphKeys.GLOBAL_STEP) == [step]
    with pytest.raises(ValueError, match="already exists"):
        tf.train.create_global_step()
    w = tf.Variable(1.0, name="w")
    train = tf.train.MomentumOptimizer(0.1, 0.5).minimize(tf.square(w), global_step=step)
    assert train.type == "AssignAdd" and train.name == "Momentum"
    assert train in tf.get_collection(tf.GraphKeys.TRAIN_OP)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        assert tf.train.global_step(sess, step) == 3
        # the step counts completed updates: w has moved three times
        assert sess.run(w) < 1.0


def test_global_step_found_by_name_and_type_checked():
    with tf.Graph().as_default():
        tf.Variable(0, name="global_step", dtype=tf.int64)
        assert tf.train.get_global_step().name == "global_step:0"
    with tf.Graph().as_default():
        tf.Variable(0.0, name="global_step")
        with pytest.raises(TypeError, match="integer"):
            tf.train.get_global_step()


def test_errors_name_variables_and_loss():
    w = tf.Variable(1.0, name="w")
    x = tf.placeholder(tf.float32, [])
    loss = tf.square(x)
    with pytest.raises(ValueError, match=r"No gradients provided for any variable.*w:0.*"
                       r"Square"):
        tf.train.GradientDescentOptimizer(0.1).minimize(loss, var_list=[w])
    with pytest.raises(ValueError, match="No gradients provided"):
        tf.train.GradientDescentOptimizer(0.1).apply_gradients([(None, w)])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="No variables to optimize"):
            tf.train.AdamOptimizer().minimize(tf.square(tf.placeholder(tf.float32)))
    i = tf.Variable(1, name="i")
    with pytest.raises(ValueError, match="Invalid type int32"):
        tf.train.GradientDescentOptimizer(0.1).compute_gradients(tf.square(w), var_list=[i])
    with pytest.raises(ValueError, match="initial_accumulator_value"):
        tf.train.AdagradOptimizer(0.1, initial_accumulator_value=0.0)


def test_compute_gradients_pairs_and_gate_graph():
    w = tf.Variable([1.0, 2.0], name="w")
    u = tf.Variable(3.0, name="u")
    loss = tf.reduce_sum(w * w)
    opt = tf.train.GradientDescentOptimizer(1.0)
    gv = opt.compute_gradients(loss, gate_gradients=opt.GATE_GRAPH)
    assert [v for _, v in gv] == [w, u] and gv[1][0] is None
    train = opt.apply_gradients(gv)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(gv[0][0]), [2.0, 4.0])
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [-1.0, -2.0])
        assert sess.run(u) == 3.0


def test_use_locking_concurrent_updates_are_not_lost():
    import threading
    w = tf.Variable(np.zeros(1000, np.float32), name="w")
    g = tf.constant(np.full(1000, -1.0, np.float32))
    train = tf.train.GradientDescentOptimizer(1.0, use_locking=True).apply_gradients([(g, w)])
    with tf.Session() as sess:
        sess.run(w.initializer)

        def work():
            for _ in range(50):
                sess.run(train)
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        np.testing.assert_allclose(sess.run(w), np.full(1000, 200.0))

"""DeepRec's AdamAsyncOptimizer and AdagradDecayOptimizer (issue 34).

Specification: DeepRec's docs/docs_en/AdamAsync-Optimizer.md and AdagradDecay-Optimizer.md
and what its adam_async_test.py / adagrad_decay_test.py check (our words and values):
AdamAsync is Adam with a beta1/beta2 power pair per variable, advanced by the variable's
own update, rows outside a sparse gradient untouched; AdagradDecay discounts the
accumulator once per `accumulator_decay_step` global steps (the step an update belongs
to is the global step's value plus one), never below its initial value, counting the
decays per row for sparse updates. Each case is checked against a NumPy rewrite.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("fresh_graph")

W = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25], [2.0, -0.75]])
G = np.array([[0.1, -0.2], [0.3, 0.4], [-0.5, 0.6], [0.7, -0.8]])


# ---- NumPy references -----------------------------------------------------------------
def _f32(x):
    # A Python hyperparameter becomes a float32 tensor, cast to the variable's dtype in
    # the update (as in DeepRec): a float64 variable sees 0.1 as float32's 0.1.
    return float(np.float32(x))


class AdamAsyncRef:
    """DeepRec's documented AdamAsync math on a NumPy copy of one variable."""

    def __init__(self, w, lr=0.001, beta1=0.9, beta2=0.999, eps=1e-8):
        self.w, self.m, self.v = np.array(w, float), np.zeros(np.shape(w)), np.zeros(np.shape(w))
        self.lr, self.b1, self.b2, self.eps = _f32(lr), _f32(beta1), _f32(beta2), _f32(eps)
        self.p1, self.p2 = beta1, beta2   # the powers start in the variable's dtype

    def step(self, g, rows=None, rmsprop=False, global_step=None):   # (counts its own steps)
        r = slice(None) if rows is None else np.asarray(rows)
        g = np.asarray(g, float)
        if rmsprop:
            self.v[r] = self.b2 * self.v[r] + (1 - self.b2) * g * g
            self.m[r] = self.b1 * self.m[r] + self.lr * g / np.sqrt(self.v[r] + self.eps)
            self.w[r] = self.w[r] - self.m[r]
            return
        alpha = self.lr * np.sqrt(1 - self.p2) / (1 - self.p1)
        self.m[r] = self.b1 * self.m[r] + (1 - self.b1) * g
        self.v[r] = self.b2 * self.v[r] + (1 - self.b2) * g * g
        self.w[r] = self.w[r] - alpha * self.m[r] / (np.sqrt(self.v[r]) + self.eps)
        self.p1, self.p2 = self.p1 * self.b1, self.p2 * self.b2


class DecayRef:
    """AdagradDecay: one decay count for a dense variable, one per row for sparse."""

    def __init__(self, w, lr, init=0.1, decay_step=3, rate=0.9):
        self.w = np.array(w, float)
        self.acc = np.full(self.w.shape, float(init))
        self.count = np.zeros(self.w.shape[:1] or (1,), int)
        self.lr, self.init, self.decay_step, self.rate = _f32(lr), _f32(init), decay_step, \
            _f32(rate)

    def step(self, g, global_step, rows=None):
        period = (global_step + 1) // self.decay_step
        for r, gr in (zip(rows, g) if rows is not None else [(None, g)]):
            at = slice(None) if r is None else r
            c = 0 if r is None else r
            if period > self.count[c]:
                self.count[c] += 1
                self.acc[at] = np.maximum(self.acc[at] * self.rate, self.init)
            self.acc[at] = self.acc[at] + np.square(gr)
            self.w[at] = self.w[at] - self.lr * np.asarray(gr) / np.sqrt(self.acc[at])


def _tol(dtype):
    return {"rtol": 2e-3, "atol": 2e-3} if dtype == tf.float16 else {"rtol": 1e-5}


# ---- AdamAsync ------------------------------------------------------------------------
@pytest.mark.parametrize("use_resource", [False, True])
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_adam_async_dense_steps_and_per_variable_powers(dtype, use_resource):
    w0, w1 = tf.Variable([1.0, 2.0], dtype=dtype, use_resource=use_resource, name="var0"), \
        tf.Variable([3.0, 4.0], dtype=dtype, use_resource=use_resource, name="var1")
    opt = tf.train.AdamAsyncOptimizer(learning_rate=lambda: 0.001, beta1=lambda: 0.9)
    update = opt.apply_gradients([(tf.constant([0.1, 0.1], dtype), w0),
                                  (tf.constant([0.01, 0.01], dtype), w1)])
    refs = [AdamAsyncRef([1.0, 2.0]), AdamAsyncRef([3.0, 4.0])]
    powers = [opt.get_slot(w0, "beta1_power"), opt.get_slot(w0, "beta2_power")]
    assert all(p in opt.variables() for p in powers)
    assert opt.get_slot(w0, "m").name == "var0/AdamAsync:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(1, 4):
            sess.run(update)
            refs[0].step([0.1, 0.1])
            refs[1].step([0.01, 0.01])
            got = sess.run([w0, w1] + powers)
            np.testing.assert_allclose(got[0], refs[0].w, **_tol(dtype))
            np.testing.assert_allclose(got[1], refs[1].w, **_tol(dtype))
            np.testing.assert_allclose(got[2:], [0.9 ** (t + 1), 0.999 ** (t + 1)],
                                       **_tol(dtype))
    with tf.Graph().as_default():
        assert opt.variables() == []   # none from another graph


@pytest.mark.parametrize("use_resource", [False, True])
def test_adam_async_sparse_moves_only_the_rows_in_the_gradient(use_resource):
    var = tf.Variable(W, name="w", use_resource=use_resource)
    grads = tf.placeholder(tf.float64, [None, 2])
    rows = tf.placeholder(tf.int32, [None])
    opt = tf.train.AdamAsyncOptimizer(0.1)
    update = opt.apply_gradients([(tf.IndexedSlices(grads, rows, tf.constant([4, 2])), var)])
    ref = AdamAsyncRef(W, lr=0.1)
    m = opt.get_slot(var, "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for touched in ([0, 2], [2, 3], [1]):
            sess.run(update, {grads: G[touched], rows: touched})
            ref.step(G[touched], touched)
            np.testing.assert_allclose(sess.run(var), ref.w, rtol=1e-12)
            np.testing.assert_allclose(sess.run(m), ref.m, rtol=1e-12)
        # No row in the gradient: no step at all, the powers stay.
        sess.run(update, {grads: np.zeros([0, 2]), rows: []})
        assert sess.run(opt.get_slot(var, "beta1_power")) == ref.p1 == pytest.approx(0.9 ** 4)
        np.testing.assert_allclose(sess.run(var), ref.w, rtol=1e-12)


def test_adam_async_repeated_indices_update_as_their_sum():
    repeated, summed = tf.Variable([[1.0], [2.0]]), tf.Variable([[1.0], [2.0]])
    shape = tf.constant([2, 1])
    up1 = tf.train.AdamAsyncOptimizer().apply_gradients(
        [(tf.IndexedSlices(tf.constant([[0.1], [0.1]]), tf.constant([1, 1]), shape), repeated)])
    up2 = tf.train.AdamAsyncOptimizer().apply_gradients(
        [(tf.IndexedSlices(tf.constant([[0.2]]), tf.constant([1]), shape), summed)])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run([up1, up2])
            a, b = sess.run([repeated, summed])
            np.testing.assert_allclose(a, b)


def test_adam_async_apply_sparse_rmsprop_leaves_the_powers():
    var = tf.Variable(W)
    opt = tf.train.AdamAsyncOptimizer(0.05, apply_sparse_rmsprop=True)
    touched = [3, 0]
    update = opt.apply_gradients([(tf.IndexedSlices(tf.constant(G[touched]),
                                                    tf.constant(touched)), var)])
    ref = AdamAsyncRef(W, lr=0.05)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(update)
            ref.step(G[touched], touched, rmsprop=True)
        np.testing.assert_allclose(sess.run(var), ref.w, rtol=1e-12)
        assert sess.run(opt.get_slot(var, "beta1_power")) == pytest.approx(0.9)


def test_adam_async_two_updates_share_the_slots():
    var = tf.Variable([1.0, 2.0])
    opt = tf.train.AdamAsyncOptimizer(tf.constant(0.001))
    g = tf.constant([0.1, 0.1])
    updates = [opt.apply_gradients([(g, var)]), opt.apply_gradients([(g, var)])]
    ref = AdamAsyncRef([1.0, 2.0])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(4):
            sess.run(updates[t % 2])
            ref.step([0.1, 0.1])
        np.testing.assert_allclose(sess.run(var), ref.w, rtol=1e-6)
        assert sess.run(opt.get_slot(var, "beta2_power")) == pytest.approx(0.999 ** 5)


# ---- AdagradDecay ---------------------------------------------------------------------
def _decay_run(var, grad, opt_kwargs, steps):
    """`steps` updates, the global step bumped after each (as DeepRec's tests do)."""
    step = tf.Variable(0, dtype=opt_kwargs.pop("step_dtype", tf.int64), name="step")
    opt = tf.train.AdagradDecayOptimizer(1.0, step, **opt_kwargs)
    update = opt.apply_gradients([(grad, var)])
    bump = tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(update)
            sess.run(bump)
        return sess.run([var, opt.get_slot(var, "accumulator"),
                         opt.get_slot(var, "accumulator_decay_power")])


@pytest.mark.parametrize("step_dtype", [tf.int32, tf.int64])
@pytest.mark.parametrize("dtype,use_resource,use_locking", [
    (tf.float16, False, False), (tf.float32, True, True), (tf.float64, False, True)])
def test_adagrad_decay_dense(dtype, use_resource, use_locking, step_dtype):
    var = tf.Variable([1.0, 2.0], dtype=dtype, use_resource=use_resource)
    kw = {"accumulator_decay_step": 3, "accumulator_decay_rate": 0.9,
          "initial_accumulator_value": 0.1, "use_locking": use_locking,
          "step_dtype": step_dtype}
    w, acc, count = _decay_run(var, tf.constant([0.1, 0.1], dtype), kw, steps=4)
    ref = DecayRef([1.0, 2.0], lr=1.0)
    for s in range(4):   # the decay comes at the third update: (2 + 1) // 3 == 1
        ref.step(np.array([0.1, 0.1]), s)
    np.testing.assert_allclose(w, ref.w, **_tol(dtype))
    np.testing.assert_allclose(acc, ref.acc, **_tol(dtype))
    assert count.dtype == step_dtype.as_numpy_dtype and count.tolist() == [1, 0]


def test_adagrad_decay_never_goes_below_the_initial_accumulator():
    var = tf.Variable([1.0, 2.0])
    kw = {"accumulator_decay_step": 3, "accumulator_decay_rate": 0.6,
          "initial_accumulator_value": 1.0}
    _, acc, _ = _decay_run(var, tf.constant([0.1, 0.1]), kw, steps=4)
    # 1.0 + 2 * 0.01 = 1.02; at the third update max(1.02 * 0.6, 1.0) = 1.0, then + 2 * 0.01
    np.testing.assert_allclose(acc, [1.02, 1.02], rtol=1e-6)


@pytest.mark.parametrize("use_resource", [False, True])
def test_adagrad_decay_sparse_counts_decays_per_row(use_resource):
    var = tf.Variable(W, use_resource=use_resource)
    grads = tf.placeholder(tf.float64, [None, 2])
    rows = tf.placeholder(tf.int64, [None])
    step = tf.Variable(0, dtype=tf.int64)
    opt = tf.train.AdagradDecayOptimizer(0.5, step, accumulator_decay_step=2,
                                         accumulator_decay_rate=0.5)
    update = opt.apply_gradients([(tf.IndexedSlices(grads, rows), var)])
    bump = tf.assign_add(step, 1)
    ref = DecayRef(W, lr=0.5, decay_step=2, rate=0.5)
    # Row 3 is first touched at step 5 (period 3): one decay per update until caught up.
    schedule = [[0, 1], [0], [1, 2], [0, 2], [2], [3, 0], [3], [3, 1]]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for s, touched in enumerate(schedule):
            sess.run(update, {grads: G[touched], rows: touched})
            sess.run(bump)
            ref.step(G[touched], s, touched)
        w, acc, count = sess.run([var, opt.get_slot(var, "accumulator"),
                                  opt.get_slot(var, "accumulator_decay_power")])
    np.testing.assert_allclose(w, ref.w, rtol=1e-12)
    np.testing.assert_allclose(acc, ref.acc, rtol=1e-12)
    # DeepRec's layout: row r's count is element r of the flattened slot.
    assert count.reshape(-1)[:4].tolist() == ref.count.tolist() == [3, 2, 2, 3]


def test_adagrad_decay_repeated_indices_update_as_their_sum():
    got = []
    for values, indices in (([[0.1], [0.1]], [1, 1]), ([[0.2]], [1])):
        with tf.Graph().as_default():
            grad = tf.IndexedSlices(tf.constant(values), tf.constant(indices))
            got.append(_decay_run(tf.Variable([[1.0], [2.0]]), grad,
                                  {"accumulator_decay_step": 2}, steps=3))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b)


def test_adagrad_decay_slot_names():
    var = tf.Variable([[1.0, 2.0]], name="w")
    opt = tf.train.AdagradDecayOptimizer(0.1, tf.train.get_or_create_global_step())
    opt.minimize(tf.reduce_sum(var))
    assert opt.get_slot_names() == ["accumulator", "accumulator_decay_power"]
    assert [opt.get_slot(var, n).name for n in opt.get_slot_names()] == \
        ["w/AdagradDecay:0", "w/AdagradDecay_1:0"]
    assert opt.get_slot(var, "accumulator_decay_power").dtype.base_dtype == tf.int64


@pytest.mark.parametrize("kwargs,message", [
    ({"global_step": None}, "needs global_step"),
    ({"global_step": "float"}, "global_step must be an integer"),
    ({"initial_accumulator_value": 0.0}, "initial_accumulator_value must be positive"),
    ({"accumulator_decay_step": 0}, "accumulator_decay_step must be a positive"),
    ({"accumulator_decay_rate": 1.0}, r"accumulator_decay_rate must be in \(0.0, 1.0\)"),
])
def test_adagrad_decay_refuses_bad_arguments(kwargs, message):
    if kwargs.get("global_step") == "float":
        kwargs["global_step"] = tf.Variable(0.0)
    args = {"global_step": tf.train.get_or_create_global_step(), **kwargs}
    with pytest.raises((ValueError, TypeError), match=message):
        tf.train.AdagradDecayOptimizer(0.1, **args)
    with pytest.raises(TypeError, match="global_step"):
        tf.train.AdagradDecayOptimizer(0.1)   # pylint: disable=no-value-for-parameter


def test_importable_from_deeprecs_module_paths():
    from tensorweave.python.training import adagrad_decay, adam_async
    assert adam_async.AdamAsyncOptimizer is tf.train.AdamAsyncOptimizer
    assert adagrad_decay.AdagradDecayOptimizer is tf.train.AdagradDecayOptimizer


# ---- EmbeddingVariables, partitioned variables, sessions --------------------------------
OPTIMIZERS = {
    "adam_async": lambda: tf.train.AdamAsyncOptimizer(0.1),
    "adam_async_rmsprop": lambda: tf.train.AdamAsyncOptimizer(0.1, apply_sparse_rmsprop=True),
    "adagrad_decay": lambda: tf.train.AdagradDecayOptimizer(
        0.1, tf.train.get_or_create_global_step(), accumulator_decay_step=2),
}
# Each batch touches both partitions of a 2-way table: AdamAsync advances a partition's
# powers only when its rows are updated, a dense variable's at every step.
BATCHES = [[0, 1, 2, 5, 6, 7], [5, 7, 7, 2], [0, 7, 2, 1, 2]]


@pytest.mark.parametrize("parts", [None, 2])
@pytest.mark.parametrize("which", sorted(OPTIMIZERS))
def test_embedding_variable_trains_as_a_dense_variable(which, parts):
    start = np.random.default_rng(5).normal(size=[8, 3]).astype(np.float32)
    ids = tf.placeholder(tf.int64, [None])
    step = tf.train.get_or_create_global_step()
    ev = tf.get_embedding_variable(
        "ev", 3, initializer=tf.constant_initializer(start),
        partitioner=tf.fixed_size_partitioner(parts) if parts else None,
        ev_option=tf.EmbeddingVariableOption(tf.InitializerOption(default_value_dim=8)))
    dense = tf.get_variable("dense", initializer=start)
    trains = []
    for v in (ev, dense):
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(v, ids) - 0.5))
        trains.append(OPTIMIZERS[which]().minimize(loss))
    look = [tf.nn.embedding_lookup(v, list(range(8))) for v in (ev, dense)]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for s, batch in enumerate(BATCHES * 2):
            sess.run(trains, {ids: batch})
            sess.run(tf.assign(step, s + 1))
        got_ev, got_dense = sess.run(look)
    np.testing.assert_allclose(got_ev, got_dense, rtol=2e-6, atol=1e-6)
    assert not np.allclose(got_dense, start)


def test_embedding_variable_slots(tmp_path):
    ev = tf.get_embedding_variable("emb", 4, initializer=tf.ones_initializer())
    step = tf.train.get_or_create_global_step()
    loss = tf.reduce_sum(tf.nn.embedding_lookup(ev, tf.constant([3, 9], tf.int64)))
    adam = tf.train.AdamAsyncOptimizer(0.1)
    decay = tf.train.AdagradDecayOptimizer(0.1, step, accumulator_decay_step=1)
    train = tf.group(adam.minimize(loss), decay.minimize(loss, global_step=step))
    names = {n: adam.get_slot(ev, n).op.name for n in adam.get_slot_names()}
    assert names == {"m": "emb/AdamAsync", "v": "emb/AdamAsync_1",
                     "beta1_power": "emb/AdamAsync_2", "beta2_power": "emb/AdamAsync_3"}
    assert adam.get_slot(ev, "beta1_power").get_shape().as_list() == [1]
    assert decay.get_slot(ev, "accumulator_decay_power").op.name == "emb/AdagradDecay_1"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    # Each id's count is its row's first element, in the table's checkpoint layout.
    counts = tf.train.load_variable(path, "emb/AdagradDecay_1-values")
    assert counts[:, 0].tolist() == [3.0, 3.0]   # the updates' steps 1, 2, 3: periods 1, 2, 3
    np.testing.assert_allclose(tf.train.load_variable(path, "emb/AdamAsync_2"), [0.9 ** 4],
                               rtol=1e-6)


def test_counter_filter_leaves_ids_not_admitted_untrained():
    opt_ev = tf.get_embedding_variable(
        "ev", 3, initializer=tf.ones_initializer(),
        ev_option=tf.EmbeddingVariableOption(filter_option=tf.CounterFilter(filter_freq=3)))
    emb = tf.nn.embedding_lookup(opt_ev, tf.constant([1, 1, 1, 1, 2, 2, 2, 3, 3, 4], tf.int64))
    step = tf.train.get_or_create_global_step()
    train = tf.group(tf.train.AdamAsyncOptimizer(0.1).minimize(tf.reduce_sum(emb * 2.0)),
                     tf.train.AdagradDecayOptimizer(0.1, step).minimize(tf.reduce_sum(emb)))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first, _ = sess.run([emb, train])
        second = sess.run(emb)
    # Ids 1 and 2 are admitted at this lookup (seen 3 times), 3 and 4 read 0 and their
    # gradients train nothing: 3 is admitted at the next lookup with its default row.
    assert (first[:7] == 1.0).all() and (first[7:] == 0).all()
    assert (second[:7] != 1.0).all()
    assert (second[7:9] == 1.0).all() and (second[9] == 0).all()


@pytest.mark.parametrize("which", ["adam_async", "adagrad_decay"])
def test_partitioned_variable_saves_restores_and_matches_one_piece(which, tmp_path):
    ids = tf.constant([0, 3, 4, 4, 5], tf.int64)   # rows of both partitions, one twice
    split = tf.get_variable("split", [6, 2], tf.float64, initializer=tf.ones_initializer(),
                            partitioner=tf.fixed_size_partitioner(2))
    whole = tf.get_variable("whole", [6, 2], tf.float64, initializer=tf.ones_initializer())
    trains = [OPTIMIZERS[which]().minimize(tf.reduce_sum(
        tf.nn.embedding_lookup(v, ids, partition_strategy="div") ** 2)) for v in (split, whole)]
    values = [tf.convert_to_tensor(split), whole]
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(trains)
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
        sess.run(trains)
        want = sess.run(values)
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, path)       # every slot back: the same 4th step again
        sess.run(trains)
        again = sess.run(values)
    np.testing.assert_allclose(want[0], want[1], rtol=1e-12)
    np.testing.assert_allclose(again, want, rtol=1e-12)
    names = {n for n, _ in tf.train.list_variables(path)}
    if which == "adam_async":   # a partition's scalar powers are saved under its own name
        assert {"split/AdamAsync", "split/part_1/AdamAsync_2"} <= names
    else:
        assert {"split/AdagradDecay", "split/AdagradDecay_1"} <= names


@pytest.mark.parametrize("which", ["adam_async", "adagrad_decay"])
def test_monitored_training_session_trains_and_resumes(which, tmp_path):
    def build():
        step = tf.train.get_or_create_global_step()
        var = tf.get_variable("w", initializer=W)
        loss = tf.reduce_sum(var * G)                       # gradient: G, every step
        train = OPTIMIZERS[which]().minimize(loss, global_step=step)
        return var, train

    ref = AdamAsyncRef(W, lr=0.1) if which == "adam_async" else DecayRef(W, 0.1, decay_step=2)
    for first, last in ((0, 3), (3, 5)):   # the second session restores the first's save
        with tf.Graph().as_default():
            var, train = build()
            with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path),
                                                   save_checkpoint_steps=100) as sess:
                for s in range(first, last):
                    sess.run(train)
                    ref.step(G, global_step=s)
                got = sess.run(var)
        np.testing.assert_allclose(got, ref.w, rtol=1e-12)

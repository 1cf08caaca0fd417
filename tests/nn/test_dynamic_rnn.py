"""dynamic_rnn, bidirectional_dynamic_rnn, static_rnn and static_bidirectional_rnn:
values and gradients against real TF 1.x numbers (tests/rnn_reference_values.py),
TF's variable names, unknown time steps, sequence_length semantics, custom cells,
gradient checks, errors, and a TF1-style LSTM classifier that trains.
Spec: TF 1.x rnn_test.py and core_rnn_test.py (the behaviours, not their code)."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.rnn import contrib_rnn
from tensorweave.rnn import rnn_cell as rc
from tensorweave.rnn.rnn_ops import bidirectional_dynamic_rnn, dynamic_rnn
from tensorweave.rnn.static_rnn import static_bidirectional_rnn, static_rnn
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

from rnn_reference_values import EXPECTED

pytestmark = pytest.mark.usefixtures("fresh_graph")


# ---- the reference scenarios (the same graphs were run in TF for EXPECTED) ----------
def inputs(shape, seed=7):
    return np.random.RandomState(seed).uniform(-1.0, 1.0, shape).astype(np.float32)


def set_weights(sess, seed=42):
    rng = np.random.RandomState(seed)
    for v in tf.trainable_variables():
        sess.run(v.assign(rng.uniform(-0.5, 0.5, v.shape.as_list()).astype(np.float32)))


def lstm_seq():
    x = tf.placeholder(tf.float32, [None, None, 2])
    n = tf.placeholder(tf.int32, [None])
    o, s = dynamic_rnn(rc.BasicLSTMCell(3, forget_bias=1.0), x, sequence_length=n,
                       dtype=tf.float32)
    grads = tf.gradients(tf.reduce_sum(o * o) + tf.reduce_sum(s.c),
                         tf.trainable_variables() + [x])
    return [o, s.c, s.h] + grads, [x, n], [inputs([2, 4, 2]), np.array([4, 2], np.int32)]


def lstm_full():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    cell = rc.LSTMCell(4, use_peepholes=True, cell_clip=0.6, num_proj=2, proj_clip=0.3,
                       forget_bias=0.5)
    o, s = dynamic_rnn(cell, x, dtype=tf.float32)
    return [o, s.c, s.h], [x], [inputs([2, 4, 3])]


def gru():
    x = tf.placeholder(tf.float32, [2, 4, 3])
    o, s = dynamic_rnn(rc.GRUCell(3), x, dtype=tf.float32)
    return [o, s] + tf.gradients(tf.reduce_sum(o), tf.trainable_variables()), [x], \
        [inputs([2, 4, 3])]


def rnn_static():
    x = tf.placeholder(tf.float32, [3, 4, 2])
    outs, s = static_rnn(rc.BasicRNNCell(3), tf.unstack(x, axis=1), dtype=tf.float32,
                         sequence_length=[4, 2, 0])
    return [tf.stack(outs, 1), s], [x], [inputs([3, 4, 2])]


def multi_time_major():
    x = tf.placeholder(tf.float32, [3, 2, 2])
    cell = rc.MultiRNNCell([rc.BasicLSTMCell(3), rc.GRUCell(2)])
    o, (s0, s1) = dynamic_rnn(cell, x, dtype=tf.float32, time_major=True)
    return [o, s0.c, s0.h, s1], [x], [inputs([3, 2, 2])]


def bidi():
    x = tf.placeholder(tf.float32, [2, 4, 2])
    (fw, bw), (sf, sb) = bidirectional_dynamic_rnn(
        rc.GRUCell(2), rc.BasicLSTMCell(2), x, sequence_length=[4, 3], dtype=tf.float32)
    return [fw, bw, sf, sb.c, sb.h], [x], [inputs([2, 4, 2])]


def static_bidi():
    x = tf.placeholder(tf.float32, [2, 3, 2])
    outs, sf, sb = static_bidirectional_rnn(
        rc.BasicRNNCell(2), rc.GRUCell(2), tf.unstack(x, axis=1), sequence_length=[3, 2],
        dtype=tf.float32)
    return [tf.stack(outs, 1), sf, sb], [x], [inputs([2, 3, 2])]


@pytest.mark.parametrize("scenario", [lstm_seq, lstm_full, gru, rnn_static, multi_time_major,
                                      bidi, static_bidi], ids=lambda f: f.__name__)
def test_values_and_gradients_match_tensorflow(scenario):
    fetches, phs, feeds = scenario()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        set_weights(sess)
        got = sess.run(fetches, dict(zip(phs, feeds)))
    want = EXPECTED[scenario.__name__]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.shape(g) == w.shape, f"fetch {k}"
        np.testing.assert_allclose(g, w, atol=2e-6, err_msg=f"fetch {k}")


# ---- names ---------------------------------------------------------------------------
def names():
    return [v.op.name for v in tf.global_variables()]


def test_variable_names_are_tf1s():
    x = tf.placeholder(tf.float32, [2, 5, 3])
    dynamic_rnn(rc.MultiRNNCell([rc.BasicLSTMCell(4), rc.BasicLSTMCell(4)]), x,
                dtype=tf.float32)
    bidirectional_dynamic_rnn(rc.GRUCell(2), rc.GRUCell(2), x, dtype=tf.float32)
    with tf.variable_scope("encoder"):
        static_rnn(rc.DropoutWrapper(rc.LSTMCell(3)), tf.unstack(x, axis=1), dtype=tf.float32)
    assert names() == [
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_0/basic_lstm_cell/bias",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/kernel",
        "rnn/multi_rnn_cell/cell_1/basic_lstm_cell/bias",
        "bidirectional_rnn/fw/gru_cell/gates/kernel", "bidirectional_rnn/fw/gru_cell/gates/bias",
        "bidirectional_rnn/fw/gru_cell/candidate/kernel",
        "bidirectional_rnn/fw/gru_cell/candidate/bias",
        "bidirectional_rnn/bw/gru_cell/gates/kernel", "bidirectional_rnn/bw/gru_cell/gates/bias",
        "bidirectional_rnn/bw/gru_cell/candidate/kernel",
        "bidirectional_rnn/bw/gru_cell/candidate/bias",
        "encoder/rnn/lstm_cell/kernel", "encoder/rnn/lstm_cell/bias"]


def test_one_cell_in_dynamic_and_static_rnn_shares_weights_and_agrees():
    xv = inputs([3, 5, 2])
    x = tf.constant(xv)
    cell = rc.GRUCell(4)
    dyn, dyn_state = dynamic_rnn(cell, x, dtype=tf.float32)
    outs, st_state = static_rnn(cell, tf.unstack(x, axis=1), dtype=tf.float32, scope="other")
    assert names() == ["rnn/gru_cell/gates/kernel", "rnn/gru_cell/gates/bias",
                       "rnn/gru_cell/candidate/kernel", "rnn/gru_cell/candidate/bias"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        d, ds, s, ss = sess.run([dyn, dyn_state, tf.stack(outs, 1), st_state])
    np.testing.assert_allclose(d, s, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ds, ss, rtol=1e-5, atol=1e-6)


# ---- unknown time, sequence_length ------------------------------------------------------
def test_unknown_batch_and_time_run_any_length_including_zero():
    x = tf.placeholder(tf.float32, [None, None, 3])
    cell = rc.BasicLSTMCell(4)
    init = rc.LSTMStateTuple(tf.fill([tf.shape(x)[0], 4], 0.5), tf.zeros([tf.shape(x)[0], 4]))
    out, st = dynamic_rnn(cell, x, initial_state=init)
    assert out.shape.as_list() == [None, None, 4] and st.c.shape.as_list() == [None, 4]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for steps in (1, 6):
            o, c = sess.run([out, st.c], {x: inputs([2, steps, 3])})
            assert o.shape == (2, steps, 4) and c.shape == (2, 4)
        o, c = sess.run([out, st.c], {x: np.zeros([2, 0, 3], np.float32)})
    assert o.shape == (2, 0, 4)
    np.testing.assert_array_equal(c, np.full([2, 4], 0.5))   # no step: the initial state


def test_sequence_length_zeroes_outputs_and_copies_the_state_through():
    xv = inputs([3, 5, 2])
    x = tf.placeholder(tf.float32, [None, None, 2])
    lengths = tf.placeholder(tf.int64, [None])
    cell = rc.BasicLSTMCell(3)
    out, st = dynamic_rnn(cell, x, sequence_length=lengths, dtype=tf.float32)
    full, full_st = dynamic_rnn(cell, x, dtype=tf.float32, scope="rnn")  # shared weights
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        o, c, h = sess.run([out, st.c, st.h], {x: xv, lengths: [5, 2, 0]})
        for row, n in enumerate([5, 2, 0]):
            np.testing.assert_array_equal(o[row, n:], 0.0)
            if n == 0:
                np.testing.assert_array_equal(c[row], 0.0)
                continue
            ref_o, ref_c = sess.run([full, full_st.c], {x: xv[row:row + 1, :n]})
            np.testing.assert_allclose(o[row, :n], ref_o[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(c[row], ref_c[0], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(h[row], o[row, n - 1], rtol=1e-6)


def test_gradient_check_through_time_with_sequence_length_and_initial_state():
    x0, h0 = inputs([2, 3, 2]).astype(np.float64), inputs([2, 2], seed=8).astype(np.float64)
    x, h = tf.constant(x0), tf.constant(h0)
    cell = rc.GRUCell(2, kernel_initializer=tf.random_uniform_initializer(-0.7, 0.7, seed=2))
    out, st = dynamic_rnn(cell, x, sequence_length=[3, 2], initial_state=h)
    y = tf.concat([tf.reshape(out, [2, 6]), st], 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        err = compute_gradient_error([x, h], [[2, 3, 2], [2, 2]], y, [2, 8],
                                     x_init_value=[x0, h0])
    assert err < 1e-6


def test_gradients_reach_every_variable_of_a_stacked_cell():
    x = tf.placeholder(tf.float32, [None, None, 3])
    cell = rc.MultiRNNCell([rc.LSTMCell(4, use_peepholes=True, num_proj=3), rc.GRUCell(2)])
    out, _ = dynamic_rnn(cell, x, dtype=tf.float32)
    grads = tf.gradients(tf.reduce_sum(out), tf.trainable_variables())
    assert len(grads) == 10 and all(g is not None for g in grads)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        vals = sess.run(grads, {x: inputs([2, 4, 3])})
    assert all(np.any(v != 0) for v in vals)


# ---- custom cells ------------------------------------------------------------------
class ScaledCell(rc.RNNCell):
    """A TF1-style custom cell: get_variable in call, no build."""
    state_size = property(lambda self: 2)
    output_size = property(lambda self: 2)

    def call(self, inputs, state):
        w = tf.get_variable("w", [inputs.shape[-1], 2], initializer=tf.ones_initializer())
        new = tf.matmul(inputs, w) + state
        return new, new


class OldStyleCell(rc.RNNCell):
    """TF 1.0 style: overrides __call__ and opens its own variable scope."""
    state_size = property(lambda self: 2)
    output_size = property(lambda self: 2)

    def __call__(self, inputs, state, scope=None):
        with tf.variable_scope(scope or "old_style_cell"):
            b = tf.get_variable("b", [2], initializer=tf.constant_initializer(1.0))
            return state + b, state + b


def test_custom_cells_with_lazy_variables_run_in_dynamic_rnn():
    x = tf.constant(np.ones([2, 3, 2], np.float32))
    out, st = dynamic_rnn(ScaledCell(), x, dtype=tf.float32)
    out2, _ = dynamic_rnn(OldStyleCell(), x, dtype=tf.float32, scope="old")
    assert names() == ["rnn/scaled_cell/w", "old/old_style_cell/b"]
    grads = tf.gradients(tf.reduce_sum(out) + tf.reduce_sum(out2), tf.trainable_variables())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        o, o2, g = sess.run([out, out2, grads])
    np.testing.assert_allclose(o[0, :, 0], [2.0, 4.0, 6.0])     # cumulative x @ ones
    np.testing.assert_allclose(o2[1, :, 1], [1.0, 2.0, 3.0])
    np.testing.assert_allclose(g[1], [12.0, 12.0])   # d sum / d b: 2 rows x (1 + 2 + 3)


def test_a_cell_making_a_variable_inside_the_loop_is_refused():
    class BadCell(ScaledCell):
        def call(self, inputs, state):
            return state + tf.Variable(tf.zeros([2])), state

    # TF's own check (a Variable initialized from a tensor of the loop body) comes first.
    with pytest.raises(ValueError, match=r"Initializer for variable Variable is from inside "
                                         r"a control-flow construct.*use a lambda"):
        dynamic_rnn(BadCell(), tf.zeros([1, 2, 2]), dtype=tf.float32)


def test_dropout_inside_dynamic_rnn_draws_a_new_mask_each_step():
    keep = tf.placeholder_with_default(1.0, [])
    cell = rc.DropoutWrapper(rc.BasicRNNCell(40), output_keep_prob=keep, seed=1)
    out, _ = dynamic_rnn(cell, tf.constant(inputs([2, 3, 2])), dtype=tf.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        o = sess.run(out, {keep: 0.5})
        plain = sess.run(out)
    zero = o == 0
    assert 0.2 < zero.mean() < 0.8 and not np.array_equal(zero[:, 0], zero[:, 1])
    assert np.all(plain != 0)


# ---- errors ---------------------------------------------------------------------------
@pytest.mark.parametrize("build, error, pattern", [
    (lambda x: dynamic_rnn(rc.GRUCell(2), tf.zeros([4, 3]), dtype=tf.float32), ValueError,
     r"inputs zeros.*\(rank 2\).*\[batch, time, depth\].*expand_dims"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), tf.placeholder(tf.float32, [None, None, None]),
                           dtype=tf.float32), ValueError, "depth .* must be known"),
    (lambda x: dynamic_rnn("lstm", x, dtype=tf.float32), TypeError,
     "cell must be an RNNCell.*got 'lstm'.*BasicLSTMCell"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), x), ValueError, "you must give a dtype"),
    (lambda x: dynamic_rnn(rc.BasicLSTMCell(2), x, initial_state=tf.zeros([2, 2])),
     ValueError, r"initial_state does not match .*LSTMStateTuple\(c=2, h=2\).*zero_state"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), x, initial_state=tf.zeros([2, 5])), ValueError,
     r"initial_state leaf 0 .* shape \(2, 5\).*\[batch, 2\]"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), x, sequence_length=[[1, 2]], dtype=tf.float32),
     ValueError, "sequence_length must be a vector"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), x, sequence_length=[1, 2, 3], dtype=tf.float32),
     ValueError, r"sequence_length is \[batch_size\] = \[2\]"),
    (lambda x: dynamic_rnn(rc.GRUCell(2), x, sequence_length=[1.0, 2.0], dtype=tf.float32),
     TypeError, "sequence_length .* must be an integer vector"),
    (lambda x: static_rnn(rc.GRUCell(2), x, dtype=tf.float32), TypeError,
     "inputs must be a list.*tf.unstack"),
    (lambda x: static_rnn(rc.GRUCell(2), [], dtype=tf.float32), ValueError, "must not be empty"),
    (lambda x: bidirectional_dynamic_rnn(rc.GRUCell(2), None, x, dtype=tf.float32), TypeError,
     "cell_bw must be an RNNCell"),
])
def test_bad_arguments_get_clear_errors(build, error, pattern):
    with pytest.raises(error, match=pattern):
        build(tf.zeros([2, 3, 2]))


# ---- the public names and a TF1-style program ----------------------------------------
def test_public_names_are_wired():
    assert tf.nn.rnn_cell.BasicLSTMCell is rc.BasicLSTMCell
    assert tf.nn.rnn_cell.LSTMStateTuple is rc.LSTMStateTuple
    assert tf.nn.dynamic_rnn is dynamic_rnn and tf.nn.static_rnn is static_rnn
    assert tf.nn.bidirectional_dynamic_rnn is bidirectional_dynamic_rnn
    assert tf.nn.static_bidirectional_rnn is static_bidirectional_rnn
    assert tf.contrib.rnn.static_rnn is static_rnn
    assert tf.contrib.rnn.MultiRNNCell is rc.MultiRNNCell is contrib_rnn.MultiRNNCell


def test_tf1_lstm_sequence_classifier_trains():
    rng = np.random.RandomState(0)
    steps, depth, classes = 8, 3, 2
    data = rng.normal(size=(256, steps, depth)).astype(np.float32)
    labels = (data[:, :, 0].sum(axis=1) > 0).astype(np.int64)  # sign of a running sum

    x = tf.placeholder(tf.float32, [None, steps, depth], name="x")
    y = tf.placeholder(tf.int64, [None], name="y")
    cell = tf.nn.rnn_cell.BasicLSTMCell(16)
    _, state = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
    logits = tf.layers.dense(state.h, classes)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y,
                                                                         logits=logits))
    train_op = tf.train.AdamOptimizer(0.02).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data, y: labels})
        for i in range(60):
            batch = slice((i * 32) % 256, (i * 32) % 256 + 32)
            sess.run(train_op, {x: data[batch], y: labels[batch]})
        last = sess.run(loss, {x: data, y: labels})
    assert last < 0.5 * first, (first, last)

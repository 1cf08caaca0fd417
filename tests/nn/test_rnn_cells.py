"""tf.nn.rnn_cell: sizes, zero_state, TF 1.x's variable names and sharing, one step
against NumPy, the wrappers and MultiRNNCell, and the errors. Spec: TF 1.x
rnn_cell_test.py / core_rnn_cell_test.py (the behaviours, not their code)."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.rnn import rnn_cell as rc
from tensorweave.testing.tf_gradient_checker import compute_gradient_error

pytestmark = pytest.mark.usefixtures("fresh_graph")
RNG = np.random.RandomState(3)


def sig(z):
    return 1.0 / (1.0 + np.exp(-z))


def rand(*shape, dtype=np.float32):
    return RNG.uniform(-1.0, 1.0, shape).astype(dtype)


def var_names():
    return [(v.op.name, v.shape.as_list()) for v in tf.global_variables()]


def run_with_weights(fetches, weights=None, feed=None):
    """Runs `fetches` after initializing, with the named variables set to `weights`."""
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        by_name = {v.op.name: v for v in tf.global_variables()}
        for name, value in (weights or {}).items():
            sess.run(by_name[name].assign(value))
        return sess.run(fetches, feed)


def np_lstm_step(x, c, h, kernel, bias, forget_bias=1.0):
    i, j, f, o = np.split(np.concatenate([x, h], 1) @ kernel + bias, 4, axis=1)
    new_c = c * sig(f + forget_bias) + sig(i) * np.tanh(j)
    return new_c, np.tanh(new_c) * sig(o)


# ---- sizes and zero_state ----------------------------------------------------------
@pytest.mark.parametrize("cell, state_size, output_size", [
    (lambda: rc.BasicRNNCell(5), 5, 5),
    (lambda: rc.GRUCell(5), 5, 5),
    (lambda: rc.BasicLSTMCell(5), rc.LSTMStateTuple(5, 5), 5),
    (lambda: rc.BasicLSTMCell(5, state_is_tuple=False), 10, 5),
    (lambda: rc.LSTMCell(5, num_proj=3), rc.LSTMStateTuple(5, 3), 3),
    (lambda: rc.LSTMCell(5, num_proj=3, state_is_tuple=False), 8, 3),
    (lambda: rc.MultiRNNCell([rc.BasicLSTMCell(4), rc.GRUCell(2)]),
     (rc.LSTMStateTuple(4, 4), 2), 2),
    (lambda: rc.DropoutWrapper(rc.GRUCell(3)), 3, 3),
])
def test_state_and_output_sizes(cell, state_size, output_size):
    c = cell()
    assert c.state_size == state_size
    assert c.output_size == output_size


def test_zero_state_shapes_names_and_tensor_batch():
    z = rc.MultiRNNCell([rc.BasicLSTMCell(4), rc.GRUCell(3)]).zero_state(5, tf.float32)
    assert isinstance(z[0], rc.LSTMStateTuple)
    assert [t.shape.as_list() for t in (z[0].c, z[0].h, z[1])] == [[5, 4], [5, 4], [5, 3]]
    assert z[0].c.op.name.startswith("MultiRNNCellZeroState/BasicLSTMCellZeroState/")
    b = tf.placeholder(tf.int32, [])
    zt = rc.BasicLSTMCell(4).zero_state(b, tf.float64)
    assert zt.c.shape.as_list() == [None, 4] and zt.c.dtype == tf.float64
    flat = rc.BasicLSTMCell(4, state_is_tuple=False).zero_state(2, tf.float32)
    got = run_with_weights([zt.h, flat], feed={b: 3})
    np.testing.assert_array_equal(got[0], np.zeros([3, 4]))
    assert got[1].shape == (2, 8)


# ---- variable names, shapes and sharing ------------------------------------------------
def test_variable_names_follow_tf1_and_a_cell_called_twice_shares_them():
    x, s = tf.zeros([2, 3]), rc.BasicLSTMCell(4).zero_state(2, tf.float32)
    cell = rc.BasicLSTMCell(4)
    out1, _ = cell(x, s)
    out2, _ = cell(x, s)                    # same variables
    rc.BasicLSTMCell(4)(x, s)               # a second cell: basic_lstm_cell_1
    rc.GRUCell(4, name="mygru")(x, tf.zeros([2, 4]))
    rc.BasicRNNCell(4)(x, tf.zeros([2, 4]), scope="explicit")
    assert var_names() == [
        ("basic_lstm_cell/kernel", [7, 16]), ("basic_lstm_cell/bias", [16]),
        ("basic_lstm_cell_1/kernel", [7, 16]), ("basic_lstm_cell_1/bias", [16]),
        ("mygru/gates/kernel", [7, 8]), ("mygru/gates/bias", [8]),
        ("mygru/candidate/kernel", [7, 4]), ("mygru/candidate/bias", [4]),
        ("explicit/kernel", [7, 4]), ("explicit/bias", [4])]
    assert [v.op.name for v in cell.trainable_variables] == ["basic_lstm_cell/kernel",
                                                             "basic_lstm_cell/bias"]
    a, b = run_with_weights([out1, out2])
    np.testing.assert_array_equal(a, b)


def test_lstm_cell_peepholes_and_projection_variables():
    cell = rc.LSTMCell(4, use_peepholes=True, num_proj=2, initializer=tf.zeros_initializer())
    with tf.variable_scope("lm"):
        m, st = cell(tf.ones([1, 3]), cell.zero_state(1, tf.float32))
    assert var_names() == [("lm/lstm_cell/kernel", [5, 16]), ("lm/lstm_cell/bias", [16]),
                           ("lm/lstm_cell/w_f_diag", [4]), ("lm/lstm_cell/w_i_diag", [4]),
                           ("lm/lstm_cell/w_o_diag", [4]),
                           ("lm/lstm_cell/projection/kernel", [4, 2])]
    assert m.shape.as_list() == [1, 2] and st.c.shape.as_list() == [1, 4]
    np.testing.assert_array_equal(run_with_weights(m), np.zeros([1, 2]))


def test_reuse_flag_takes_the_existing_scope_and_reuse_without_variables_fails():
    x, h = tf.zeros([2, 3]), tf.zeros([2, 4])
    rc.GRUCell(4)(x, h)
    rc.GRUCell(4, reuse=True)(x, h)
    assert len(tf.global_variables()) == 4
    with pytest.raises(ValueError, match="does not exist"):
        rc.BasicRNNCell(4, reuse=True)(x, h)


def test_multi_rnn_cell_scopes_and_state_tuple():
    cell = rc.MultiRNNCell([rc.BasicLSTMCell(4), rc.GRUCell(3)])
    out, (s0, s1) = cell(tf.zeros([2, 2]), cell.zero_state(2, tf.float32))
    assert var_names() == [
        ("multi_rnn_cell/cell_0/basic_lstm_cell/kernel", [6, 16]),
        ("multi_rnn_cell/cell_0/basic_lstm_cell/bias", [16]),
        ("multi_rnn_cell/cell_1/gru_cell/gates/kernel", [7, 6]),
        ("multi_rnn_cell/cell_1/gru_cell/gates/bias", [6]),
        ("multi_rnn_cell/cell_1/gru_cell/candidate/kernel", [7, 3]),
        ("multi_rnn_cell/cell_1/gru_cell/candidate/bias", [3])]
    assert out.shape.as_list() == [2, 3] and isinstance(s0, rc.LSTMStateTuple)


def test_multi_rnn_cell_concatenated_state_equals_tuple_state():
    x = rand(2, 3)
    flat_cell = rc.MultiRNNCell([rc.BasicRNNCell(2), rc.GRUCell(3)], state_is_tuple=False)
    tup_cell = rc.MultiRNNCell([rc.BasicRNNCell(2), rc.GRUCell(3)])
    with tf.variable_scope("flat"):
        fo, fs = flat_cell(tf.constant(x), tf.constant(np.full([2, 5], 0.3, np.float32)))
    with tf.variable_scope("tup"):
        to, ts = tup_cell(tf.constant(x), (tf.fill([2, 2], 0.3), tf.fill([2, 3], 0.3)))
    weights = {}
    for v in tf.global_variables():
        weights.setdefault(v.op.name.split("/", 1)[1], rand(*v.shape.as_list()))
    named = {v.op.name: weights[v.op.name.split("/", 1)[1]] for v in tf.global_variables()}
    fo_v, fs_v, to_v, t0, t1 = run_with_weights([fo, fs, to, ts[0], ts[1]], named)
    np.testing.assert_allclose(fo_v, to_v, rtol=1e-6)
    np.testing.assert_allclose(fs_v, np.concatenate([t0, t1], 1), rtol=1e-6)


# ---- one step against NumPy ------------------------------------------------------------
@pytest.mark.parametrize("state_is_tuple", [True, False])
def test_basic_lstm_step_matches_numpy(state_is_tuple):
    x, c, h = rand(2, 3), rand(2, 4), rand(2, 4)
    kernel, bias = rand(7, 16), rand(16)
    cell = rc.BasicLSTMCell(4, forget_bias=0.7, state_is_tuple=state_is_tuple)
    state = rc.LSTMStateTuple(tf.constant(c), tf.constant(h)) if state_is_tuple \
        else tf.constant(np.concatenate([c, h], 1))
    out, new = cell(tf.constant(x), state)
    got_out, got_state = run_with_weights(
        [out, new], {"basic_lstm_cell/kernel": kernel, "basic_lstm_cell/bias": bias})
    want_c, want_h = np_lstm_step(x, c, h, kernel, bias, forget_bias=0.7)
    np.testing.assert_allclose(got_out, want_h, rtol=1e-5, atol=1e-6)
    got_c, got_h = got_state if state_is_tuple else np.split(got_state, 2, axis=1)
    np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)


def test_gru_step_matches_numpy_and_default_gate_bias_is_one():
    x, h = rand(2, 3), rand(2, 4)
    gk, ck, cb = rand(7, 8), rand(7, 4), rand(4)
    cell = rc.GRUCell(4)
    out, new = cell(tf.constant(x), tf.constant(h))
    gate_bias = tf.global_variables()[1]
    got_out, got_new, got_gb = run_with_weights([out, new, gate_bias], {
        "gru_cell/gates/kernel": gk, "gru_cell/candidate/kernel": ck,
        "gru_cell/candidate/bias": cb})
    np.testing.assert_array_equal(got_gb, np.ones(8))
    r, u = np.split(sig(np.concatenate([x, h], 1) @ gk + 1.0), 2, axis=1)
    cand = np.tanh(np.concatenate([x, r * h], 1) @ ck + cb)
    want = u * h + (1 - u) * cand
    np.testing.assert_allclose(got_out, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got_out, got_new)


def test_basic_rnn_step_with_relu_activation():
    x, h, kernel, bias = rand(2, 3), rand(2, 2), rand(5, 2), rand(2)
    out, new = rc.BasicRNNCell(2, activation=tf.nn.relu)(tf.constant(x), tf.constant(h))
    got = run_with_weights(out, {"basic_rnn_cell/kernel": kernel, "basic_rnn_cell/bias": bias})
    np.testing.assert_allclose(got, np.maximum(np.concatenate([x, h], 1) @ kernel + bias, 0),
                               rtol=1e-5, atol=1e-6)


def test_lstm_cell_clips_cell_state_and_projection():
    cell = rc.LSTMCell(3, cell_clip=0.05, num_proj=2, proj_clip=0.01,
                       initializer=tf.constant_initializer(0.5))
    out, st = cell(tf.ones([2, 4]), cell.zero_state(2, tf.float32))
    o, c = run_with_weights([out, st.c])
    assert np.max(np.abs(c)) <= 0.05 + 1e-7 and np.isclose(np.max(np.abs(c)), 0.05)
    assert np.max(np.abs(o)) <= 0.01 + 1e-7 and np.isclose(np.max(np.abs(o)), 0.01)


def test_lstm_step_gradients_wrt_inputs_and_state():
    x0, c0, h0 = rand(2, 3, dtype=np.float64), rand(2, 2, dtype=np.float64), \
        rand(2, 2, dtype=np.float64)
    x, c, h = tf.constant(x0), tf.constant(c0), tf.constant(h0)
    cell = rc.LSTMCell(2, use_peepholes=True, initializer=tf.random_uniform_initializer(
        -0.5, 0.5, seed=1), dtype=tf.float64)
    out, st = cell(x, rc.LSTMStateTuple(c, h))
    y = tf.concat([out, st.c], 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        err = compute_gradient_error([x, c, h], [[2, 3], [2, 2], [2, 2]], y, [2, 4],
                                     x_init_value=[x0, c0, h0])
    assert err < 1e-6


# ---- wrappers ----------------------------------------------------------------------
def test_dropout_wrapper_at_keep_prob_one_is_the_plain_cell_and_adds_no_random_ops():
    x = rand(3, 2)
    cell = rc.DropoutWrapper(rc.BasicLSTMCell(4), input_keep_prob=1.0, output_keep_prob=1,
                             state_keep_prob=1.0)
    out, st = cell(tf.constant(x), cell.zero_state(3, tf.float32))
    assert var_names() == [("basic_lstm_cell/kernel", [6, 16]), ("basic_lstm_cell/bias", [16])]
    assert not [op for op in tf.get_default_graph().get_operations()
                if op.type.startswith("Random") and "/Initializer/" not in op.name]
    kernel, bias = rand(6, 16), rand(16)
    got_out, got_st = run_with_weights([out, st], {"basic_lstm_cell/kernel": kernel,
                                                   "basic_lstm_cell/bias": bias})
    want_c, want_h = np_lstm_step(x, np.zeros([3, 4]), np.zeros([3, 4]), kernel, bias)
    np.testing.assert_allclose(got_out, want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_st.c, want_c, rtol=1e-5, atol=1e-6)


def test_dropout_wrapper_drops_outputs_and_h_but_not_c_by_default():
    inner = rc.BasicLSTMCell(50)
    cell = rc.DropoutWrapper(inner, output_keep_prob=0.5, state_keep_prob=0.5, seed=3)
    x = tf.constant(rand(4, 3))
    s = cell.zero_state(4, tf.float32)
    out, st = cell(x, s)
    plain_out, plain_st = inner(x, s)   # the same variables, no dropout
    o, c, h, po, pc = run_with_weights([out, st.c, st.h, plain_out, plain_st.c])
    np.testing.assert_allclose(c, pc, rtol=1e-6)              # c untouched
    for dropped in (o, h):
        kept = dropped != 0
        assert 0.2 < kept.mean() < 0.8
        np.testing.assert_allclose(dropped[kept], 2 * po[kept], rtol=1e-5)


def test_dropout_wrapper_rejects_bad_keep_prob_and_non_cells():
    with pytest.raises(ValueError, match="input_keep_prob must be between 0 and 1"):
        rc.DropoutWrapper(rc.GRUCell(2), input_keep_prob=0.0)
    with pytest.raises(TypeError, match="must be an RNNCell.*got 'gru'"):
        rc.DropoutWrapper("gru")
    with pytest.raises(NotImplementedError, match="variational_recurrent"):
        rc.DropoutWrapper(rc.GRUCell(2), variational_recurrent=True)


def test_residual_wrapper_adds_the_input_and_checks_shapes():
    x = rand(2, 3)
    cell = rc.ResidualWrapper(rc.GRUCell(3))
    out, st = cell(tf.constant(x), tf.zeros([2, 3]))
    o, s = run_with_weights([out, st])
    np.testing.assert_allclose(o, s + x, rtol=1e-6)
    with pytest.raises(ValueError, match="compatible shapes"):
        rc.ResidualWrapper(rc.GRUCell(4))(tf.constant(x), tf.zeros([2, 4]))


def test_device_wrapper_places_ops_and_variables():
    cell = rc.DeviceWrapper(rc.BasicRNNCell(2), "/job:worker/task:1")
    out, _ = cell(tf.zeros([1, 2]), cell.zero_state(1, tf.float32))
    assert out.device == "/job:worker/task:1"
    assert all(v.device == "/job:worker/task:1" for v in tf.global_variables())


def test_multi_rnn_cell_errors_name_the_problem():
    with pytest.raises(ValueError, match="at least one cell"):
        rc.MultiRNNCell([])
    with pytest.raises(TypeError, match="list or tuple"):
        rc.MultiRNNCell(rc.GRUCell(2))
    with pytest.raises(TypeError, match=r"cells\[1\] must be an RNNCell"):
        rc.MultiRNNCell([rc.GRUCell(2), 3])
    with pytest.raises(ValueError, match="state_is_tuple"):
        rc.MultiRNNCell([rc.BasicLSTMCell(2)], state_is_tuple=False)
    cell = rc.MultiRNNCell([rc.GRUCell(2), rc.GRUCell(2)])
    with pytest.raises(ValueError, match="tuple of length 2"):
        cell(tf.zeros([1, 2]), tf.zeros([1, 2]))


def test_cell_errors_name_the_problem():
    with pytest.raises(ValueError, match="num_units must be a positive int"):
        rc.BasicLSTMCell(0)
    with pytest.raises(ValueError, match=r"inputs.shape\[-1\] to be known"):
        rc.GRUCell(2)(tf.placeholder(tf.float32, [None, None]), tf.zeros([1, 2]))
    with pytest.raises(NotImplementedError, match="must define call"):
        rc.RNNCell()(tf.zeros([1, 2]), tf.zeros([1, 2]))

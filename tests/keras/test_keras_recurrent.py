"""Keras SimpleRNN/LSTM/GRU (graph mode, unrolled) against numpy references of the TF
formulas, the orthogonal initializer and the Qr op it uses."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
K = tf.keras
L = tf.keras.layers
RNG = np.random.RandomState(0)
X = RNG.rand(2, 4, 3).astype(np.float32)


def _const(*shape):
    return RNG.rand(*shape).astype(np.float32) - 0.5


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _hard_sigmoid(v):
    return np.clip(0.2 * v + 0.5, 0.0, 1.0)


def _eval(*tensors):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(list(tensors))


def test_simple_rnn_by_hand():
    w, u, b = _const(3, 2), _const(2, 2), _const(2)
    layer = L.SimpleRNN(2, kernel_initializer=K.initializers.Constant(w),
                        recurrent_initializer=K.initializers.Constant(u),
                        bias_initializer=K.initializers.Constant(b), return_sequences=True)
    out = layer(tf.constant(X))
    assert [v.name for v in layer.weights] == ["simple_rnn/kernel:0",
                                               "simple_rnn/recurrent_kernel:0",
                                               "simple_rnn/bias:0"]
    h, want = np.zeros((2, 2), np.float32), []
    for t in range(4):
        h = np.tanh(X[:, t] @ w + h @ u + b)
        want.append(h)
    np.testing.assert_allclose(_eval(out)[0], np.stack(want, 1), rtol=1e-5, atol=1e-6)


def _lstm_reference(w, u, b, x, recurrent=_hard_sigmoid, backwards=False):
    h = c = np.zeros((x.shape[0], u.shape[0]), np.float32)
    steps = range(x.shape[1])[::-1] if backwards else range(x.shape[1])
    for t in steps:
        zi, zf, zc, zo = np.split(x[:, t] @ w + h @ u + b, 4, axis=1)
        c = recurrent(zf) * c + recurrent(zi) * np.tanh(zc)
        h = recurrent(zo) * np.tanh(c)
    return h, c


def test_lstm_tf1_defaults_by_hand():
    w, u = _const(3, 8), _const(2, 8)
    layer = L.LSTM(2, kernel_initializer=K.initializers.Constant(w),
                   recurrent_initializer=K.initializers.Constant(u))
    out = layer(tf.constant(X))
    got, bias = _eval(out, layer.bias)
    # unit_forget_bias: the forget gate's bias starts at one
    assert bias.tolist() == [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(got, _lstm_reference(w, u, bias, X)[0], rtol=1e-5, atol=1e-6)


def test_lstm_states_backwards_and_initial_state():
    w, u, b = _const(3, 8), _const(2, 8), _const(8)
    init = {"kernel_initializer": K.initializers.Constant(w),
            "recurrent_initializer": K.initializers.Constant(u),
            "bias_initializer": K.initializers.Constant(b), "unit_forget_bias": False,
            "recurrent_activation": "sigmoid"}
    out, h, c = L.LSTM(2, return_state=True, go_backwards=True, **init)(tf.constant(X))
    want_h, want_c = _lstm_reference(w, u, b, X, _sigmoid, backwards=True)
    got = _eval(out, h, c)
    np.testing.assert_allclose(got[0], want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], want_h, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], want_c, rtol=1e-5, atol=1e-6)
    layer = L.LSTM(2, **init)
    zeros = tf.zeros([2, 2])
    np.testing.assert_allclose(_eval(layer(tf.constant(X), initial_state=[zeros, zeros]))[0],
                               _lstm_reference(w, u, b, X, _sigmoid)[0], rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="2 initial state"):
        layer(tf.constant(X), initial_state=[zeros])


@pytest.mark.parametrize("reset_after", [False, True])
def test_gru_by_hand(reset_after):
    w, u = _const(3, 6), _const(2, 6)
    b = _const(2, 6) if reset_after else _const(6)
    layer = L.GRU(2, kernel_initializer=K.initializers.Constant(w),
                  recurrent_initializer=K.initializers.Constant(u),
                  bias_initializer=K.initializers.Constant(b), reset_after=reset_after)
    out = layer(tf.constant(X))
    h = np.zeros((2, 2), np.float32)
    bx, bh = (b[0], b[1]) if reset_after else (b, np.zeros(6, np.float32))
    for t in range(4):
        xz, xr, xh = np.split(X[:, t] @ w + bx, 3, axis=1)
        if reset_after:
            hz, hr, hh = np.split(h @ u + bh, 3, axis=1)
            z, r = _hard_sigmoid(xz + hz), _hard_sigmoid(xr + hr)
            cand = np.tanh(xh + r * hh)
        else:
            z = _hard_sigmoid(xz + h @ u[:, :2])
            r = _hard_sigmoid(xr + h @ u[:, 2:4])
            cand = np.tanh(xh + (r * h) @ u[:, 4:])
        h = z * h + (1 - z) * cand
    np.testing.assert_allclose(_eval(out)[0], h, rtol=1e-5, atol=1e-6)


def test_recurrent_layers_need_known_steps_and_reject_dropout():
    with pytest.raises(ValueError, match="time steps must be known"):
        L.LSTM(2)(tf.placeholder(tf.float32, [None, None, 3]))
    with pytest.raises(ValueError, match="dropout"):
        L.GRU(2, dropout=0.2)
    assert L.LSTM(3, return_sequences=True).compute_output_shape((None, 5, 2)).as_list() == \
        [None, 5, 3]


def test_lstm_learns_a_sequence_task():
    # does the first half of the sequence sum to more than the second half?
    rng = np.random.RandomState(1)
    x = rng.rand(256, 6, 1).astype(np.float32)
    y = (x[:, :3, 0].sum(1) > x[:, 3:, 0].sum(1)).astype(np.int64)
    tf.set_random_seed(2)
    model = K.Sequential([L.LSTM(8, input_shape=(6, 1)), L.Dense(2)])
    model.compile(K.optimizers.Adam(0.05),
                  lambda t, p: K.losses.sparse_categorical_crossentropy(t, p, from_logits=True),
                  metrics=["sparse_categorical_accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=30, verbose=0)
    assert history.history["sparse_categorical_accuracy"][-1] > 0.85   # ~0.92 seen


def test_orthogonal_initializer_and_qr():
    init = K.initializers.Orthogonal(gain=2.0, seed=3)
    square, wide = init([5, 5]), K.initializers.get("orthogonal")([3, 6])
    a = tf.constant(RNG.rand(4, 3))
    q, r = tf.qr(a)
    s, w, qv, rv, av = _eval(square, wide, q, r, a)
    np.testing.assert_allclose(s @ s.T, 4.0 * np.eye(5), atol=1e-5)
    np.testing.assert_allclose(w @ w.T, np.eye(3), atol=1e-5)
    assert qv.shape == (4, 3) and rv.shape == (3, 3)
    np.testing.assert_allclose(qv @ rv, av, atol=1e-10)
    np.testing.assert_allclose(np.tril(rv, -1), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="rank >= 2"):
        tf.qr(tf.constant([1.0, 2.0]))


def test_bidirectional_is_a_forward_and_a_reversed_backward_layer():
    w, u = _const(3, 8), _const(2, 8)
    init = {"kernel_initializer": K.initializers.Constant(w),
            "recurrent_initializer": K.initializers.Constant(u),
            "recurrent_activation": "sigmoid"}
    both = L.Bidirectional(L.LSTM(2, return_sequences=True, **init))(tf.constant(X))
    summed = L.Bidirectional(L.LSTM(2, **init), merge_mode="sum")(tf.constant(X))
    forward = L.LSTM(2, return_sequences=True, **init)(tf.constant(X))
    backward = L.LSTM(2, return_sequences=True, go_backwards=True, **init)(tf.constant(X))
    b, s, f, r = _eval(both, summed, forward, backward)
    assert b.shape == (2, 4, 4)
    np.testing.assert_allclose(b[..., :2], f, rtol=1e-6)
    np.testing.assert_allclose(b[..., 2:], r[:, ::-1], rtol=1e-6)   # aligned per step
    np.testing.assert_allclose(s, f[:, -1] + r[:, -1], rtol=1e-6)
    names = [v.name for v in tf.global_variables()]
    assert names[:3] == ["bidirectional/forward_lstm/kernel:0",
                         "bidirectional/forward_lstm/recurrent_kernel:0",
                         "bidirectional/forward_lstm/bias:0"]
    assert names[3] == "bidirectional/backward_lstm/kernel:0"
    with pytest.raises(ValueError, match="merge mode"):
        L.Bidirectional(L.LSTM(2), merge_mode="max")


def test_time_distributed_dense_shares_weights_over_steps():
    w = _const(3, 2)
    td = L.TimeDistributed(L.Dense(2, kernel_initializer=K.initializers.Constant(w)))
    x = tf.placeholder(tf.float32, [None, 4, 3])
    y = td(x)
    assert y.shape.as_list() == [None, 4, 2]
    assert [v.name for v in td.weights] == ["time_distributed/kernel:0",
                                            "time_distributed/bias:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = sess.run(y, {x: X})
    np.testing.assert_allclose(got, X @ w, rtol=1e-5)


def _emb_lstm(ids, table, w, u, mask_zero):
    emb = L.Embedding(5, 3, mask_zero=mask_zero,
                      embeddings_initializer=K.initializers.Constant(table))
    lstm = L.LSTM(2, kernel_initializer=K.initializers.Constant(w),
                  recurrent_initializer=K.initializers.Constant(u))
    return lstm(emb(tf.constant(ids)))


def test_masked_steps_are_skipped_as_if_the_padding_were_not_there():
    table, w, u = _const(5, 3), _const(3, 8), _const(2, 8)
    padded = _emb_lstm(np.array([[0, 0, 3, 1, 2], [4, 2, 0, 0, 0]], np.int32), table, w, u,
                       True)
    short_pre = _emb_lstm(np.array([[3, 1, 2]], np.int32), table, w, u, False)
    short_post = _emb_lstm(np.array([[4, 2]], np.int32), table, w, u, False)
    p, a, b = _eval(padded, short_pre, short_post)
    np.testing.assert_allclose(p[0], a[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p[1], b[0], rtol=1e-5, atol=1e-6)


def test_masked_average_pooling_and_mask_errors():
    emb = L.Embedding(5, 2, mask_zero=True, embeddings_initializer=K.initializers.Constant(
        np.arange(10, dtype=np.float32).reshape(5, 2)))
    e = emb(tf.constant([[1, 2, 0]]))
    assert e._keras_mask is not None
    pooled = L.GlobalAveragePooling1D()(e)
    assert _eval(pooled)[0].tolist() == [[3.0, 4.0]]    # mean of rows 1 and 2 only
    with pytest.raises(TypeError, match="does not support masking"):
        L.Flatten()(e)
    masked = L.Masking(mask_value=0.0)(tf.constant([[[0.0, 0.0], [1.0, 2.0]]]))
    assert _eval(masked._keras_mask)[0].tolist() == [[False, True]]


def test_functional_model_with_masking_replays_the_masks():
    inp = K.Input(shape=(4,), dtype=tf.int32)
    h = L.Embedding(6, 3, mask_zero=True)(inp)
    out = L.GRU(2)(h)
    model = K.Model(inp, out)
    replayed = model(tf.constant([[0, 0, 0, 5], [0, 0, 4, 5]], tf.int32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table, w, u, b = model.get_weights()
        got = sess.run(replayed)

    def gru(seq):   # TF 1.x GRU (hard_sigmoid, reset_after=False) on the unmasked ids
        h = np.zeros((1, 2), np.float32)
        for i in seq:
            xz, xr, xh = np.split(table[i][None] @ w + b, 3, axis=1)
            z, r = _hard_sigmoid(xz + h @ u[:, :2]), _hard_sigmoid(xr + h @ u[:, 2:4])
            h = z * h + (1 - z) * np.tanh(xh + (r * h) @ u[:, 4:])
        return h[0]
    np.testing.assert_allclose(got[0], gru([5]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], gru([4, 5]), rtol=1e-5, atol=1e-6)

"""tf.nn.raw_rnn (a while_loop over TensorArrays driven by loop_fn) and the static
shapes TF's dynamic_rnn gives its outputs.

raw_rnn over a loop_fn that reads the inputs and finishes rows at their lengths is
the same computation as dynamic_rnn with sequence_length: their values and
gradients must agree.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf

T, B, D, H = 4, 2, 3, 5


def _reading_loop_fn(cell, inputs_ta, lengths, loop_state_init=None):
    def loop_fn(time, cell_output, cell_state, loop_state):
        state = cell.zero_state(B, tf.float32) if cell_output is None else cell_state
        finished = time >= lengths
        nxt = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([B, D]),
                      lambda: inputs_ta.read(time))
        if cell_output is None:
            return finished, nxt, state, None, loop_state_init
        return finished, nxt, state, cell_output, (
            None if loop_state is None else loop_state + 1)
    return loop_fn


def test_raw_rnn_matches_dynamic_rnn_values_and_gradients():
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [T, B, D])
        lengths = tf.constant([4, 2])
        inputs_ta = tf.TensorArray(tf.float32, size=T).unstack(x)
        cell = tf.nn.rnn_cell.GRUCell(H)
        emit_ta, final_state, loop_state = tf.nn.raw_rnn(
            cell, _reading_loop_fn(cell, inputs_ta, lengths, tf.constant(0)))
        assert isinstance(emit_ta, tf.TensorArray)
        outs = emit_ta.stack()
        assert outs.shape.as_list() == [None, B, H]
        o2, s2 = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, time_major=True,
                                   dtype=tf.float32)
        params = tf.trainable_variables()
        assert len(params) == 4  # one GRU's variables, shared by both loops
        g1 = tf.gradients(tf.reduce_sum(outs) + tf.reduce_sum(final_state), [x] + params)
        g2 = tf.gradients(tf.reduce_sum(o2) + tf.reduce_sum(s2), [x] + params)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            xv = np.linspace(-1.0, 1.0, T * B * D, dtype=np.float32).reshape(T, B, D)
            a, b, steps, c, d, ga, gb = sess.run(
                [outs, final_state, loop_state, o2, s2, g1, g2], {x: xv})
        np.testing.assert_allclose(a, c, atol=1e-6)
        np.testing.assert_allclose(b, d, atol=1e-6)
        assert steps == 4  # loop_fn ran once per step after the first call
        np.testing.assert_allclose(a[2:, 1], 0.0)  # finished rows emit zeros
        for p, q in zip(ga, gb):
            np.testing.assert_allclose(p, q, atol=1e-5)


def test_raw_rnn_custom_emit_structure_and_no_loop_state():
    with tf.Graph().as_default():
        x = tf.constant(np.ones([T, B, D], np.float32))
        inputs_ta = tf.TensorArray(tf.float32, size=T).unstack(x)
        cell = tf.nn.rnn_cell.BasicRNNCell(H)

        def loop_fn(time, cell_output, cell_state, loop_state):
            finished = tf.fill([B], time >= T)
            nxt = tf.cond(time >= T, lambda: tf.zeros([B, D]), lambda: inputs_ta.read(time))
            if cell_output is None:  # the emit structure, without the batch dimension
                return finished, nxt, cell.zero_state(B, tf.float32), \
                    (tf.zeros([2]), tf.zeros([], tf.int32)), None
            emit = (cell_output[:, :2], tf.fill([B], time))
            return finished, nxt, cell_state, emit, None

        (pair_ta, time_ta), _, loop_state = tf.nn.raw_rnn(cell, loop_fn)
        assert loop_state is None
        firsts, times = pair_ta.stack(), time_ta.stack()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            f, t = sess.run([firsts, times])
        assert f.shape == (T, B, 2)
        np.testing.assert_array_equal(t, [[1, 1], [2, 2], [3, 3], [4, 4]])


def test_raw_rnn_argument_errors():
    with tf.Graph().as_default():
        with pytest.raises(TypeError, match="loop_fn must be a callable"):
            tf.nn.raw_rnn(tf.nn.rnn_cell.GRUCell(2), 3)


@pytest.mark.parametrize("time_major,shape,expected", [
    (False, [None, 3, 5], [None, 3, 4]),
    (True, [3, None, 5], [3, None, 4]),
])
def test_dynamic_rnn_keeps_the_static_time_dimension(time_major, shape, expected):
    # TF 1.x sets the known time (and batch) sizes on dynamic_rnn's outputs.
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, shape)
        out, _ = tf.nn.dynamic_rnn(tf.nn.rnn_cell.BasicLSTMCell(4), x, dtype=tf.float32,
                                   time_major=time_major)
        assert out.shape.as_list() == expected
        (fw, bw), _ = tf.nn.bidirectional_dynamic_rnn(
            tf.nn.rnn_cell.GRUCell(4), tf.nn.rnn_cell.GRUCell(4), x, dtype=tf.float32,
            time_major=time_major)
        assert fw.shape.as_list() == expected and bw.shape.as_list() == expected


# TF 2.21 (compat.v1, control flow v1) on the same cell, loop_fn and inputs.
_TF_OUTPUTS = [[[0.66377, 0.45831], [0.52421, 0.34938]],
               [[0.57408, 0.57021], [0.3545, 0.40044]], [[0.24246, 0.39525], [0.0, 0.0]],
               [[-0.30109, -0.02246], [0.0, 0.0]]]
_TF_FINAL = [[-0.30109, -0.02246], [0.3545, 0.40044]]
_TF_LOOP_STATE = 3.69073
_TF_GRAD = [[[-2.37329, -1.13652, 0.10024], [-3.12225, -1.50617, 0.10991]],
            [[-2.54721, -1.24424, 0.05872], [-3.20573, -1.58717, 0.03139]],
            [[-3.04352, -1.50083, 0.04186], [-0.87856, -0.43968, -0.00081]],
            [[-2.5301, -1.25754, 0.01503], [-0.77394, -0.38128, 0.01138]]]


class FixedCell(tf.nn.rnn_cell.RNNCell):
    """h' = tanh([x, h] @ W) with a constant W: no variables, the same in TF."""

    @property
    def output_size(self):
        return 2

    @property
    def state_size(self):
        return 2

    def call(self, x, s):
        w = np.linspace(-0.5, 0.5, 10).reshape(5, 2).astype(np.float32)
        h = tf.tanh(tf.matmul(tf.concat([x, s], 1), tf.constant(w)))
        return h, h


def test_raw_rnn_values_loop_state_and_gradients_match_tensorflow():
    with tf.Graph().as_default():
        cell = FixedCell()
        x = tf.constant(np.linspace(-1, 1, 24).reshape(4, 2, 3).astype(np.float32))
        lengths = tf.constant([4, 2])
        inputs_ta = tf.TensorArray(tf.float32, size=4).unstack(x)

        def loop_fn(time, cell_output, cell_state, loop_state):
            if cell_output is None:
                state, emit, ls = cell.zero_state(2, tf.float32), None, tf.constant(0.0)
            else:
                state, emit = cell_state, cell_output
                ls = loop_state + tf.reduce_sum(cell_output)
            finished = time >= lengths
            nxt = tf.cond(tf.reduce_all(finished), lambda: tf.zeros([2, 3]),
                          lambda: inputs_ta.read(time))
            return finished, nxt, state, emit, ls

        out_ta, final, ls = tf.nn.raw_rnn(cell, loop_fn)
        outs = out_ta.stack()
        (g,) = tf.gradients(tf.reduce_sum(outs) + tf.reduce_sum(final) + ls, x)
        with tf.Session() as sess:
            o, f, lv, gv = sess.run([outs, final, ls, g])
        np.testing.assert_allclose(o, _TF_OUTPUTS, atol=2e-5)
        np.testing.assert_allclose(f, _TF_FINAL, atol=2e-5)
        assert lv == pytest.approx(_TF_LOOP_STATE, abs=2e-5)
        np.testing.assert_allclose(gv, _TF_GRAD, atol=2e-5)

"""`tf.contrib.rnn`: the tf.nn.rnn_cell classes and the static RNN functions under
their contrib names.

Example:
    >>> cell = tf.contrib.rnn.BasicLSTMCell(64)
    >>> outputs, state = tf.contrib.rnn.static_rnn(cell, tf.unstack(x, axis=1),
    ...                                            dtype=tf.float32)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.rnn.rnn_cell import (
    BasicLSTMCell as BasicLSTMCell, BasicRNNCell as BasicRNNCell, DeviceWrapper as DeviceWrapper,
    DropoutWrapper as DropoutWrapper, GRUCell as GRUCell, LSTMCell as LSTMCell,
    LSTMStateTuple as LSTMStateTuple, MultiRNNCell as MultiRNNCell, ResidualWrapper as
    ResidualWrapper, RNNCell as RNNCell)
from tensorweave.rnn.static_rnn import (
    static_bidirectional_rnn as static_bidirectional_rnn, static_rnn as static_rnn)

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "LSTMStateTuple",
           "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper", "static_rnn",
           "static_bidirectional_rnn"]

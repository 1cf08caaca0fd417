"""`tf.nn.rnn_cell`: the TF 1.x cell classes.

Example:
    >>> cell = tf.nn.rnn_cell.MultiRNNCell([tf.nn.rnn_cell.BasicLSTMCell(64),
    ...                                     tf.nn.rnn_cell.GRUCell(32)])
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.rnn.cell_base import LSTMStateTuple as LSTMStateTuple
from tensorweave.rnn.cell_base import RNNCell as RNNCell
from tensorweave.rnn.cell_wrappers import (
    DeviceWrapper as DeviceWrapper, DropoutWrapper as DropoutWrapper,
    MultiRNNCell as MultiRNNCell, ResidualWrapper as ResidualWrapper)
from tensorweave.rnn.cells import (
    BasicLSTMCell as BasicLSTMCell, BasicRNNCell as BasicRNNCell, GRUCell as GRUCell,
    LSTMCell as LSTMCell)

__all__ = ["RNNCell", "BasicRNNCell", "BasicLSTMCell", "LSTMCell", "GRUCell", "LSTMStateTuple",
           "MultiRNNCell", "DropoutWrapper", "ResidualWrapper", "DeviceWrapper"]

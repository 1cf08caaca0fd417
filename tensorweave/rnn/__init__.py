"""Recurrent networks, TF 1.x's `tf.nn.rnn_cell` and `tf.nn.*_rnn`.

- `cell_base`: RNNCell (scope capture, variable building, zero_state) and
  LSTMStateTuple;
- `cells`: BasicRNNCell, BasicLSTMCell, LSTMCell, GRUCell;
- `cell_wrappers`: MultiRNNCell, DropoutWrapper, ResidualWrapper, DeviceWrapper;
- `rnn_ops`: dynamic_rnn, bidirectional_dynamic_rnn (on one FunctionalScan op);
- `raw_rnn`: raw_rnn (a while_loop writing TensorArrays, driven by a loop_fn);
- `static_rnn`: static_rnn, static_bidirectional_rnn (unrolled);
- `rnn_util`: their argument checks (inputs, state, sequence_length);
- `rnn_cell` and `contrib_rnn`: the public namespaces `tf.nn.rnn_cell` and
  `tf.contrib.rnn`.
"""

"""`tf.nn` functions built from ops, defining none (TF's `nn_impl` and wrappers).

- `sampled_losses`: `tf.nn.nce_loss`, `tf.nn.sampled_softmax_loss`;
- `embedding_sparse`: `embedding_lookup_sparse`, `safe_embedding_lookup_sparse`;
- `conv_wrappers`: `tf.nn.convolution`, `pool`, `atrous_conv2d`, ... over the conv and
  pool ops.

Their ops are in `ops/nn/`; `tensorweave/nn.py` (`tf.nn`) re-exports these.
"""

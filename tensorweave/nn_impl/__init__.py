"""`tf.nn` functions built from ops, defining none (TF's `nn_impl` and wrappers).

- `sampled_losses`: `tf.nn.nce_loss`, `tf.nn.sampled_softmax_loss`;
- `embedding_sparse`: `embedding_lookup_sparse`, `safe_embedding_lookup_sparse`;
- `conv_wrappers`: `tf.nn.convolution`, `pool`, `atrous_conv2d`, ... over the conv and
  pool ops;
- `depthwise_conv`: `tf.nn.depthwise_conv2d`, `separable_conv2d` over
  DepthwiseConv2dNative (and Conv2D);
- `space_to_batch_conv`: `tf.nn.with_space_to_batch`, `required_space_to_batch_paddings`,
  how the dilated (atrous) functions above are built.

Their ops are in `ops/nn/`; `tensorweave/nn.py` (`tf.nn`) re-exports these.
"""

"""TF's data-flow structures as Python classes, built on ops and defining none:

- `data_flow_ops`: TF's `data_flow_ops` classes, `tf.FIFOQueue`, `RandomShuffleQueue`,
  `PaddingFIFOQueue`, `PriorityQueue` (`QueueBase`), `ConditionalAccumulator`,
  `SparseConditionalAccumulator`, on the queue and accumulator ops of `ops/data_flow/`;
  `tf.queue`, `tf.io` and `tf.train`'s input pipelines use them;
- `tensor_array`: `tf.TensorArray`, on the ops of `ops/tensor_array/`.
"""

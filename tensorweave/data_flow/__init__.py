"""TF's `data_flow_ops` Python classes: `tf.FIFOQueue`, `RandomShuffleQueue`,
`PaddingFIFOQueue`, `PriorityQueue` (`QueueBase`), `ConditionalAccumulator`,
`SparseConditionalAccumulator`, built on the queue and accumulator ops of
`ops/data_flow/`; `tf.queue`, `tf.io` and `tf.train`'s input pipelines use them.
"""

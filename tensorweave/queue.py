"""`tf.queue`: the TF 1.13+ names of the queues (`tf.queue.FIFOQueue`, ...).

The same classes are at the top level under their TF1 names (`tf.FIFOQueue`, ...),
and some also under `tf.io` (as in TF 1.15).

Example:
    >>> q = tf.queue.FIFOQueue(10, [tf.float32], shapes=[[]])
    >>> p = tf.queue.PriorityQueue(10, [tf.string], shapes=[[]])
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.data_flow.data_flow_ops import (
    FIFOQueue as FIFOQueue, PaddingFIFOQueue as PaddingFIFOQueue,
    PriorityQueue as PriorityQueue, QueueBase as QueueBase,
    RandomShuffleQueue as RandomShuffleQueue)

__all__ = ["FIFOQueue", "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue"]

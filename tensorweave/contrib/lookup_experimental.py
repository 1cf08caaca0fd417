"""`tf.lookup.experimental`: the mutable hash tables (DenseHashTable in TF 1.15; TF's later
1.x-compatible API adds MutableHashTable here too).

Example:
    >>> table = tf.lookup.experimental.DenseHashTable(
    ...     tf.string, tf.int64, default_value=-1, empty_key="", deleted_key="$")
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.contrib.mutable_tables import DenseHashTable as DenseHashTable
from tensorweave.contrib.mutable_tables import MutableHashTable as MutableHashTable

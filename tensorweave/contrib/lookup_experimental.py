"""`tf.lookup.experimental` (TF 1.15): the dense mutable hash table.

Example:
    >>> table = tf.lookup.experimental.DenseHashTable(
    ...     tf.string, tf.int64, default_value=-1, empty_key="", deleted_key="$")
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.contrib.mutable_tables import DenseHashTable as DenseHashTable

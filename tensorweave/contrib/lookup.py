"""`tf.contrib.lookup` (and TF 1.15's `tf.lookup`): hash tables from tensors or text
files, vocabulary id tables with OOV buckets, and id -> string tables.

Example:
    >>> table = tf.contrib.lookup.index_table_from_tensor(
    ...     tf.constant(["emerson", "lake", "palmer"]), num_oov_buckets=1)
    >>> ids = table.lookup(tokens)   # run tf.tables_initializer() first
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.lookup.tables import (
    FastHashSpec as FastHashSpec, HashTable as HashTable, HasherSpec as HasherSpec,
    KeyValueTensorInitializer as KeyValueTensorInitializer,
    LookupInterface as LookupInterface, StrongHashSpec as StrongHashSpec,
    TextFileIdTableInitializer as TextFileIdTableInitializer,
    TextFileIndex as TextFileIndex, TextFileInitializer as TextFileInitializer,
    TextFileStringTableInitializer as TextFileStringTableInitializer)
from tensorweave.lookup.vocab_tables import (
    IdTableWithHashBuckets as IdTableWithHashBuckets,
    StaticVocabularyTable as StaticVocabularyTable,
    index_table_from_file as index_table_from_file,
    index_table_from_tensor as index_table_from_tensor, index_to_string as index_to_string,
    index_to_string_table_from_file as index_to_string_table_from_file,
    index_to_string_table_from_tensor as index_to_string_table_from_tensor,
    string_to_index as string_to_index)
from tensorweave.contrib.mutable_tables import MutableHashTable as MutableHashTable
from tensorweave.contrib.mutable_tables import DenseHashTable as MutableDenseHashTable
from tensorweave.contrib import lookup_experimental as experimental
# TF 1.15's tf.lookup name for it: HashTable without shared_name.
from tensorweave.lookup.tables import StaticHashTable as StaticHashTable

"""Lookup tables (TF's `lookup_ops`): the table classes and the vocabulary tables.

A library built on the table ops of `ops/lookup/` (`table_ops`, `vocab_ops`,
`hash_ops`), used by `tf.contrib.lookup`, feature columns and the canned estimators'
heads:

- `tables`: `LookupInterface`, `InitializableLookupTableBase`, `HashTable` /
  `StaticHashTable`, the initializers (`KeyValueTensorInitializer`,
  `TextFileInitializer`, ...) and `IdTableWithHashBuckets`;
- `vocab_tables`: `index_table_from_tensor`, `index_table_from_file`,
  `index_to_string_table_from_tensor`, ... (TF's vocabulary helpers).
"""

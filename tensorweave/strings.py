"""`tf.strings`: string ops under their TF 1.13+ names (`tf.strings.split`,
`tf.strings.length`, ...); the TF1 top-level names (`tf.string_split`, `tf.substr`,
`tf.regex_replace`, ...) are the same functions.

Example:
    >>> tokens = tf.strings.split(tf.strings.lower(lines))   # a SparseTensor
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.ops.lookup.hash_ops import as_string as as_string
from tensorweave.ops.lookup.hash_ops import (
    string_to_hash_bucket as to_hash_bucket,
    string_to_hash_bucket_fast as to_hash_bucket_fast,
    string_to_hash_bucket_strong as to_hash_bucket_strong)
from tensorweave.ops.strings.format_ops import format as format  # noqa: A001 - TF's name
from tensorweave.ops.strings.regex_ops import (
    regex_full_match as regex_full_match, regex_replace as regex_replace)
from tensorweave.ops.strings.split_ops import (
    reduce_join as reduce_join, split as split, string_join as join)
from tensorweave.ops.strings.string_ops import (
    length as length, lower as lower, strip as strip, substr as substr,
    to_number as to_number, upper as upper)

"""`tf.contrib.data`: the TF 1.10-1.12 home of `AUTOTUNE` (later tf.data.experimental).

Example:
    >>> ds = ds.prefetch(tf.contrib.data.AUTOTUNE)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.data.experimental import AUTOTUNE as AUTOTUNE

__all__ = ["AUTOTUNE"]

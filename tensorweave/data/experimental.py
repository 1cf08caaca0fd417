"""`tf.data.experimental`: constants of the tf.data API.

Example:
    >>> ds = ds.prefetch(tf.data.experimental.AUTOTUNE)
"""
# `Dataset.prefetch(AUTOTUNE)` buffers a few elements (PrefetchDataset.AUTOTUNE_BUFFER).
AUTOTUNE = -1

__all__ = ["AUTOTUNE"]

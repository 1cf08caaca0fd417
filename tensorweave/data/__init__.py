"""`tf.data`: Datasets and their iterators.

Example:
    >>> ds = tf.data.Dataset.from_tensor_slices([1, 2, 3]).map(lambda x: x * 2).batch(2)
    >>> nxt = ds.make_one_shot_iterator().get_next()
    >>> with tf.Session() as sess:
    ...     sess.run(nxt)
    array([2, 4], dtype=int32)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.data import nested as _nested  # registers with Dataset
from tensorweave.data import sources as _sources  # registers with Dataset
from tensorweave.data import transforms as _transforms  # registers with Dataset
from tensorweave.data.dataset import Dataset as Dataset
from tensorweave.data.iterator import (
    Iterator as Iterator, make_initializable_iterator as make_initializable_iterator,
    make_one_shot_iterator as make_one_shot_iterator)
from tensorweave.data.readers import TFRecordDataset as TFRecordDataset
from tensorweave.data.text_readers import (
    FixedLengthRecordDataset as FixedLengthRecordDataset, TextLineDataset as TextLineDataset)
from tensorweave.data import experimental as experimental
from tensorweave.data.structure import (
    get_output_classes as get_output_classes, get_output_shapes as get_output_shapes,
    get_output_types as get_output_types)

__all__ = ["Dataset", "FixedLengthRecordDataset", "Iterator", "TFRecordDataset",
           "TextLineDataset", "experimental", "get_output_classes", "get_output_shapes",
           "get_output_types", "make_one_shot_iterator", "make_initializable_iterator"]

"""`tf.io`: TFRecord files, parsing serialized `tf.train.Example`s, and `tf.io.gfile`.

Example:
    >>> ds = tf.data.TFRecordDataset(path).batch(64)
    >>> feats = ds.map(lambda rec: tf.io.parse_example(
    ...     rec, {"y": tf.io.FixedLenFeature([], tf.int64)}))
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.framework.tfrecord import (
    TFRecordCompressionType as TFRecordCompressionType, TFRecordOptions as TFRecordOptions,
    TFRecordWriter as TFRecordWriter, tf_record_iterator as tf_record_iterator)
from tensorweave.platform import gfile as gfile
from tensorweave.ops.io.file_ops import (
    matching_files as matching_files, read_file as read_file, write_file as write_file)
from tensorweave.ops.parsing.csv_ops import decode_csv as decode_csv
from tensorweave.ops.parsing.parsing_ops import (
    FixedLenFeature as FixedLenFeature, FixedLenSequenceFeature as FixedLenSequenceFeature,
    SparseFeature as SparseFeature, VarLenFeature as VarLenFeature, decode_raw as decode_raw,
    parse_example as parse_example,
    parse_single_example as parse_single_example)

from tensorweave.readers.readers import match_filenames_once as match_filenames_once
from tensorweave.data_flow.data_flow_ops import (  # TF 1.15's tf.io names of the queues
    PaddingFIFOQueue as PaddingFIFOQueue, PriorityQueue as PriorityQueue,
    QueueBase as QueueBase, RandomShuffleQueue as RandomShuffleQueue)
from tensorweave.ops.image.codec_ops import (
    decode_and_crop_jpeg as decode_and_crop_jpeg, decode_bmp as decode_bmp,
    decode_gif as decode_gif, decode_jpeg as decode_jpeg, decode_png as decode_png,
    extract_jpeg_shape as extract_jpeg_shape)
from tensorweave.image_impl.decode_image_ops import decode_image as decode_image, is_jpeg as is_jpeg
from tensorweave.ops.image.encode_ops import encode_jpeg as encode_jpeg, encode_png as encode_png
from tensorweave.ops.parsing.sequence_example_ops import (
    parse_sequence_example as parse_sequence_example,
    parse_single_sequence_example as parse_single_sequence_example)

__all__ = [
    "PaddingFIFOQueue", "PriorityQueue", "QueueBase", "RandomShuffleQueue",
    "FixedLenFeature", "FixedLenSequenceFeature", "SparseFeature", "TFRecordCompressionType",
    "TFRecordOptions", "TFRecordWriter", "VarLenFeature", "decode_and_crop_jpeg", "decode_bmp",
    "decode_csv",
    "decode_gif", "decode_image", "decode_jpeg", "decode_png", "decode_raw", "encode_jpeg",
    "encode_png", "extract_jpeg_shape", "gfile", "is_jpeg",
    "match_filenames_once", "matching_files",
    "parse_example", "parse_sequence_example", "parse_single_example",
    "parse_single_sequence_example", "read_file", "tf_record_iterator", "write_file",
]

"""TF1's queue-based readers: `tf.TFRecordReader`, `tf.TextLineReader`,
`tf.FixedLengthRecordReader`, `tf.WholeFileReader`, `tf.IdentityReader` (all
`tf.ReaderBase`), and `tf.train.match_filenames_once`.

A reader takes work units (file names) from a string queue, usually
`tf.train.string_input_producer`, and produces (key, value) records. It is a
resource on the device it is created on, shared across session.run calls: each read
continues where the last one stopped. When the filename queue is closed and empty a
read raises tf.errors.OutOfRangeError, so queue runners, `tf.train.batch` and
MonitoredTrainingSession end cleanly at `num_epochs`.

Example (the CIFAR-10 tutorial's input):
    >>> files = tf.train.string_input_producer(["data_batch_1.bin"], num_epochs=10)
    >>> reader = tf.FixedLengthRecordReader(record_bytes=1 + 32 * 32 * 3)
    >>> key, value = reader.read(files)
    >>> record = tf.decode_raw(value, tf.uint8)
    >>> label, image = record[0], tf.reshape(record[1:], [3, 32, 32])
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tfrecord import compression_name
from tensorweave.ops.io import reader_kernels  # noqa: F401 - registers the ops
from tensorweave.ops.io.file_ops import matching_files
from tensorweave.state.variables import Variable

# What a read returns, as TF's generated op wrappers do (fetching it keeps the names).


class ReaderBase:
    """Base class of the readers: the ops that read from a work queue.

    Args:
        reader_ref: the reader op's handle output.
        supports_serialize: whether serialize_state/restore_state work (TF: only
            IdentityReader and WholeFileReader).

    Example:
        >>> reader = tf.TextLineReader()
        >>> key, line = reader.read(tf.train.string_input_producer(["a.txt"]))
    """

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False) -> None:
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    @property
    def reader_ref(self) -> Tensor:
        """The reader's handle (a reference to its resource)."""
        return self._reader_ref

    @property
    def supports_serialize(self) -> bool:
        """Whether the reader can serialize and restore its state."""
        return self._supports_serialize

    def _op(self, op_type: str, inputs: list[Any], name: str | None) -> Operation:
        return self._reader_ref.graph.create_op(op_type, [self._reader_ref] + inputs, {},
                                                name=name or op_type)

    def read(self, queue: Any, name: str | None = None) -> Any:
        """The next record: (key, value) scalar strings.

        When the current work unit has no more records, the next is dequeued from
        `queue` (the read waits while it is empty).

        Args:
            queue: a queue of strings (e.g. `tf.train.string_input_producer`'s), or
                its `queue_ref`.
            name: a name for the op.

        Raises:
            TypeError: `queue` is neither a queue nor a queue reference.
            ValueError: the queue does not hold single strings.
            tf.errors.OutOfRangeError: (at run time) the queue is closed and empty.

        Example:
            >>> key, value = reader.read(filename_queue)
        """
        with self._reader_ref.graph.as_default():
            # TF's namedtuple ReaderReadV2(key, value).
            return op_result(self._op("ReaderReadV2", [_queue_ref(queue)], name))

    def read_up_to(self, queue: Any, num_records: Any,
                   name: str | None = None) -> Any:
        """Up to `num_records` records: (keys, values) string vectors.

        A call stops early where a work unit (file) ends, as TF's does, so batches
        may be short; it raises OutOfRangeError only when it got no record at all.

        Example:
            >>> keys, values = reader.read_up_to(filename_queue, 100)
        """
        with self._reader_ref.graph.as_default():
            n = convert_to_tensor(num_records, dtype=_dt.int64, name="num_records")
            # TF's namedtuple ReaderReadUpToV2(keys, values).
            return op_result(self._op("ReaderReadUpToV2", [_queue_ref(queue), n], name))

    def num_records_produced(self, name: str | None = None) -> Tensor:
        """The number of records this reader has produced (int64 scalar).

        Example:
            >>> sess.run(reader.num_records_produced())
            3
        """
        with self._reader_ref.graph.as_default():
            return self._op("ReaderNumRecordsProducedV2", [], name).outputs[0]

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        """The number of work units (files) this reader has finished (int64 scalar).

        Example:
            >>> sess.run(reader.num_work_units_completed())
            1
        """
        with self._reader_ref.graph.as_default():
            return self._op("ReaderNumWorkUnitsCompletedV2", [], name).outputs[0]

    def serialize_state(self, name: str | None = None) -> Tensor:
        """The reader's state as a string (UnimplementedError at run time for readers
        without `supports_serialize`).

        Example:
            >>> state = sess.run(reader.serialize_state())
        """
        with self._reader_ref.graph.as_default():
            return self._op("ReaderSerializeStateV2", [], name).outputs[0]

    def restore_state(self, state: Any, name: str | None = None) -> Operation:
        """Restores a state from serialize_state; a bad state resets the reader.

        Raises:
            ValueError: `state` is not a scalar string.

        Example:
            >>> sess.run(reader.restore_state(state))
        """
        with self._reader_ref.graph.as_default():
            t = convert_to_tensor(state, dtype=_dt.string, name="state")
            return self._op("ReaderRestoreStateV2", [t], name)

    def reset(self, name: str | None = None) -> Operation:
        """Forgets the current work unit and zeroes the counters.

        Example:
            >>> sess.run(reader.reset())
        """
        with self._reader_ref.graph.as_default():
            return self._op("ReaderResetV2", [], name)


def _queue_ref(queue: Any) -> Tensor:
    if isinstance(queue, Tensor):
        return queue
    ref = getattr(queue, "queue_ref", None)
    if not isinstance(ref, Tensor):
        raise TypeError(f"A reader reads from a queue (tf.FIFOQueue, "
                        f"tf.train.string_input_producer) or its queue_ref, not {queue!r}.")
    dtypes = getattr(queue, "dtypes", None)
    if dtypes is not None and [d.base_dtype for d in dtypes] != [_dt.string]:
        raise ValueError(f"A reader's queue must hold single strings (file names); "
                         f"{ref.op.name} holds {[d.name for d in dtypes]}.")
    return ref


def _reader(op_type: str, attrs: dict[str, Any], name: str | None) -> Tensor:
    return get_default_graph().create_op(op_type, [], attrs, name=name or op_type).outputs[0]


class TFRecordReader(ReaderBase):
    """Reads the records of TFRecord files; keys are "<file>:<byte offset>".

    Args:
        name: a name for the reader op.
        options: a `tf.python_io.TFRecordOptions` or compression name ("", "ZLIB",
            "GZIP"; a TFRecordCompressionType too).

    Example:
        >>> key, serialized = tf.TFRecordReader().read(filename_queue)
        >>> feats = tf.parse_single_example(serialized, {"x": tf.FixedLenFeature([], tf.int64)})
    """

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        compression = compression_name(options)  # options, a name or a code
        super().__init__(_reader("TFRecordReaderV2", {"compression_type": compression}, name))


class TextLineReader(ReaderBase):
    """Reads the lines of text files; keys are "<file>:<line number, from 1>".

    Args:
        skip_header_lines: lines to skip at the start of each file (default 0).
        name: a name for the reader op.

    Example:
        >>> key, line = tf.TextLineReader(skip_header_lines=1).read(filename_queue)
    """

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        super().__init__(_reader("TextLineReaderV2",
                                 {"skip_header_lines": int(skip_header_lines or 0)}, name))


class FixedLengthRecordReader(ReaderBase):
    """Reads fixed-length records; keys are "<file>:<record index, from 0>".

    Each file is `header_bytes`, then records of `record_bytes` starting every
    `hop_bytes` (0 or None: back to back), then `footer_bytes`. A body that records
    do not exactly cover is an error naming the file and the sizes (TF 1.x silently
    dropped the leftover bytes).

    Args:
        record_bytes: the size of a record (> 0).
        header_bytes, footer_bytes: bytes to skip at each file's start and end.
        hop_bytes: the distance between record starts (0/None: record_bytes).
        name: a name for the reader op.
        encoding: "" (none), "GZIP" or "ZLIB": the files' compression.

    Raises:
        ValueError: a size out of range or an unknown encoding.

    Example:
        >>> reader = tf.FixedLengthRecordReader(record_bytes=1 + 3072)   # CIFAR-10
        >>> key, value = reader.read(filename_queue)
    """

    def __init__(self, record_bytes: int, header_bytes: int | None = None,
                 footer_bytes: int | None = None, hop_bytes: int | None = None,
                 name: str | None = None, encoding: str | None = None) -> None:
        attrs = {"record_bytes": int(record_bytes), "header_bytes": int(header_bytes or 0),
                 "footer_bytes": int(footer_bytes or 0), "hop_bytes": int(hop_bytes or 0),
                 "encoding": encoding or ""}
        super().__init__(_reader("FixedLengthRecordReaderV2", attrs, name))


class WholeFileReader(ReaderBase):
    """Reads each file whole: key the file name, value its contents.

    Example:
        >>> name, contents = tf.WholeFileReader().read(filename_queue)
        >>> image = tf.image.decode_png(contents)
    """

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader("WholeFileReaderV2", {}, name), supports_serialize=True)


class IdentityReader(ReaderBase):
    """Outputs each work unit from the queue as both key and value.

    Example:
        >>> key, value = tf.IdentityReader().read(queue)   # b"A", b"A"
    """

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader("IdentityReaderV2", {}, name), supports_serialize=True)


def match_filenames_once(pattern: Any, name: str | None = None) -> Variable:
    """A local variable holding the sorted files matching `pattern` (a glob, or a list),
    matched once: when `tf.local_variables_initializer()` runs.

    Example:
        >>> files = tf.train.match_filenames_once("/data/train-*.tfrecord")
        >>> queue = tf.train.string_input_producer(files, num_epochs=5)
        >>> sess.run(tf.local_variables_initializer())
    """
    # Built from a function, the MatchingFiles op lives under the variable's name (TF's
    # "matching_filenames/..."), with the variable's device.
    return Variable(lambda: matching_files(pattern), name=name or "matching_filenames",
                    trainable=False, validate_shape=False,
                    collections=[GraphKeys.LOCAL_VARIABLES])


__all__ = ["FixedLengthRecordReader", "IdentityReader", "ReaderBase", "TFRecordReader",
           "TextLineReader", "WholeFileReader", "match_filenames_once"]

"""TF1 reader ops, with TF's names and attrs: the reader ops (TFRecordReaderV2,
TextLineReaderV2, FixedLengthRecordReaderV2, WholeFileReaderV2, IdentityReaderV2) and
the verbs on a reader (ReaderReadV2, ReaderReadUpToV2, ReaderNumRecordsProducedV2,
ReaderNumWorkUnitsCompletedV2, ReaderResetV2, ReaderSerializeStateV2,
ReaderRestoreStateV2).

A reader op is a "context" kernel returning the reader resource from its device's
ResourceMgr, keyed by (container, shared_name or node name), as queue ops do; its
handle is a reference (TF's resource handle), so the placer puts every verb on the
reader's device. Reads, reset and state ops are async kernels: they wait in turn on
the reader, and a read waits on the filename queue without holding a thread.

Example:
    >>> r = g.create_op("TextLineReaderV2", [], {"skip_header_lines": 1})
    >>> key, value = g.create_op("ReaderReadV2", [r.outputs[0], q.queue_ref]).outputs
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.ops.op_author import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.framework.tfrecord import compression_name
from tensorweave.kernels.reader_resource import ReaderResource
from tensorweave.kernels.reader_sources import (
    FixedLengthRecordReaderResource, IdentityReaderResource, TextLineReaderResource,
    TFRecordReaderResource, WholeFileReaderResource)

_SHARING = {"container": "", "shared_name": ""}


def _lookup(ctx: Any, kind: type[ReaderResource], container: str, shared_name: str,
            make: Callable[[str, Any], ReaderResource]) -> ReaderResource:
    key = shared_name or ctx.name
    policy = ctx.library.device.file_policy
    reader = ctx.resources.lookup_or_create(container, key, lambda: make(ctx.name, policy))
    if type(reader) is not kind:
        raise errors.InvalidArgumentError(
            None, None, f"Resource {container or '<default>'}/{key} exists but is a "
            f"{type(reader).__name__}, not a {kind.__name__}. Use another shared_name.")
    return reader


def _reader_op(op_type: str, attrs: dict[str, Any], kind: type[ReaderResource],
               check: Callable[..., None] | None = None) -> Any:
    """A reader op: no inputs, a handle output, `attrs` given to the resource."""
    op = define_op(op_type, attrs=dict(attrs, **_SHARING), stateful=True)

    @op.shape
    def _(**given: Any) -> Any:
        if check is not None:
            check(**{k: v for k, v in given.items() if k in attrs})
        return _dt.string._as_ref, TensorShape([2])

    @op.kernel("CPU", kind="context")
    def _(ctx: Any, step: Any, *, container: str, shared_name: str,
          **given: Any) -> ReaderResource:
        return _lookup(ctx, kind, container, shared_name,
                       lambda name, policy: kind(name, policy, **given))

    op.no_gradient()
    return op


def _check_text(*, skip_header_lines: int) -> None:
    if int(skip_header_lines) < 0:
        raise ValueError(f"TextLineReader: skip_header_lines must be >= 0, got "
                         f"{skip_header_lines}.")


def _check_fixed(*, record_bytes: Any, header_bytes: int, footer_bytes: int, hop_bytes: int,
                 encoding: str) -> None:
    if record_bytes is REQUIRED or int(record_bytes) <= 0:
        raise ValueError(f"FixedLengthRecordReader: record_bytes must be > 0, got "
                         f"{record_bytes!r}.")
    for name, v in (("header_bytes", header_bytes), ("footer_bytes", footer_bytes),
                    ("hop_bytes", hop_bytes)):
        if int(v) < 0:
            raise ValueError(f"FixedLengthRecordReader: {name} must be >= 0, got {v}.")
    try:
        compression_name(encoding)
    except ValueError:
        raise ValueError(f"FixedLengthRecordReader: unknown encoding {encoding!r}; use "
                         "\"\" (none), \"GZIP\" or \"ZLIB\".") from None


def _check_tfrecord(*, compression_type: str) -> None:
    compression_name(compression_type)  # ValueError names the bad one


_reader_op("IdentityReaderV2", {}, IdentityReaderResource)
_reader_op("WholeFileReaderV2", {}, WholeFileReaderResource)
_reader_op("TextLineReaderV2", {"skip_header_lines": 0}, TextLineReaderResource, _check_text)
_reader_op("TFRecordReaderV2", {"compression_type": ""}, TFRecordReaderResource,
           _check_tfrecord)
_reader_op("FixedLengthRecordReaderV2",
           {"header_bytes": 0, "record_bytes": REQUIRED, "footer_bytes": 0, "hop_bytes": 0,
            "encoding": ""}, FixedLengthRecordReaderResource, _check_fixed)


# ---- the verbs ---------------------------------------------------------------------
def _check_refs(op_type: str, reader: Tensor, queue: Tensor | None = None) -> None:
    if not reader.dtype.is_ref_dtype:
        raise TypeError(f"{op_type} needs a reader's handle (reader.reader_ref) as its "
                        f"first input, but {reader.name} has dtype {reader.dtype.name}.")
    if queue is not None and (not queue.dtype.is_ref_dtype
                              or queue.dtype.base_dtype != _dt.string):
        raise TypeError(f"{op_type} needs a queue's handle (queue.queue_ref) as its "
                        f"queue input, but {queue.name} has dtype {queue.dtype.name}.")


def _reader_of(value: Any, op_type: str) -> ReaderResource:
    if not isinstance(value, ReaderResource):
        raise errors.InvalidArgumentError(
            None, None, f"{op_type}: its first input is a {type(value).__name__}, not a "
            "reader. Pass reader.reader_ref.")
    return value


read_op = define_op("ReaderReadV2", inputs=("&reader_handle", "&queue_handle"),
                    stateful=True)


@read_op.shape
def _(reader_handle: Tensor, queue_handle: Tensor) -> list:
    _check_refs("ReaderReadV2", reader_handle, queue_handle)
    return [(_dt.string, TensorShape([])), (_dt.string, TensorShape([]))]


@read_op.kernel("CPU", kind="async")
def _(ctx: Any, step: Any, done: Any, reader: Any, queue: Any) -> None:
    _reader_of(reader, "ReaderReadV2").submit_read(step, done, queue, 1, up_to=False)


read_op.no_gradient()

read_up_to_op = define_op("ReaderReadUpToV2",
                          inputs=("&reader_handle", "&queue_handle", "num_records"),
                          stateful=True)


@read_up_to_op.shape
def _(reader_handle: Tensor, queue_handle: Tensor, num_records: Tensor) -> list:
    _check_refs("ReaderReadUpToV2", reader_handle, queue_handle)
    if num_records.dtype.base_dtype != _dt.int64 or num_records.shape.ndims not in (None, 0):
        raise ValueError(f"ReaderReadUpToV2: num_records must be an int64 scalar, got "
                         f"{num_records.name} ({num_records.dtype.name}, shape "
                         f"{num_records.shape}).")
    return [(_dt.string, TensorShape([None])), (_dt.string, TensorShape([None]))]


@read_up_to_op.kernel("CPU", kind="async")
def _(ctx: Any, step: Any, done: Any, reader: Any, queue: Any, num_records: Any) -> None:
    reader = _reader_of(reader, "ReaderReadUpToV2")
    n = int(np.asarray(num_records))
    if n < 0:
        raise errors.InvalidArgumentError(
            None, None, f"ReaderReadUpToV2: num_records must be >= 0, got {n} "
            f"({reader.name}).")
    if n == 0:  # TF returns at once, without touching the queue
        empty = np.zeros([0], dtype=object)
        done((empty, empty.copy()))
        return
    reader.submit_read(step, done, queue, n, up_to=True)


read_up_to_op.no_gradient()


def _counter_op(op_type: str, read: Callable[[ReaderResource], int]) -> None:
    """A read of one of the reader's counters (no wait: TF's would wait for a read)."""
    op = define_op(op_type, inputs=("&reader_handle",), stateful=True)

    @op.shape
    def _(reader_handle: Tensor) -> Any:
        _check_refs(op_type, reader_handle)
        return _dt.int64, TensorShape([])

    @op.kernel("CPU")
    def _(reader: Any) -> np.int64:
        return np.int64(read(_reader_of(reader, op_type)))

    op.no_gradient()


_counter_op("ReaderNumRecordsProducedV2", lambda r: r.produced)
_counter_op("ReaderNumWorkUnitsCompletedV2", lambda r: r.work_finished)


def _in_turn_op(op_type: str, extra: tuple[str, ...], outputs: list,
                call: Callable[..., Any]) -> None:
    """An op run in turn with the reader's reads (reset, serialize, restore)."""
    op = define_op(op_type, inputs=("&reader_handle",) + extra, stateful=True)

    @op.shape
    def _(reader_handle: Tensor, *rest: Tensor) -> list:
        _check_refs(op_type, reader_handle)
        for t in rest:  # the state to restore
            if t.dtype.base_dtype != _dt.string or t.shape.ndims not in (None, 0):
                raise ValueError(f"{op_type}: state must be a scalar string, got {t.name} "
                                 f"({t.dtype.name}, shape {t.shape}).")
        return outputs

    @op.kernel("CPU", kind="async")
    def _(ctx: Any, step: Any, done: Any, reader: Any, *rest: Any) -> None:
        reader = _reader_of(reader, op_type)
        reader.submit_call(step, done, lambda: call(reader, *rest))

    op.no_gradient()


def _state_bytes(state: Any) -> bytes:
    v = np.asarray(state, dtype=object).reshape(())[()]
    return v if isinstance(v, bytes) else str(v).encode()


_in_turn_op("ReaderResetV2", (), [], lambda r: r.reset())
_in_turn_op("ReaderSerializeStateV2", (), [(_dt.string, TensorShape([]))],
            lambda r: r.serialize_state())
_in_turn_op("ReaderRestoreStateV2", ("state",), [],
            lambda r, state: r.restore_state(_state_bytes(state)))

"""Event files: `FileWriter`, `FileWriterCache`, the TFRecord framing, and a reader.

A file `events.out.tfevents.<time>.<host>[suffix]` is a sequence of records,
each: uint64 length, masked CRC32C of those 8 bytes, the serialized `Event`,
masked CRC32C of it (all little-endian). The first event names the format
("brain.Event:2"). This is what TensorBoard reads.

Example:
    >>> writer = tf.summary.FileWriter("/tmp/logs", sess.graph)
    >>> writer.add_summary(sess.run(merged), global_step=10)
    >>> writer.close()
"""
from __future__ import annotations

import os
import queue
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

from tensorweave.framework import errors
from tensorweave.framework.proto import meta_graph_pb2, summary_pb2
# One home for TFRecord framing (event files are TFRecord files).
from tensorweave.framework.tfrecord import encode_record, masked_crc32c, read_records


def summary_iterator(path: str) -> Iterator[Any]:
    """Yields the `Event` protos of an event file (TF1's tf.train.summary_iterator).

    Example:
        >>> [e.step for e in summary_iterator(path) if e.HasField("summary")]
    """
    for rec in read_records(path):
        yield summary_pb2.Event.FromString(rec)


_STOP = object()


class FileWriter:
    """Writes Summary protos, graphs and session logs to an event file in `logdir`.

    Events are queued (at most `max_queue`) and written by a background thread,
    which flushes the file every `flush_secs`.

    Args:
        logdir: directory for the event file (created if missing).
        graph: a Graph (or GraphDef) to write first, for TensorBoard's graph view.
        max_queue: events buffered before `add_*` blocks.
        flush_secs: seconds between flushes to disk.
        filename_suffix: appended to the event file's name.

    Example:
        >>> with tf.summary.FileWriter("/tmp/logs") as w:
        ...     w.add_summary(summary_bytes, 1)
    """

    def __init__(self, logdir: str, graph: Any = None, max_queue: int = 10,
                 flush_secs: float = 120, graph_def: Any = None,
                 filename_suffix: str | None = None, session: Any = None) -> None:
        self._logdir = str(logdir)
        self._max_queue = max_queue
        self._flush_secs = flush_secs
        self._suffix = filename_suffix or ""
        self._closed = True
        self._lock = threading.Lock()
        self.reopen()
        if graph is not None or graph_def is not None:
            self.add_graph(graph, graph_def=graph_def)

    # ---- lifecycle -------------------------------------------------------------
    def get_logdir(self) -> str:
        return self._logdir

    def reopen(self) -> None:
        """Starts a new event file after `close()` (no-op while open)."""
        with self._lock:
            if not self._closed:
                return
            os.makedirs(self._logdir, exist_ok=True)
            base = f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}"
            self._path, n = os.path.join(self._logdir, base + self._suffix), 0
            while True:  # "x": a second writer (or a reopen) in the same second gets its own
                try:
                    self._file = open(self._path, "xb")
                    break
                except FileExistsError:
                    n += 1
                    self._path = os.path.join(self._logdir,
                                              f"{base}.{os.getpid()}.{n}{self._suffix}")
            self._queue: queue.Queue = queue.Queue(self._max_queue)
            self._error: BaseException | None = None
            self._closed = False
            self._write(summary_pb2.Event(wall_time=time.time(), file_version="brain.Event:2"))
            self._thread = threading.Thread(target=self._run, name="FileWriter", daemon=True)
            self._thread.start()

    def flush(self) -> None:
        """Blocks until every queued event is written and the file is flushed."""
        if self._closed:
            return
        self._queue.join()
        with self._lock:
            self._file.flush()
        self._raise_if_failed()

    def close(self) -> None:
        """Flushes and closes the file; `reopen()` starts a new one."""
        if self._closed:
            return
        self._queue.put(_STOP)
        self._thread.join()
        with self._lock:
            self._file.close()
            self._closed = True
        self._raise_if_failed()

    def __enter__(self) -> FileWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def event_file(self) -> str:
        """Path of the current event file."""
        return self._path

    # ---- adding events ---------------------------------------------------------
    def add_event(self, event: Any) -> None:
        """Queues one `Event` proto; on a closed writer, warns and drops it (as TF)."""
        if self._closed:
            # As TF 1.x: a no-op with a warning (e.g. Supervisor.stop() after
            # managed_session closed the writer), not an error.
            warnings.warn(f"Attempting to use a closed FileWriter (for {self._logdir}). The "
                          "operation will be a noop unless the FileWriter is explicitly "
                          "reopened (reopen()).", stacklevel=2)
            return
        self._raise_if_failed()
        self._queue.put(event)

    def add_summary(self, summary: Any, global_step: int | None = None) -> None:
        """Adds a `Summary` proto or its serialized bytes (what summary ops output).

        Example:
            >>> writer.add_summary(sess.run(tf.summary.scalar("loss", loss)), step)
        """
        if isinstance(summary, (bytes, bytearray)) or hasattr(summary, "item"):
            raw = summary.item() if hasattr(summary, "item") else summary
            summary = summary_pb2.Summary.FromString(bytes(raw))
        elif not isinstance(summary, summary_pb2.Summary):
            summary = summary_pb2.Summary.FromString(summary.SerializeToString())
        ev = summary_pb2.Event(wall_time=time.time(), summary=summary)
        if global_step is not None:
            ev.step = int(global_step)
        self.add_event(ev)

    def add_graph(self, graph: Any, global_step: int | None = None,
                  graph_def: Any = None) -> None:
        """Adds a Graph (or GraphDef) as `Event.graph_def`, for TensorBoard's graph view.

        A Graph is written with each node's `_output_shapes`, as TF does (TensorBoard
        shows them on the edges).
        """
        gd = graph_def if graph_def is not None else (
            graph.as_graph_def(add_shapes=True) if hasattr(graph, "as_graph_def") else graph)
        if gd is None:
            raise ValueError("add_graph needs a Graph or a GraphDef, got None.")
        ev = summary_pb2.Event(wall_time=time.time(), graph_def=gd.SerializeToString())
        if global_step is not None:
            ev.step = int(global_step)
        self.add_event(ev)

    def add_meta_graph(self, meta_graph_def: Any, global_step: int | None = None) -> None:
        """Adds a MetaGraphDef as `Event.meta_graph_def` (TensorBoard shows its graph).

        Raises:
            TypeError: if `meta_graph_def` is not a MetaGraphDef.

        Example:
            >>> writer.add_meta_graph(tf.train.export_meta_graph())
        """
        if not isinstance(meta_graph_def, meta_graph_pb2.MetaGraphDef):
            raise TypeError(f"meta_graph_def must be type MetaGraphDef, saw type: "
                            f"{type(meta_graph_def).__name__}; export one with "
                            "tf.train.export_meta_graph().")
        ev = summary_pb2.Event(wall_time=time.time(),
                               meta_graph_def=meta_graph_def.SerializeToString())
        if global_step is not None:
            ev.step = int(global_step)
        self.add_event(ev)

    def add_session_log(self, session_log: Any, global_step: int | None = None) -> None:
        ev = summary_pb2.Event(wall_time=time.time(), session_log=session_log)
        if global_step is not None:
            ev.step = int(global_step)
        self.add_event(ev)

    def add_run_metadata(self, run_metadata: Any, tag: str,
                         global_step: int | None = None) -> None:
        data = run_metadata.SerializeToString() if hasattr(run_metadata, "SerializeToString") \
            else bytes(run_metadata)
        ev = summary_pb2.Event(wall_time=time.time(), tagged_run_metadata=summary_pb2.
                               TaggedRunMetadata(tag=tag, run_metadata=data))
        if global_step is not None:
            ev.step = int(global_step)
        self.add_event(ev)

    # ---- background thread -----------------------------------------------------
    def _write(self, event: Any) -> None:
        self._file.write(encode_record(event.SerializeToString()))

    def _run(self) -> None:
        next_flush = time.monotonic() + self._flush_secs
        while True:
            try:
                item = self._queue.get(timeout=max(0.01, next_flush - time.monotonic()))
            except queue.Empty:
                item = None
            try:
                with self._lock:
                    if item is not None and item is not _STOP:
                        self._write(item)
                    if item is _STOP or time.monotonic() >= next_flush:
                        self._file.flush()
                        next_flush = time.monotonic() + self._flush_secs
            except OSError as e:  # reported to the caller by the next add/flush/close
                self._error = e
            finally:
                if item is not None:
                    self._queue.task_done()
            if item is _STOP:
                return

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise errors.UnavailableError(None, None, f"Writing event file {self._path} "
                                          f"failed: {self._error}")


class FileWriterCache:
    """One shared FileWriter per log directory (TF1's cache).

    Example:
        >>> w = tf.summary.FileWriterCache.get("/tmp/logs")
    """

    _cache: dict[str, FileWriter] = {}
    _lock = threading.Lock()

    @staticmethod
    def get(logdir: str) -> FileWriter:
        with FileWriterCache._lock:
            w = FileWriterCache._cache.get(logdir)
            if w is None:
                w = FileWriterCache._cache[logdir] = FileWriter(logdir)
            return w

    @staticmethod
    def clear() -> None:
        with FileWriterCache._lock:
            writers = list(FileWriterCache._cache.values())
            FileWriterCache._cache.clear()
        for w in writers:
            w.close()


__all__ = [
    "FileWriter",
    "FileWriterCache",
    "encode_record",
    "masked_crc32c",
    "read_records",
    "summary_iterator",
]

"""DeepRec's `WorkQueue`: dynamic data sharding, slices handed to workers as they are ready.

One queue, on a ps task, holds every epoch's slices (file names, or table ranges);
each worker takes the next slice when it has finished the last, so fast workers
train more slices and a slow one no longer holds the job back. A slice in flight on a
worker that dies comes back to the queue, to the worker's next incarnation first; the
queue is saved in checkpoints with the model (slices in flight as not yet trained)
and restored with it, so a restarted job resumes its epoch. See `docs/work_queue.md`
and `kernels/work_queue_resource.py` for when a slice counts as trained.

DeepRec programs import it as `from tensorflow.python.ops.work_queue import WorkQueue`.

Example:
    >>> with tf.device(tf.train.replica_device_setter(cluster=cluster)):
    ...     queue = tf.WorkQueue(["part-0.csv", "part-1.csv", "part-2.csv"], num_epochs=2)
    ...     lines = tf.data.TextLineDataset(queue.input_dataset()).batch(64)
"""
from __future__ import annotations

import numbers
from typing import Any, Sequence

from tensorweave.data.dataset import Dataset
from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import constant
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array.shape_ops import reshape
from tensorweave.ops.data_flow import work_queue_ops as _ops
from tensorweave.ops.math.math_ops import cast
from tensorweave.ops.random.random_ops import get_seed
from tensorweave.ops.strings.split_ops import string_join
from tensorweave.summary import summary
from tensorweave.train.queue_runner import QueueRunner, add_queue_runner
from tensorweave.train.saveable_object import SaveableObject, SaveSpec

__all__ = ["Work", "WorkQueue"]

# Slices a proxy queue's pipeline keeps at once: one read by the reader, one in the
# queue (capacity 1), one taken by the runner thread and waiting to be enqueued.
_PROXY_HOLDS = 3


class Work:
    """One work (a file name, a table) and how it splits into slices (DeepRec's `Work`).

    A work whose record count is known is split into ranges
    `"<url>?start=<first>&end=<past last>"` when the queue has `num_slices`; a file's
    count is not known here, so a file is one slice (as in DeepRec, where only tables
    are sliced). A subclass that can count its records (`count_records`) gets sliced.

    Args:
        prefix: the prefix common to all works ("" or None for none).
        url: the work's name after the prefix.

    Example:
        >>> class Table(Work):
        ...     def count_records(self): return 10
        >>> tf.WorkQueue([Table("", "odps://t")], num_slices=3, shuffle=False).works[:1]
        [b'odps://t?start=0&end=3']
    """

    def __init__(self, prefix: str | None, url: str) -> None:
        self.prefix = prefix or ""
        self.url = url

    @classmethod
    def from_url(cls, prefix: str | None, url: str | bytes) -> "Work":
        """The work named `url` (text or bytes) under `prefix`."""
        return cls(prefix, url.decode() if isinstance(url, bytes) else str(url))

    def count_records(self) -> int | None:
        """How many records the work has, or None when unknown (then it is not split)."""
        return None

    def get_slice(self, start: int, end: int) -> str:
        """The slice of records [start, end) of this work."""
        return f"{self.url}?start={start}&end={end}"


def slice_ranges(num_records: int, num_slices: int) -> list[tuple[int, int]]:
    """DeepRec's split of `num_records` records into about `num_slices` equal ranges:
    each `num_records // num_slices` long (at least 1), the last one shorter.

    Example:
        >>> slice_ranges(10, 3)
        [(0, 3), (3, 6), (6, 9), (9, 10)]
    """
    size = max(1, num_records // max(1, num_slices))
    return [(start, min(start + size, num_records)) for start in range(0, num_records, size)]


def _as_work(w: Any, prefix: str | None, index: int) -> Work:
    if isinstance(w, Work):
        return w
    if isinstance(w, (str, bytes)):
        return Work.from_url(prefix, w.strip())
    raise ValueError(f"WorkQueue requires works as a list of strings, but works[{index}] is "
                     f"{w!r} ({type(w).__name__}).")


def _slices(works: Any, prefix: str | None, num_slices: int | None) -> list[bytes]:
    """One epoch's slices: each work, or its ranges when it can be split."""
    if not isinstance(works, (list, tuple)) or not works:
        raise ValueError(f"WorkQueue requires works as a non-empty list of strings, got "
                         f"{works!r}.")
    out: list[bytes] = []
    for i, w in enumerate(works):
        work = _as_work(w, prefix, i)
        count = None if num_slices is None else work.count_records()
        if count is None or num_slices is None:
            out.append(work.url.encode())
        else:
            ranges = slice_ranges(count, num_slices)
            out.extend(work.get_slice(a, b).encode() for a, b in ranges)
    return out


def _positive(value: Any, what: str, allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"WorkQueue: {what} must be a positive integer, got {value!r}.")
    return int(value)


class WorkQueue(SaveableObject):
    """A queue of works shared by every worker of a job (DeepRec's `WorkQueue`).

    Made in every worker's graph alike (between-graph replication): the queue itself
    lives once, where `tf.device` puts it (a ps task under `replica_device_setter`),
    and is made there on first use with all of its epochs; no initializer has to run.
    It joins the SAVEABLE_OBJECTS collection, so a `tf.train.Saver` saves what is left
    of it under "<name>_works" (and its works' digest under "<name>_digest").

    Args:
        works: the works, a list of file names (str or bytes; a `Work` too).
        num_epochs: how many times each slice is handed out before OutOfRange.
        shuffle: hand each epoch out in a random order.
        seed: seeds the shuffles (with `tf.set_random_seed`'s graph seed, as TF's random
            ops); None and no graph seed: a different order in each job.
        prefix: prepended to each slice by `take()` (e.g. a common directory).
        num_slices: split works whose record count is known into this many slices
            (files are one slice each, as in DeepRec).
        name: the queue's name; every worker's graph must use the same one.

    Raises:
        ValueError: empty or non-string works, num_epochs or num_slices below 1.

    Example:
        >>> queue = tf.WorkQueue(["a.txt", "b.txt"], num_epochs=2, shuffle=False)
        >>> work = queue.take()
        >>> with tf.Session() as sess:
        ...     sess.run(work)
        b'a.txt'
    """

    def __init__(self, works: Sequence[Any], num_epochs: int = 1, shuffle: bool = True,
                 seed: int | None = None, prefix: str | None = None,
                 num_slices: int | None = None, name: str = "work_queue") -> None:
        num_epochs = _positive(num_epochs, "num_epochs")  # type: ignore[assignment]
        num_slices = _positive(num_slices, "num_slices", allow_none=True)
        self._works = _slices(works, prefix, num_slices)
        self._prefix = prefix
        g = get_default_graph()
        name = g.unique_name(name or "work_queue")
        seed1, seed2 = get_seed(seed)
        with g.name_scope(name + "/"):
            self._handle = _ops.work_queue_handle(
                self._works, num_epochs, shuffle, seed1 or 0, seed2 or 0, shared_name=name)
            with g.colocate_with(self._handle.op):
                digest = constant(self.digest, dtype=_dt.string, name="digest")
                saved = _ops.work_queue_save(self._handle)
        super().__init__(self, [SaveSpec(digest, "", name + "_digest"),
                                SaveSpec(saved, "", name + "_works")], name)
        g.add_to_collection(GraphKeys.SAVEABLE_OBJECTS, self)

    def __len__(self) -> int:
        """The number of slices in one epoch."""
        return len(self._works)

    @property
    def works(self) -> list[bytes]:
        """One epoch's slices, in the order given."""
        return list(self._works)

    @property
    def digest(self) -> bytes:
        """What a checkpoint's queue is compared with before it is restored."""
        return b",".join(self._works)

    @property
    def handle(self) -> Tensor:
        """The queue's reference (on the queue's device)."""
        return self._handle

    def take(self) -> Tensor:
        """Takes the next slice (a string scalar, with `prefix` prepended).

        Each run takes one slice; the run after it counts the previous slice trained.
        OutOfRangeError once every slice of every epoch was taken.

        Example:
            >>> sess.run(queue.take())
            b'a.txt'
        """
        return self._take(holds=1)

    def _take(self, holds: int) -> Tensor:
        g = get_default_graph()
        with g.name_scope(self.name + "/"):
            work = _ops.work_queue_take(self._handle, holds=holds)
            if self._prefix is None:
                return work
            return string_join([constant(self._prefix, dtype=_dt.string), work])

    def input_producer(self) -> FIFOQueue:
        """A local queue of slices for TF1's readers (`reader.read(queue)`), filled by a
        queue runner (in the QUEUE_RUNNERS collection: `tf.train.start_queue_runners` or a
        MonitoredSession starts it) that takes a slice as the reader needs one.

        Returns:
            A FIFOQueue of capacity 1 whose elements are one-slice string vectors; closed
            once every slice was taken.

        Example:
            >>> key, value = tf.TextLineReader().read(queue.input_producer())
        """
        work = self._take(holds=_PROXY_HOLDS)
        g = get_default_graph()
        with g.name_scope(self.name + "/"):
            proxy = FIFOQueue(capacity=1, dtypes=[_dt.string], shapes=[[1]], name="proxy")
            enqueue = proxy.enqueue(reshape(work, [1]))
            cancel = proxy.close(cancel_pending_enqueues=True)
        add_queue_runner(QueueRunner(proxy, [enqueue], cancel_op=cancel))
        return proxy

    def input_dataset(self) -> Dataset:
        """A Dataset of slices (string scalars), each taken when the Dataset reading it
        needs the next one, e.g. `tf.data.TextLineDataset(queue.input_dataset())`. It
        reads through `input_producer()`'s queue: its runner must run.

        Example:
            >>> lines = tf.data.TextLineDataset(queue.input_dataset())
        """
        proxy = self.input_producer()
        return Dataset.from_tensors(0).repeat().map(
            lambda _: reshape(proxy.dequeue(), []))

    def add_summary(self) -> None:
        """Adds a scalar summary "<name>/fraction_of_<slices per epoch>_full": the slices
        left to hand out over one epoch's (above 1 while more than an epoch is left).

        Example:
            >>> queue.add_summary(); merged = tf.summary.merge_all()
        """
        g = get_default_graph()
        with g.name_scope(self.name + "/"):
            size = _ops.work_queue_size(self._handle)
        summary.scalar(f"{self.name}/fraction_of_{len(self)}_full",
                       cast(size, _dt.float32) * (1.0 / len(self)))

    # ---- SaveableObject: restored with the model -------------------------------------
    def restore(self, restored_tensors: list[Tensor], restored_shapes: Any) -> Operation:
        """Puts the saved slices back (those of a queue of other works are ignored)."""
        digest, works = restored_tensors
        g = get_default_graph()
        with g.colocate_with(self._handle.op):
            return _ops.work_queue_restore(self._handle, digest, works)

    def restore_from_file(self, filename: Tensor) -> Operation:
        """The Saver's restore: from the checkpoint at `filename`, which may predate the
        queue (then it starts from its first epoch, as DeepRec's)."""
        g = get_default_graph()
        with g.colocate_with(self._handle.op):
            return _ops.work_queue_restore_from_file(
                self._handle, filename, self.specs[0].name, self.specs[1].name)

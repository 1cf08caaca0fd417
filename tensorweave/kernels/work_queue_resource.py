"""The state behind a WorkQueue (DeepRec's `tf.WorkQueue`, `train/work_queue.py`).

A work queue hands out slices of the input (file names, table ranges) to every
worker of a job, one at a time, from one resource on a ps task. All epochs are laid
out when the resource is made (each shuffled on its own, by one seeded generator), so
what is left to train is always one list: the slices not yet handed out, in order.

Slices in flight. A slice handed to a session is *held* by it until it is done. A
taker (one take op of one session) holds at most `holds` slices, as many as its input
pipeline can keep at once (1 for `take()`, which the program trains before taking
again; 3 for the proxy queue of `input_producer`/`input_dataset`: one being read, one
queued, one in the runner's hands), so its next take marks its oldest one done. A
held slice goes back to the front of the queue, in the order it was handed out, when

- a new incarnation of the same task takes (the worker was killed and restarted: the
  restarted worker gets its predecessor's slices back first), or
- its session closes before it reached the end of the queue (a worker that stopped
  mid-epoch: its pipeline is gone with the session).

A session that reached the end (its take raised OutOfRange) and then closes drained its
pipeline: its slices are done. A save writes the held slices, then the queue: a
checkpoint never loses a slice in flight, and restoring it resumes the epoch.

Example:
    >>> q = WorkQueueResource("wq", [b"a", b"b"], num_epochs=2, shuffle=False, seed=None)
    >>> q.take(Taker("t"), holds=1), q.size()
    (b'a', 3)
"""
from __future__ import annotations

import itertools
import logging
import threading
from collections import deque
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from tensorweave.framework import errors

log = logging.getLogger("tensorweave.work_queue")

__all__ = ["Taker", "WorkQueueResource"]


class Taker(NamedTuple):
    """Who takes: one take op of one session.

    Attributes:
        key: tells takers apart (session handle and take op name).
        session: the session's handle ("" in a local session).
        task: the task that opened the session, or None.
        incarnation: that task's process incarnation, or None when unknown.
    """

    key: str
    session: str = ""
    task: str | None = None
    incarnation: int | None = None


class _Holder:
    __slots__ = ("taker", "held", "at_end")

    def __init__(self, taker: Taker) -> None:
        self.taker = taker
        self.held: deque[tuple[int, bytes]] = deque()  # (hand-out number, slice)
        self.at_end = False


class WorkQueueResource:
    """The slices left to train and those in flight; thread-safe.

    Args:
        name: the queue's name (for messages).
        works: one epoch's slices, in order.
        num_epochs: how many times every slice is handed out (>= 1).
        shuffle: whether each epoch is handed out in a random order.
        seed: seeds the shuffles (None: fresh entropy, a different order per job).
    """

    type_name = "WorkQueue"   # what messages (and ps replicas' list of uncovered) call it

    def __init__(self, name: str, works: Sequence[bytes], num_epochs: int, shuffle: bool,
                 seed: int | Sequence[int] | None) -> None:
        if not works:
            raise errors.InvalidArgumentError(None, None, f"Work queue {name} has no works.")
        self.name = name
        self.works = tuple(works)
        self.num_epochs = int(num_epochs)
        self.shuffle = bool(shuffle)
        self.digest = b",".join(self.works)
        self._lock = threading.Lock()
        rng = np.random.default_rng(seed)
        self._queue: deque[bytes] = deque()
        for _ in range(self.num_epochs):
            order = rng.permutation(len(self.works)) if shuffle else range(len(self.works))
            self._queue.extend(self.works[i] for i in order)
        self._holders: dict[str, _Holder] = {}
        self._handed = itertools.count()

    def take(self, taker: Taker, holds: int) -> bytes:
        """The next slice for `taker`, who now holds it; its slices beyond `holds` are done.

        Raises:
            OutOfRangeError: every slice was handed out (and none came back).
        """
        with self._lock:
            holder = self._holders.get(taker.key)
            if holder is None:
                self._put_back(self._predecessors(taker), f"{taker.task} restarted")
                holder = self._holders[taker.key] = _Holder(taker)
            while len(holder.held) >= max(1, holds):
                holder.held.popleft()   # its pipeline moved past it: trained
            if not self._queue:
                holder.at_end = True
                raise errors.OutOfRangeError(
                    None, None, f"All works in work queue {self.name} are taken.")
            work = self._queue.popleft()
            holder.held.append((next(self._handed), work))
            return work

    def size(self) -> int:
        """How many slices are left to hand out (not counting those in flight)."""
        with self._lock:
            return len(self._queue)

    def in_flight(self) -> list[bytes]:
        """The slices handed out and not yet done, in hand-out order."""
        with self._lock:
            return [w for _, w in self._held_in_order(self._holders.values())]

    def save(self) -> np.ndarray:
        """What is left to train: the slices in flight first, then the queue."""
        with self._lock:
            left = [w for _, w in self._held_in_order(self._holders.values())]
            left.extend(self._queue)
        return np.array(left, dtype=object).reshape([len(left)])

    def restore(self, digest: bytes, works: Sequence[bytes]) -> bool:
        """Replaces what is left with `works` if they were saved from a queue of the
        same works (`digest`); otherwise keeps this queue as made, and says so.

        Returns:
            Whether the saved works were taken.
        """
        if digest != self.digest:
            log.warning("Work queue %s: the checkpoint's queue was made of other works "
                        "(%r...), not this one's (%r...): it starts from its first epoch.",
                        self.name, digest[:80], self.digest[:80])
            return False
        with self._lock:
            # Over live workers (a chief restarted without ps replication), the model was
            # rewound too: what they trained of the slices they hold since the checkpoint
            # is gone from it, so those slices are handed out again from the checkpoint's
            # list (their tail is trained twice; nothing is lost).
            self._queue = deque(works)
            self._holders.clear()
        log.info("Work queue %s restored: %d slices left.", self.name, len(works))
        return True

    def session_closed(self, handle: str) -> None:
        """A session ended: the slices it held come back, unless it reached the end."""
        with self._lock:
            gone = [h for h in self._holders.values() if h.taker.session == handle]
            for h in gone:
                del self._holders[h.taker.key]
            self._put_back([h for h in gone if not h.at_end], f"session {handle} closed")

    def _predecessors(self, taker: Taker) -> list[_Holder]:
        """Holders from another incarnation of `taker`'s task: that process is gone."""
        if taker.task is None or taker.incarnation is None:
            return []
        stale = [h for h in self._holders.values() if h.taker.task == taker.task
                 and h.taker.incarnation not in (None, taker.incarnation)]
        for h in stale:
            del self._holders[h.taker.key]
        return stale

    def _put_back(self, holders: list[_Holder], why: str) -> None:
        """Puts `holders`' slices back at the front, oldest first (under the lock)."""
        back = self._held_in_order(holders)
        if not back:
            return
        self._queue.extendleft(w for _, w in reversed(back))
        log.info("Work queue %s: %s; %d slice(s) in flight back in the queue: %s",
                 self.name, why, len(back), [w for _, w in back][:8])

    @staticmethod
    def _held_in_order(holders: Iterable[_Holder]) -> list[tuple[int, bytes]]:
        return sorted((x for h in holders for x in h.held), key=lambda x: x[0])

"""Which checkpoints a `tf.train.Saver` keeps (max_to_keep, keep_checkpoint_every_n_hours).

As TF: only saves that write the state file are tracked; when more than
`max_to_keep` are, the oldest expire (deleted after the new one commits), except one
per `keep_checkpoint_every_n_hours`, kept for good. After a restart the chief's
session creators hand the state file's list back (`recover_last_checkpoints`).

Example:
    >>> saver.recover_last_checkpoints(tf.train.get_checkpoint_state(d).all_model_checkpoint_paths)
    >>> saver.last_checkpoints
    ['/tmp/train/model.ckpt-90', '/tmp/train/model.ckpt-100']
"""
from __future__ import annotations

import os
import time

from tensorweave.framework import checkpoint_format as _io


class KeptCheckpoints:
    """The kept-checkpoint list of a Saver (a base class of `tf.train.Saver`)."""

    _last: list[tuple[str, float]]
    _max_to_keep: int | None
    _next_keep_time: float
    _keep_every_s: float

    def _record(self, prefix: str) -> list[str]:
        # Adds `prefix` to the kept list; returns the checkpoints max_to_keep expires.
        if not self._max_to_keep:
            return []   # as TF: with max_to_keep None or 0 nothing is tracked nor deleted
        now = time.time()
        self._last = [(p, t) for p, t in self._last if p != prefix] + [(prefix, now)]
        expired: list[str] = []
        while self._max_to_keep and len(self._last) > self._max_to_keep:
            old, t = self._last.pop(0)
            if t > self._next_keep_time:
                self._next_keep_time += self._keep_every_s  # keep this one for good
                continue
            expired.append(old)
        return expired

    @property
    def last_checkpoints(self) -> list[str]:
        """Kept checkpoint prefixes, oldest first."""
        return [p for p, _ in self._last]

    def set_last_checkpoints(self, last_checkpoints: list[str]) -> None:
        self._last = [(p, time.time()) for p in last_checkpoints]

    def set_last_checkpoints_with_time(self, last_checkpoints_with_time: list[tuple[str, float]]
                                       ) -> None:
        self._last = [(p, float(t)) for p, t in last_checkpoints_with_time]

    def recover_last_checkpoints(self, checkpoint_paths: list[str]) -> None:
        """Adopts the existing checkpoints among `checkpoint_paths` (e.g. after a restart)."""
        found = [(p, os.path.getmtime(_io.manifest_path(p))) for p in checkpoint_paths
                 if _io.checkpoint_exists(p)]
        self.set_last_checkpoints_with_time(found)



__all__ = ["KeptCheckpoints"]

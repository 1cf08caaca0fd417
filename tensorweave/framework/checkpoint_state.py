"""The text `checkpoint` state file of a checkpoint directory (TF's format).

It names the newest checkpoint and every kept one; `tf.train.get_checkpoint_state`
parses it, `Saver.save` rewrites it as a save's commit point.

Example:
    >>> CheckpointState.from_text(open("/tmp/train/checkpoint").read()).model_checkpoint_path
    '/tmp/train/model.ckpt-100'
"""
from __future__ import annotations

import json

from tensorweave.framework import errors


class CheckpointState:
    """Which checkpoints a directory holds: the newest one and every kept one (oldest first).

    Example:
        >>> tf.train.get_checkpoint_state("/tmp/train").model_checkpoint_path
        '/tmp/train/model.ckpt-100'
    """

    def __init__(self, model_checkpoint_path: str = "",
                 all_model_checkpoint_paths: list[str] | None = None,
                 all_model_checkpoint_timestamps: list[float] | None = None,
                 last_preserved_timestamp: float = 0.0) -> None:
        self.model_checkpoint_path = model_checkpoint_path
        self.all_model_checkpoint_paths = list(all_model_checkpoint_paths or [])
        self.all_model_checkpoint_timestamps = list(all_model_checkpoint_timestamps or [])
        self.last_preserved_timestamp = last_preserved_timestamp

    def to_text(self) -> str:
        lines = [f"model_checkpoint_path: {json.dumps(self.model_checkpoint_path)}"]
        lines += [f"all_model_checkpoint_paths: {json.dumps(p)}"
                  for p in self.all_model_checkpoint_paths]
        lines += [f"all_model_checkpoint_timestamps: {t!r}"
                  for t in self.all_model_checkpoint_timestamps]
        lines.append(f"last_preserved_timestamp: {self.last_preserved_timestamp!r}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_text(cls, text: str, path: str = "checkpoint") -> CheckpointState:
        st = cls()
        for ln, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line:
                continue
            key, _, val = line.partition(":")
            val = val.strip()
            try:
                if key == "model_checkpoint_path":
                    st.model_checkpoint_path = json.loads(val)
                elif key == "all_model_checkpoint_paths":
                    st.all_model_checkpoint_paths.append(json.loads(val))
                elif key == "all_model_checkpoint_timestamps":
                    st.all_model_checkpoint_timestamps.append(float(val))
                elif key == "last_preserved_timestamp":
                    st.last_preserved_timestamp = float(val)
            except ValueError:
                raise errors.DataLossError(None, None, f"{path}:{ln}: cannot parse {line!r} "
                                           "in the checkpoint state file") from None
        return st

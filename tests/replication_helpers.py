"""A ps and a worker server in the test's process with ps state replication on, and
a ps started again on its address (issue 33's in-process restart tests)."""
from __future__ import annotations

from typing import Any

import pytest

from tensorweave.base import knobs
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import cluster_dict


class ReplicatingCluster:
    """1 ps + 1 worker (this process); the ps sends its replica every 0.05 s (to the
    worker, its holder). Use as a context manager; `restart_ps` kills and restarts."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(knobs.PS_REPLICATION.name, "1")
        monkeypatch.setenv(knobs.PS_REPLICA_SECS.name, "0.05")
        self.spec = cluster_dict(1, 1)
        self.worker = Server(self.spec, job_name="worker", task_index=0,
                             exit_when_done=False)
        self.ps = Server(self.spec, job_name="ps", task_index=0, exit_when_done=False)

    def restart_ps(self) -> Server:
        """Makes the holder current, stops the ps and starts it again (same address)."""
        sender = self.ps._replica_sender
        assert sender is not None and sender.send_once()
        self.ps.stop()
        self.ps = Server(self.spec, job_name="ps", task_index=0, exit_when_done=False)
        return self.ps

    def __enter__(self) -> "ReplicatingCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.ps.stop()
        self.worker.stop()

"""Issue 33's test doubles: a holder in the test's process (`DirectHolder`), and a ps
and a worker server with ps state replication on whose ps starts again on its address
(`ReplicatingCluster`)."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tensorweave.base import knobs
from tensorweave.distributed import replica_store
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import cluster_dict


class DirectHolder:
    """A peer whose `call` reaches a ReplicaStore's put and get in this process; `puts`
    keeps each put (request, copies of its tensors)."""

    def __init__(self, store: replica_store.ReplicaStore | None = None) -> None:
        self.store = store if store is not None else replica_store.ReplicaStore()
        self.puts: list[tuple[pb.ReplicaPutRequest, list[np.ndarray]]] = []

    def call(self, method: str, request: Any, tensors: Any = (), timeout: Any = None
             ) -> tuple[Any, list[np.ndarray]]:
        if method == "replica_put":
            self.puts.append((request, [np.array(t) for t in tensors]))
            self.store.put(request, tensors)
            return pb.ReplicaPutResponse(), []
        return self.store.get(request.task)


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

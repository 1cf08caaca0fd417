"""Who is who in a launched cluster: tasks, their addresses, TF_CONFIG and seed flags.

A `Topology` is pure data: the jobs ("chief", "worker", "ps") with one address
per task. It gives each task the two ways TF 1.x programs learn their place in
a cluster:

* `TF_CONFIG`, the JSON that Kubeflow's TFJob, SageMaker and Vertex AI set:
  ``{"cluster": {...}, "task": {"type": "worker", "index": 1}}``;
* the seed programs' flags ``--ps_hosts --worker_hosts --job_name --task_index``
  (these have no "chief" job: worker 0 is the chief).

Example:
    >>> topo = Topology.local(ps=1, workers=2)
    >>> [t.name for t in topo.tasks]
    ['ps 0', 'worker 0', 'worker 1']
    >>> topo.tf_config(topo.tasks[2])["task"]
    {'type': 'worker', 'index': 1}
"""
from __future__ import annotations

import json
import os
import random
import socket
import tempfile
import time
from dataclasses import dataclass

__all__ = ["BARE_SERVER_ARGS", "PS_STANDBY", "TRAINING_JOBS", "Task", "Topology", "free_ports",
           "hold_ports"]

# The jobs whose success is the job's success; ps tasks only serve them.
# (An evaluator does not train, but the job waits for it and fails with it.)
TRAINING_JOBS = ("chief", "worker", "evaluator")
# TF 1.x's evaluator task is named in TF_CONFIG's "task" but is no job of the
# "cluster": it runs no server and reads checkpoints from model_dir.
EVALUATOR = "evaluator"
# Start order: servers first so workers find them sooner (workers retry anyway).
_JOB_ORDER = ("ps", "ps_standby", "chief", "worker")
# Tasks that hold the ps tasks' replicas (distributed/replica.py); they run a bare server,
# the interpreter's arguments for which are these (it reads its task from TF_CONFIG).
PS_STANDBY = "ps_standby"
BARE_SERVER_ARGS = ("-m", "tensorweave", "server")


@dataclass(frozen=True)
class Task:
    """One task of the cluster: its job name and index in that job."""

    job: str
    index: int

    @property
    def name(self) -> str:
        """How the launcher names the task in output, e.g. "worker 1"."""
        return f"{self.job} {self.index}"

    @property
    def is_training(self) -> bool:
        """Whether the task trains (chief or worker) or evaluates, rather than serving (ps)."""
        return self.job in TRAINING_JOBS


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` distinct free TCP ports on `host`, none handed out on this machine lately.

    A port is free when the kernel offers it, but the task that will listen on it binds
    it only after starting (a second or more). In between, another `free_ports` call on
    this machine (a second launcher, a concurrent test) could be offered the same port,
    and two clusters would then share one address: one task fails with "port in use", or
    worse, a client reaches the other cluster's task. So each port handed out is claimed
    for `_CLAIM_SECS` in a folder every process of this user shares, and a claimed port is
    skipped. Programs that do not use `free_ports` are not covered: a port one of them
    takes in between still fails the task with "port in use".

    The ports come from below the kernel's ephemeral range (ip_local_port_range) where it
    leaves room: a port inside it may be taken meanwhile as the source port of any
    outgoing connection (the task then fails with "port in use"), and a client that
    connects to it while the task is not listening yet can be given that very port as its
    source and connect to itself (TCP's simultaneous open), which then waits for an
    answer that never comes (gRPC: "timed out before receiving SETTINGS frame").

    Example:
        >>> a, b = free_ports(2)
        >>> a != b
        True
    """
    socks: list[socket.socket] = []
    ports: list[int] = []
    below = _below_ephemeral()
    try:
        for _ in range(n + _MAX_SKIPPED):
            s = socket.socket()
            try:
                s.bind((host, random.randrange(*below) if below else 0))
            except OSError:  # taken: try another
                s.close()
                continue
            socks.append(s)  # held until the end: the kernel offers each port once
            port = s.getsockname()[1]
            if _claim(port):
                ports.append(port)
                if len(ports) == n:
                    return ports
        raise OSError(f"Could not find {n} free ports on {host}: {_MAX_SKIPPED} offered ports "
                      f"were handed out in the last {_CLAIM_SECS} s ({_claims_dir()}).")
    finally:
        for s in socks:
            s.close()


# How long a port handed out stays reserved for its task: longer than any task's start.
_CLAIM_SECS = 120
_MAX_SKIPPED = 64


def _below_ephemeral() -> tuple[int, int] | None:
    """[low, high) of ports below the kernel's ephemeral range, or None (no such file,
    or no room: the kernel's own choice, port 0, then)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            first = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    low = max(_LOWEST_PORT, first // 2)
    return (low, first) if first - low >= 1000 else None


# Task ports are drawn from [max(this, ephemeral start / 2), ephemeral start).
_LOWEST_PORT = 10000


def hold_ports(ports: list[int]) -> None:
    """Renews this process's claims on `ports` for another `_CLAIM_SECS`: an elastic
    launch keeps the ports of its worker slots not started yet from being handed to
    another cluster (`free_ports` skips a claimed port; other programs may still take it).

    Example:
        >>> hold_ports(free_ports(2))
    """
    for port in ports:
        try:
            os.utime(os.path.join(_claims_dir(), str(port)))
        except OSError:
            _claim(port)  # its claim file went: claim it again if nobody else did


def _claims_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"tensorweave-ports-{os.getuid()}")


def _claim(port: int) -> bool:
    """Claims `port` for `_CLAIM_SECS` (False: another process claimed it within that time).

    One empty file per port; `O_EXCL` makes the claim atomic between processes."""
    path = os.path.join(_claims_dir(), str(port))
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            if time.time() - os.stat(path).st_mtime < _CLAIM_SECS:
                return False
            os.unlink(path)  # an old claim
        except FileNotFoundError:
            pass
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        return False  # another process claimed it just now
    except OSError:
        return True  # no shared folder (read-only temp dir): the kernel's word only
    return True


class Topology:
    """The jobs of a cluster and each task's address.

    Args:
        cluster: job name -> list of "host:port" (index = position).
        evaluator: add TF 1.x's evaluator task (outside the cluster, no address).

    Raises:
        ValueError: If there is no worker task, or a job has no tasks.
    """

    def __init__(self, cluster: dict[str, list[str]], evaluator: bool = False) -> None:
        if EVALUATOR in cluster:
            raise ValueError("The evaluator is not a job of the cluster (TF 1.x keeps it out "
                             "of TF_CONFIG's \"cluster\"); pass evaluator=True instead.")
        if not cluster.get("worker") and not cluster.get("chief"):
            raise ValueError(f"The cluster {cluster} has no worker or chief task; ask for "
                             "at least one worker (--workers 1).")
        for job, addrs in cluster.items():
            if not addrs:
                raise ValueError(f"Job {job!r} has no tasks; leave it out instead.")
        self.cluster = {job: list(cluster[job]) for job in _ordered(cluster)}
        self.evaluator = evaluator

    @classmethod
    def local(cls, ps: int, workers: int, chief: bool = False,
              host: str = "localhost", evaluator: bool = False,
              ps_standby: int = 0) -> Topology:
        """A cluster on this machine, every task on its own free loopback port.

        Args:
            ps: number of parameter-server tasks (may be 0).
            workers: number of worker tasks (at least 1 unless `chief`).
            chief: add a separate "chief" job with one task (TF_CONFIG style).
            host: the host name written into the addresses.
            evaluator: add an evaluator task (TF_CONFIG task type "evaluator").
            ps_standby: tasks of a "ps_standby" job, which hold the ps tasks' replicas.

        Raises:
            ValueError: If a count is negative or there is nothing to train.

        Example:
            >>> Topology.local(ps=0, workers=1).cluster  # doctest: +SKIP
            {'worker': ['localhost:40123']}
        """
        if ps < 0 or workers < 0 or ps_standby < 0:
            raise ValueError(f"Task counts must be >= 0, got --ps {ps} --workers {workers} "
                             f"--ps-standby {ps_standby}.")
        if ps_standby and not ps:
            raise ValueError(f"--ps-standby {ps_standby} with no ps task: standby tasks hold "
                             "the ps tasks' replicas; add --ps N or drop --ps-standby.")
        counts = {"chief": int(chief), "worker": workers, "ps": ps, PS_STANDBY: ps_standby}
        ports = iter(free_ports(sum(counts.values())))
        return cls({job: [f"{host}:{next(ports)}" for _ in range(n)]
                    for job, n in counts.items() if n}, evaluator=evaluator)

    @property
    def tasks(self) -> list[Task]:
        """Every task, ps first, then chief, then workers, then the evaluator."""
        tasks = [Task(job, i) for job, addrs in self.cluster.items() for i in range(len(addrs))]
        return tasks + ([Task(EVALUATOR, 0)] if self.evaluator else [])

    def address(self, task: Task) -> str:
        """The "host:port" of `task` ("" for the evaluator, which serves nothing)."""
        if task.job == EVALUATOR:
            return ""
        return self.cluster[task.job][task.index]

    def tf_config(self, task: Task) -> dict:
        """The TF_CONFIG object for `task` (json.dumps it for the environment)."""
        return {"cluster": self.cluster, "task": {"type": task.job, "index": task.index}}

    def tf_config_json(self, task: Task) -> str:
        """TF_CONFIG for `task` as the JSON text an environment variable holds."""
        return json.dumps(self.tf_config(task), separators=(",", ":"))

    def standby_env(self) -> dict[str, str]:
        """What every task's environment needs when the cluster has ps_standby tasks (none
        otherwise): replication on, and the standby addresses for a ps whose ClusterSpec
        comes from the seed flags, which name no standby job."""
        standby = self.cluster.get(PS_STANDBY)
        if not standby:
            return {}
        # Imported here: bench.common loads this file alone under real TF (free_ports),
        # where the tensorweave package cannot be imported.
        from tensorweave.base import knobs
        return {**knobs.PS_REPLICATION.setting(True),
                **knobs.PS_STANDBY.setting(tuple(standby))}

    def seed_flags(self, task: Task) -> list[str]:
        """The seed programs' cluster flags for `task`.

        Raises:
            ValueError: If the cluster has a "chief" job or an evaluator, which the
                flags cannot express.
        """
        if self.evaluator:
            raise ValueError("The seed flags (--ps_hosts/--worker_hosts) have no evaluator "
                             "task; an evaluator needs TF_CONFIG: drop --pass-flags.")
        if "chief" in self.cluster:
            raise ValueError("The seed flags (--ps_hosts/--worker_hosts) have no chief job; "
                             "drop --chief (worker 0 is then the chief) or drop --pass-flags.")
        return [f"--ps_hosts={','.join(self.cluster.get('ps', []))}",
                f"--worker_hosts={','.join(self.cluster.get('worker', []))}",
                f"--job_name={task.job}", f"--task_index={task.index}"]


def _ordered(cluster: dict[str, list[str]]) -> list[str]:
    known = [j for j in _JOB_ORDER if j in cluster]
    return known + sorted(j for j in cluster if j not in _JOB_ORDER)

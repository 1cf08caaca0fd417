"""A ps task's state kept live on another task, so a ps that dies costs no rollback.

With `TENSORWEAVE_PS_REPLICATION=1`, every ps task sends its variables (values, optimizer
slots, the global step: every variable it holds) to its *holder* every
`TENSORWEAVE_PS_REPLICA_SECS`: the first time whole, then only the variables that
changed, and of a large one only the rows that changed (an embedding touched by a few
ids costs those rows). Each copy is taken with the task's update gate paused
(`runtime/update_gate.py`), so it holds whole steps: a variable and its slots match.

A ps that starts where one died (the launcher's `--restart`, a Kubernetes pod restart,
the same command run again) asks its holder for its state while it serves but before it
registers any graph. If the holder has a replica, the new ps serves that state: sessions
created afterwards find the model ready, so the chief's `SessionManager.prepare_session`
restores no checkpoint over it and the global step goes on from where the replica was
(async training loses at most the updates of the last interval: the lag, which
`GetStatus` reports; with an interval of 0 the ps sends after every step that changed
it, before the step ends, and no completed step is lost, as long as the holder answers
within STEP_WAIT_S: one that does not is caught up from a thread while steps go on
without waiting for it). If there is no copy (the
holder died too, replication was off, or this is the job's first start), the ps starts
empty and the chief restores the newest checkpoint as before. The ps logs which happened.

Where the replica lives (`holder_of`): a task of the `ps_standby` job when the cluster has
one (ps i -> standby i mod n); else the ps before it (ps i - 1 backs up ps i) when there
are several; else the chief ("chief" or "master" task 0, else worker 0). Of those, the
first on another host than the ps is taken when the ClusterSpec has one.

Mutable lookup tables (MutableHashTable, MutableDenseHashTable) and EmbeddingVariables
(their ids, counts and versions, the rows of the variable and of its slots) travel with
the variables (distributed/replica_tables.py, replica_embeddings.py). Not replicated:
queues and accumulators (sync replicas' token queue and gradient accumulators: the step
in flight is done again) and WorkQueues (a ps holding one restarts empty and the chief
restores the checkpoint); a holder keeps its replicas in memory only.

Example:
    >>> # every task of the job (the same variable in each task's environment)
    >>> os.environ["TENSORWEAVE_PS_REPLICATION"] = "1"
    >>> server = tf.train.Server(cluster, job_name="ps", task_index=0)
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.base import knobs
from tensorweave.base.address import address_key
from tensorweave.base.waits import Backoff
from tensorweave.distributed import replica_embeddings, replica_tables
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework.device import parse_task_name, task_name
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.distributed.replica_store import CALL_TIMEOUT_S, Key
from tensorweave.distributed.topology import PS_STANDBY
from tensorweave.ops.state.kv_variable_ops import EmbeddingResource
from tensorweave.runtime.resource_mgr import ResourceMgr, VariableResource
from tensorweave.runtime.update_gate import update_gate

log = logging.getLogger("tensorweave.replica")

# A variable with at least this many rows is sent as its changed rows, when fewer than
# half of them changed; smaller ones are sent whole when they changed at all.
_ROWS_MIN = 64
# A variable found mostly changed is sent whole this many puts without comparing.
_DENSE_RECHECK = 7
# How long a copy may wait for updating steps to finish their part on the task; a task
# that busy is copied at the next interval instead.
_PAUSE_S = 0.5
# With an interval of 0, how long a step waits for its put. A holder slower than that
# (frozen, cut off, dead) is caught up from a thread instead, and steps stop waiting for
# it until it is current again: a lost holder costs replication, never training.
STEP_WAIT_S = 2.0


def holder_of(cluster: Any, task: str) -> str | None:
    """The task that holds `task`'s replica (see the module docstring), or None when the
    cluster has no other task to hold it.

    Example:
        >>> holder_of(tf.train.ClusterSpec({"ps": ["a:1", "b:1"], "worker": ["c:1"]}),
        ...           "/job:ps/replica:0/task:1")
        '/job:ps/replica:0/task:0'
    """
    job, index = parse_task_name(task)
    candidates: list[tuple[str, int]] = []
    if PS_STANDBY in cluster.jobs:
        standby = cluster.task_indices(PS_STANDBY)
        candidates += [(PS_STANDBY, standby[(index + k) % len(standby)])
                       for k in range(len(standby))]
    if job == "ps":
        ps = cluster.task_indices("ps")
        here = ps.index(index) if index in ps else 0
        candidates += [("ps", ps[(here - k) % len(ps)]) for k in range(1, len(ps))]
    for chief in ("chief", "master", "worker"):
        if chief in cluster.jobs and cluster.task_indices(chief):
            candidates.append((chief, cluster.task_indices(chief)[0]))
            break
    candidates = [c for c in candidates if c != (job, index)]
    if not candidates:
        return None
    own = _host(cluster.task_address(job, index))
    other_host = [c for c in candidates if _host(cluster.task_address(*c)) != own]
    return task_name(*(other_host or candidates)[0])


def standby_tasks(cluster: Any) -> dict[str, str]:
    """{task name: address} of the ps_standby tasks that TENSORWEAVE_PS_STANDBY names when
    `cluster` has no ps_standby job of its own (else none: the ClusterSpec's stand)."""
    if PS_STANDBY in cluster.jobs:
        return {}
    return {task_name(PS_STANDBY, i): address
            for i, address in enumerate(knobs.PS_STANDBY.get())}


def with_standby(cluster: Any, standby: dict[str, str]) -> Any:
    """`cluster` with the `standby_tasks` as its ps_standby job (`cluster` itself if none)."""
    if not standby:
        return cluster
    jobs = {job: {i: cluster.task_address(job, i) for i in cluster.task_indices(job)}
            for job in cluster.jobs}
    jobs[PS_STANDBY] = {parse_task_name(t)[1]: a for t, a in standby.items()}
    return ClusterSpec(jobs)


def _host(address: str) -> str:
    return address_key(address)[0] if address else ""


# ---- state out of and into a task's resources ---------------------------------------
def _variables(resources: ResourceMgr) -> Iterator[tuple[Key, VariableResource]]:
    for container, name, res in resources.resources():
        if isinstance(res, VariableResource) and res.value is not None and \
                replica_tables.carried(res) and not isinstance(res, EmbeddingResource):
            yield (container, name), res


def _entry(key: Key, res: VariableResource, rows: bool) -> pb.ReplicaEntry:
    shape = as_shape(res.shape) if res.shape is not None else as_shape(None)
    dims = shape.as_list() if shape.rank is not None else []
    return pb.ReplicaEntry(container=key[0], name=key[1], dtype=_dt.as_dtype(res.dtype).name,
                           shape=[-1 if d is None else d for d in dims],
                           shape_known=shape.rank is not None, rows=rows)


# ---- the primary's side ------------------------------------------------------------
class ReplicaSender:
    """Sends a ps task's variables to its holder every `interval` seconds (a thread).

    Args:
        task: the ps task.
        incarnation: its worker's incarnation (a restarted task sends everything anew).
        resources: its ResourceMgr.
        holder: the task holding the replica (`holder_of`).
        peer: `peer(task)` -> that task's worker Peer.
        interval: seconds between copies (TENSORWEAVE_PS_REPLICA_SECS); 0: no thread,
            the task calls `send_once` after each step instead (`after_step`).
        job_done: set when the chief has ended the job: nothing is sent after it (the
            holder, a standby task, is told too and may be gone).
    """

    def __init__(self, task: str, incarnation: int, resources: ResourceMgr, holder: str,
                 peer: Callable[[str], Any], interval: float,
                 job_done: threading.Event | None = None) -> None:
        self.task, self.holder, self.interval = task, holder, interval
        self._job_done = job_done or threading.Event()
        self._incarnation, self._resources, self._peer = incarnation, resources, peer
        self._acked: dict[Key, Any] | None = None  # what the holder has (tables: tuples)
        self._uncovered: list[str] = []  # state on the task no replica carries
        self._sent_uncovered: list[str] = []
        self._dense: dict[Key, int] = {}  # puts left to send a dense-updated one unchecked
        self._seq = 0
        self._acked_copy_at: float | None = None  # when the copy it has was taken
        self._stop = threading.Event()
        self._sending = threading.Lock()  # one copy and put at a time
        self._gate = update_gate(resources, task)
        # the gate's update count at the last copy the holder has, and its
        # EmbeddingVariables' counts of holds (lookups change them without the gate)
        self._sent_updates: tuple[int, tuple[int, ...]] | None = None
        self._failing_since: float | None = None
        self._behind = threading.Event()  # interval 0: steps do not wait; a thread catches up
        self._behind_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"replica->{holder}",
                                        daemon=True)

    def start(self) -> "ReplicaSender":
        if self.interval > 0:
            self._thread.start()
        return self

    def after_step(self, updated: bool = True) -> None:
        """With interval 0: called when a step's part on the task ended, before the step
        is reported done, so a completed step is in the replica. A part that `updated`
        nothing here (a sync worker's gradient push, a read) has nothing to wait for,
        unless it looked up EmbeddingVariables (counting and admitting ids holds no
        gate). A holder that has not taken the put within STEP_WAIT_S fails no step:
        steps stop waiting for it and a thread catches it up (the log says so, and when
        it is current again)."""
        if self._job_done.is_set() or self._behind.is_set() or not updated and (
                self._sent_updates is None or
                self._sent_updates[1] == replica_embeddings.marks(self._resources)):
            return
        # The whole wait is bounded, the turn behind another step's put included (steps
        # of several sessions end at once; one of them may be the put that hangs).
        deadline = time.monotonic() + STEP_WAIT_S
        if self._sending.acquire(timeout=STEP_WAIT_S):
            try:
                if self._behind.is_set() or \
                        self._send(max(deadline - time.monotonic(), 0.01)):
                    return
            except Exception as e:  # noqa: BLE001 - the step itself succeeded
                log.warning("%s: could not update its replica on %s: %s", self.task,
                            self.holder, e)
            finally:
                self._sending.release()
        self._fall_behind()

    def _fall_behind(self) -> None:
        """Steps stop waiting for the holder; a thread catches it up (once)."""
        with self._behind_lock:
            if self._stop.is_set() or self._behind.is_set():
                return
            self._behind.set()
        log.warning("%s: its replica on %s is behind: steps no longer wait for it (a "
                    "restart now loses the steps since its last put) until it is caught up",
                    self.task, self.holder)
        threading.Thread(target=self._catch_up, name=f"replica-catch-up->{self.holder}",
                         daemon=True).start()

    def _catch_up(self) -> None:
        """Puts until the holder has the task's current state, then steps wait again."""
        delays = Backoff(0.1, 2.0, 1.0).delays()
        delay = 0.0
        while not self._stop.wait(delay) and not self._job_done.is_set():
            try:  # once the holder has a copy, the next step's put sends what came since
                if self.send_once():
                    break
            except Exception as e:  # noqa: BLE001 - a thread: log, keep trying
                log.warning("%s: could not update its replica on %s: %s", self.task,
                            self.holder, e)
            delay = next(delays)
        else:
            return
        self._behind.clear()
        log.warning("%s: its replica on %s is caught up: steps wait for it again",
                    self.task, self.holder)

    def stop(self) -> None:
        self._stop.set()

    def lag_secs(self) -> float:
        """How old the state the holder last acknowledged is (-1: none yet)."""
        at = self._acked_copy_at
        return -1.0 if at is None else time.monotonic() - at

    def _run(self) -> None:
        while not self._stop.wait(self.interval) and not self._job_done.is_set():
            try:
                self.send_once()
            except Exception as e:  # noqa: BLE001 - a thread: log, keep trying
                log.warning("%s: could not update its replica on %s: %s", self.task,
                            self.holder, e)

    def send_once(self, timeout: float = CALL_TIMEOUT_S) -> bool:
        """Copies the variables and sends what changed; True if the holder has them
        (within `timeout` seconds)."""
        with self._sending:
            return self._send(timeout)

    def _send(self, timeout: float) -> bool:
        taken = time.monotonic()
        updates = self._gate.updates  # read before the copy: a later update sends again
        if self._acked is not None and self._sent_updates == \
                (updates, replica_embeddings.marks(self._resources)):
            self._acked_copy_at = taken  # no step updated a variable here since
            return True
        current = self._copy()
        if current is None:
            return False  # updates held the gate for _PAUSE_S: at the next interval
        req, tensors = self._put_for(current)
        marks = (updates, replica_embeddings.recorded(current))
        if req is None:  # the holder is current (the same values: they become its base)
            self._acked = {key: value for key, (_, value) in current.items()}
            self._acked_copy_at, self._sent_updates = taken, marks
            return True
        try:
            self._peer(self.holder).call("replica_put", req, tensors, timeout=timeout)
        except errors.OpError as e:
            self._acked = None  # the holder may have lost it: the next put is whole
            self._report_failure(e)
            return False
        if self._failing_since is not None:
            # at the level of the warning it ends: whoever saw that one sees this one
            log.warning("%s: its replica on %s is current again", self.task, self.holder)
            self._failing_since = None
        self._acked = {key: value for key, (_, value) in current.items()}
        self._acked_copy_at, self._sent_updates = taken, marks
        return True

    def _copy(self) -> dict[Key, tuple[Any, Any]] | None:
        gate = self._gate
        try:
            owner = gate.pause(timeout_s=_PAUSE_S)
        except errors.DeadlineExceededError:
            return None
        try:
            copy: dict[Key, Any] = {key: (res, res.read().copy())
                                    for key, res in _variables(self._resources)}
            copy.update(replica_tables.snapshot(self._resources))
            copy.update(replica_embeddings.snapshot(self._resources, self._acked))
            self._uncovered = replica_tables.uncovered(self._resources)
            return copy
        finally:
            gate.resume(owner)

    def _put_for(self, current: dict[Key, tuple[Any, Any]]
                 ) -> tuple[pb.ReplicaPutRequest | None, list[np.ndarray]]:
        acked = self._acked
        req = pb.ReplicaPutRequest(task=self.task, incarnation=self._incarnation,
                                   seq=self._seq + 1, full=acked is None)
        tensors: list[np.ndarray] = []
        req.uncovered.extend(self._uncovered)
        for key, (res, value) in current.items():
            before = None if acked is None else acked.get(key)
            if replica_embeddings.is_group(value):  # its changed rows, or whole
                sent = replica_embeddings.put(key, value, before)
                if sent is not None:
                    req.entry.append(sent[0])
                    tensors += sent[1]
                continue
            if isinstance(value, tuple):  # a table: whole, when it changed
                if not replica_tables.same(before, value):
                    req.entry.append(replica_tables.entry(key, res))
                    tensors += list(value)
                continue
            if before is not None and before.shape == value.shape \
                    and before.dtype == value.dtype and not self._dense_skip(key):
                changed = _changed_rows(before, value)
                if changed is _WHOLE:  # a dense update: whole, and unchecked a few times
                    self._dense[key] = _DENSE_RECHECK
                elif changed is not None:
                    self._dense.pop(key, None)
                    if not len(changed):
                        continue
                    req.entry.append(_entry(key, res, rows=True))
                    tensors += [changed, value[changed]]
                    continue
                elif np.array_equal(before, value):
                    continue
            req.entry.append(_entry(key, res, rows=False))
            tensors.append(value)
        if acked is not None:
            req.removed.extend(f"{c}/{n}" for c, n in acked if (c, n) not in current)
        if not req.full and not req.entry and not req.removed \
                and self._uncovered == self._sent_uncovered:
            return None, []
        self._sent_uncovered = list(self._uncovered)
        self._seq += 1
        return req, tensors

    def _dense_skip(self, key: Key) -> bool:
        """Whether to send `key` whole without comparing: its last compares found most
        rows changed (a dense layer's update, every step); every `_DENSE_RECHECK`th put
        compares again, so one that stops changing stops being sent."""
        left = self._dense.get(key, 0)
        if left <= 0:
            return False
        self._dense[key] = left - 1
        return True

    def _report_failure(self, e: errors.OpError) -> None:
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
            log.warning("%s: could not update its replica on %s (%s): a restart now would "
                        "fall back to the newest checkpoint; retrying %s", self.task,
                        self.holder, e.message.splitlines()[0],
                        f"every {self.interval:g}s" if self.interval else "with back-off")


_WHOLE = np.empty(0, np.int64)  # `_changed_rows`: most rows changed, send it whole


def _changed_rows(before: np.ndarray, value: np.ndarray) -> np.ndarray | None:
    """Indices of the rows of a large variable that changed; `_WHOLE` when more than half
    did (it is sent whole, no further compare needed); None for a small one."""
    if value.ndim == 0 or value.shape[0] < _ROWS_MIN:
        return None
    diff = (before != value).reshape(value.shape[0], -1).any(axis=1)
    rows = np.flatnonzero(diff)
    return rows if len(rows) <= value.shape[0] // 2 else _WHOLE


def enabled() -> bool:
    """Whether ps tasks replicate their state (TENSORWEAVE_PS_REPLICATION)."""
    return knobs.PS_REPLICATION.get()

"""Every `TENSORWEAVE_*` environment variable, declared once: the only module that reads them.

Each knob has a name, a type (one parser per type), a unit, a default and a one-line doc;
`docs/configuration.md` is generated from this table (`tools/gen_configuration_doc.py`).
Values are read from the environment at each use, never frozen at import, so a test's
monkeypatch or a launcher's child environment takes effect at once.

The rules, the same for every knob:

- An unset variable, or one set to an empty (or all-blank) value, means the default.
- Booleans: "1", "true", "yes", "on" are true; "0", "false", "no", "off" are false (any
  case, blanks around ignored). Anything else is a ValueError naming the variable.
- Units are spelled in the name, once for all: seconds end in `_SECS` (a decimal number,
  "2.5"), sizes end in `_BYTES` (an integer, or a number with a binary suffix: "512KiB",
  "16MiB", "1.5GiB", "1TiB"). Counts have no suffix. Nothing ends in `_S`, `_MS` or `_MB`.
- Paths are used as given; a path list is separated by `os.pathsep` (":" on Linux).
- A list of words (hosts, CIDRs) is separated by commas or blanks.
- An old spelling (`TENSORWEAVE_HANDSHAKE_TIMEOUT_S`, `TENSORWEAVE_SHM_RING_MB`) is still
  read when the new name is unset, in its old unit, and logs one WARNING naming the new one.

Code that starts processes writes settings through the same objects (`knob.setting(v)`,
`knob.export(v)`), never through a string literal. `tools/check_env_reads.py` (run by
`./dev.sh check`) fails on a read of a `TENSORWEAVE_*` variable anywhere else.

Example:
    >>> from tensorweave.base import knobs
    >>> knobs.HANDSHAKE_TIMEOUT_SECS.get()
    10.0
    >>> os.environ["TENSORWEAVE_BULK"] = "off"
    >>> knobs.BULK.get()
    False
    >>> knobs.SHM_RING_BYTES.setting(32 << 20)
    {'TENSORWEAVE_SHM_RING_BYTES': '33554432'}
"""
from __future__ import annotations

from typing import TypeVar

from tensorweave.base.knob_types import (  # noqa: F401  (re-exported: knobs.Secs, ...)
    Alias, Bool, Bytes, Int, Knob, Path, PathList, Secs, Text, Words)

__all__ = ["Alias", "Bool", "Bytes", "Int", "Knob", "Path", "PathList", "Secs", "Text",
           "Words", "all_knobs", "lookup"]


K = TypeVar("K", bound=Knob)
_REGISTRY: dict[str, Knob] = {}


def _declare(area: str, knob: K) -> K:
    for name in (knob.name, *(a.name for a in knob.aliases)):
        if any(name in (k.name, *(a.name for a in k.aliases)) for k in _REGISTRY.values()):
            raise ValueError(f"{name} is declared twice; each knob has one home.")
    knob.area = area
    _REGISTRY[knob.name] = knob
    return knob


def all_knobs() -> list[Knob]:
    """Every declared knob, in declaration order."""
    return list(_REGISTRY.values())


def lookup(name: str) -> Knob:
    """The knob declared as `name` (or with `name` as an old spelling).

    Raises:
        KeyError: no knob has that name.
    """
    for knob in _REGISTRY.values():
        if name == knob.name or any(name == a.name for a in knob.aliases):
            return knob
    raise KeyError(f"No knob is named {name!r}; see docs/configuration.md.")


# --- The declarations: every TENSORWEAVE_* variable, once. ---------------------------------
_LIMITS, _SECURITY, _CLUSTER, _TRAIN, _LAUNCH = (
    "Transport and limits", "Security", "Servers and jobs", "Training", "Launcher")

MAX_MESSAGE_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_MAX_MESSAGE_BYTES", 1 << 30, minimum=1024,
    doc="Largest gRPC message a task receives (at most 2 GiB - 1); big tensors travel in "
        "chunks or over the bulk side channel, never in one message."))
MAX_TENSOR_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_MAX_TENSOR_BYTES", 16 << 30, minimum=1,
    doc="Largest tensor a frame's header may announce, checked before any buffer is "
        "allocated."))
MAX_CONNECTIONS = _declare(_LIMITS, Int(
    "TENSORWEAVE_MAX_CONNECTIONS", 1024, minimum=1,
    doc="Open connections on a listener (the task port: gRPC relays and bulk side "
        "channels together; the same-host socket: links); more are closed at once."))
MAX_HALF_OPEN = _declare(_LIMITS, Int(
    "TENSORWEAVE_MAX_HALF_OPEN", 256, minimum=1,
    doc="Connections a listener (the task port, the same-host socket) holds before they "
        "have said who they are (first bytes, TLS, hello); more are closed at once, with "
        "a log line naming the peer."))
HANDSHAKE_TIMEOUT_SECS = _declare(_LIMITS, Secs(
    "TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS", 10.0, minimum=0.1,
    aliases=(Alias("TENSORWEAVE_HANDSHAKE_TIMEOUT_S"),),
    doc="How long a new connection may take to say who it is (first bytes, TLS, token); "
        "then it is closed."))
TCP_RETRANSMIT_MAX_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_TCP_RETRANSMIT_MAX_SECS", 1.0, minimum=0,
    doc="The longest wait between TCP retransmissions on the cluster's TCP connections "
        "(TCP_RTO_MAX_MS, Linux 6.14 and later, at least 1; 0 keeps the kernel's 120 s): "
        "after a silent partition heals, a stalled step goes on within about this long."))
SHM_RING_BYTES = _declare(_LIMITS, Bytes(
    "TENSORWEAVE_SHM_RING_BYTES", 16 << 20, minimum=0,
    aliases=(Alias("TENSORWEAVE_SHM_RING_MB", scale=1 << 20, unit="MiB"),),
    doc="Shared-memory ring each side of a same-host link writes its big tensors into; "
        "0: none (big tensors go through the socket)."))
BULK = _declare(_LIMITS, Bool(
    "TENSORWEAVE_BULK", True,
    doc="Big tensors move over raw connections to the task port; 0 keeps them inside gRPC "
        "(slower, same single port)."))
TRANSPORT = _declare(_LIMITS, Text(
    "TENSORWEAVE_TRANSPORT", "grpc", word=True,
    doc="The protocol of servers built without one and of client sessions: a registered "
        "name (grpc: unix for this machine's tasks, else TCP; tcp; unix; inprocess); "
        "auto is the old spelling of grpc."))
TLS_CA = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_CA", "", doc="PEM file of the cluster CA; with TLS_CERT and TLS_KEY "
    "every connection is mutual TLS.", default_doc="unset: no TLS"))
TLS_CERT = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_CERT", "", doc="PEM file of this process's certificate, signed by the "
    "cluster CA.", default_doc="unset: no TLS"))
TLS_KEY = _declare(_SECURITY, Path(
    "TENSORWEAVE_TLS_KEY", "", doc="PEM file of this process's private key.",
    default_doc="unset: no TLS"))
TLS_SERVER_NAME = _declare(_SECURITY, Text(
    "TENSORWEAVE_TLS_SERVER_NAME", "", word=False,
    doc="Check servers' certificates against this name instead of the host dialled "
        "(`tensorweave certs` uses tensorweave-cluster).",
    default_doc="unset: the host of the address"))
AUTH_TOKEN_FILE = _declare(_SECURITY, Path(
    "TENSORWEAVE_AUTH_TOKEN_FILE", "", doc="File holding the cluster's shared secret; every "
    "call carries a digest of it.", default_doc="unset: no token"))
ALLOW_DIRS = _declare(_SECURITY, PathList(
    "TENSORWEAVE_ALLOW_DIRS", (), doc="Directories a task's file ops (Saver, TFRecord, "
    "summaries) may touch; `--allow-dir` sets it.",
    default_doc="unset: a server allows the current and the temp directory; an in-process "
                "session is not confined"))
ALLOW_FROM = _declare(_SECURITY, Words(
    "TENSORWEAVE_ALLOW_FROM", (), doc="Without credentials a task accepts connections only "
    "from its ClusterSpec's hosts; these hosts, addresses or CIDRs (or `any`) may connect "
    "too; `--allow-from` sets it.", default_doc="unset: the cluster's hosts only"))
BIND_ALL = _declare(_CLUSTER, Bool(
    "TENSORWEAVE_BIND_ALL", False, doc="A server listens on every interface, not only its "
    "own address (`tensorweave manifest` sets it)."))
NOTIFY_JOB_DONE = _declare(_CLUSTER, Bool(
    "TENSORWEAVE_NOTIFY_JOB_DONE", True, doc="The chief's normal end tells the ps tasks, whose "
    "`join()` then exits 0; 0 keeps TF's ps that never exits."))
JOB_END_SILENCE_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_JOB_END_SILENCE_SECS", 45.0, minimum=0,
    doc="Once the job is done, a ps closes a worker's open sessions when that worker has "
        "answered none of its health checks (3 at least) for this long; at most the "
        "server's done_grace_secs."))
JOB_END_LATE_WORKER_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_JOB_END_LATE_WORKER_SECS", 10.0, minimum=0,
    doc="Once the job is done, a ps serves up to this long for worker tasks that never "
        "opened a session on it and have not exited: one that starts late finds the job "
        "finished, not no ps."))
MEMBERS_FILE = _declare(_CLUSTER, Path(
    "TENSORWEAVE_MEMBERS_FILE", "", doc="A JSON file naming the workers that are members "
    "of an elastic job now (`tensorweave launch --max-workers` writes it): a ps closes the "
    "sessions of a worker that left at once, and does not wait for one never started.",
    default_doc="unset: every worker of the ClusterSpec is a member"))
PEER_SILENCE_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_PEER_SILENCE_SECS", 30.0, minimum=0, exclusive=True,
    doc="A step waiting on a task that answers no health check for this long fails with "
        "UnavailableError naming it (MonitoredTrainingSession recovers); WARNING lines "
        "name it from a sixth of this on. Steps with a deadline end at their deadline."))
PS_REPLICATION = _declare(_CLUSTER, Bool(
    "TENSORWEAVE_PS_REPLICATION", False, doc="Each ps task keeps a live copy of its variables "
    "on another task (distributed/replica.py); a ps restarted on its address carries on from "
    "it instead of the newest checkpoint. Set it in every task of the job."))
PS_REPLICA_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_PS_REPLICA_SECS", 0.1, minimum=0,
    doc="How often a replicating ps sends what changed to its replica: the most async "
        "training loses when the ps dies. 0: after every step that changed the ps, before "
        "the step ends (no completed step is lost; for sync training, whose steps are few)."))
PS_STANDBY = _declare(_CLUSTER, Words(
    "TENSORWEAVE_PS_STANDBY", (), doc="The host:port of each ps_standby task, for ps tasks "
    "whose ClusterSpec has no ps_standby job (a program that builds it from --ps_hosts and "
    "--worker_hosts): their replicas go there. `tensorweave launch --ps-standby N` sets it.",
    default_doc="unset: a ps_standby job of the ClusterSpec, if any"))
PS_REPLICA_WAIT_SECS = _declare(_CLUSTER, Secs(
    "TENSORWEAVE_PS_REPLICA_WAIT_SECS", 5.0, minimum=0,
    doc="How long a starting ps waits for the task holding its replica to answer before it "
        "starts empty (and the chief restores the newest checkpoint)."))
SESSION_DEADLINE_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SESSION_DEADLINE_SECS", 60.0, minimum=0, exclusive=True,
    doc="How long a session's steps, and creating or recovering a session, may wait for "
        "unreachable tasks (base.waits.cluster_wait_secs).",
    default_doc="ConfigProto.operation_timeout_in_ms if set, else 60 (base.waits' default)"))
SYNC_REPLICA_WARN_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_REPLICA_WARN_SECS", 10.0, minimum=0, exclusive=True,
    doc="A sync-replicas step waiting this long logs which replicas sent no gradient, "
        "and again every as long."))
SYNC_REPLICA_TIMEOUT_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS", 300.0, minimum=0,
    doc="The sync-replicas chief gives up (DeadlineExceededError naming the missing "
        "replicas) after this; 0 waits forever."))
SYNC_MIN_REPLICAS = _declare(_TRAIN, Int(
    "TENSORWEAVE_SYNC_MIN_REPLICAS", 1, minimum=1,
    doc="The fewest gradients a sync-replicas step aggregates when replicas finish or "
        "leave an elastic job (SyncReplicasOptimizer's min_replicas_to_aggregate, which "
        "wins; capped at replicas_to_aggregate); with fewer live the step waits."))
SYNC_SERVE_SECS = _declare(_TRAIN, Secs(
    "TENSORWEAVE_SYNC_SERVE_SECS", 10.0, minimum=0,
    doc="At the end of training the sync-replicas chief serves replicas still training "
        "(while they progress) at most this long, then closes the token queue."))
PROGRESS_PREFIX = _declare(_LAUNCH, Text(
    "TENSORWEAVE_PROGRESS_PREFIX", "", doc="Set by `tensorweave launch` in each task: "
    "`report_progress` prints this plus JSON, which the launcher shows as progress.",
    default_doc="unset: report_progress prints nothing"))


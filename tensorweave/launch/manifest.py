"""`tensorweave manifest`: Kubernetes manifests that run one program as a cluster.

Two designs, as multi-document YAML:

* ``tfjob``: a Kubeflow ``TFJob`` (kubeflow.org/v1). One replica spec per role
  (PS, Worker, Chief with `chief`, Evaluator with `evaluator`: the operator
  keeps the evaluator out of TF_CONFIG's cluster, as TF 1.x expects); the
  training operator creates the pods and services and sets TF_CONFIG in each,
  so the container runs COMMAND as is. The container is named "tensorflow"
  and its port "tfjob-port", which is what the operator looks for.

* ``plain``: only core Kubernetes objects, for clusters without the operator.
  Per role, a headless Service ``<name>-<role>`` (clusterIP: None) and, per
  task, one ``batch/v1`` Job ``<name>-<role>-<i>`` whose pod sets
  ``hostname: <name>-<role>-<i>`` and ``subdomain: <name>-<role>``. Kubernetes
  DNS then gives each task the stable name
  ``<name>-<role>-<i>.<name>-<role>.<namespace>.svc.cluster.local``, and since
  every Job is one task, its TF_CONFIG (and, with `pass_flags`, the seed flags)
  is written into the manifest literally: no shell wrapper, no image
  requirement beyond COMMAND, and ``kubectl get job -o yaml`` shows exactly
  what a task sees. Why Jobs rather than StatefulSets: our ps and workers exit
  by themselves when training ends, which a Job records as success, while a
  StatefulSet (restartPolicy Always) would restart them. Pods restart on
  failure in place (restartPolicy OnFailure), keeping their DNS name. The
  Services publish not-ready addresses so tasks resolve their peers while
  they are still starting.

Restarts: `restart` (role -> never | on-failure | always, as `tensorweave launch
--restart` takes it) sets each role's restartPolicy (Never, OnFailure, Always; a
Job's pod cannot be Always, so there `always` is OnFailure, see
`launch/restart.py`) and `max_restarts` the retries: each plain Job's
backoffLimit (0 for a role that is never restarted, as a Job would otherwise
replace its failed pod), and the TFJob's runPolicy.backoffLimit, which counts
the whole job's restarts: `max_restarts` for each task that may restart.
Without `restart`, `restart_policy` applies to every role as before.

Prometheus: every pod template of a task that serves the task port (not the
evaluator, which runs no server) carries the conventional annotations
``prometheus.io/scrape``, ``prometheus.io/port`` and ``prometheus.io/path`` (the
task answers ``GET /metrics`` on its one port, docs/metrics.md), so a Prometheus
that discovers pods by them finds every task; `prometheus=False` leaves them out.
The port still demands the cluster token: docs/kubernetes.md shows the scrape config.

Example:
    >>> docs = build_manifests(ManifestOptions(ps=1, workers=2, image="me/train:1",
    ...                                        command=["python", "trainer.py"]))
    >>> [d["kind"] for d in docs]
    ['TFJob']
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from tensorweave.base import knobs
from tensorweave.distributed.topology import BARE_SERVER_ARGS, PS_STANDBY, Task, Topology
from tensorweave.launch.restart import NEVER, RestartPolicy, kubernetes_restart_policy

__all__ = ["ManifestOptions", "build_manifests", "dns_address", "to_yaml"]

_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_TFJOB_ROLES = {"chief": "Chief", "ps": "PS", "worker": "Worker", "evaluator": "Evaluator"}
# Roles in the order their objects are written (servers first).
_ROLE_ORDER = ("ps", PS_STANDBY, "chief", "worker")


@dataclass
class ManifestOptions:
    """What to generate (see `tensorweave manifest --help`)."""

    ps: int
    workers: int
    image: str
    command: list[str]
    chief: bool = False
    port: int = 2222
    name: str = "tensorweave"
    namespace: str = "default"
    kind: str = "tfjob"
    pass_flags: bool = False
    restart_policy: str = "OnFailure"
    env: dict[str, str] = field(default_factory=dict)
    evaluator: bool = False
    restart: dict[str, str] | None = None  # launch's --restart, see the module docstring
    max_restarts: int | None = None  # default: 3 with `restart`, else Kubernetes' 6
    ps_standby: int = 0  # plain only: tasks holding the ps tasks' replicas (launch's flag)
    prometheus: bool = True  # annotate the task pods for Prometheus' pod discovery

    def counts(self) -> dict[str, int]:
        """Tasks per role, only roles that have tasks, servers first."""
        counts = {"ps": self.ps, PS_STANDBY: self.ps_standby, "chief": int(self.chief),
                  "worker": self.workers}
        return {role: counts[role] for role in _ROLE_ORDER if counts[role]}


def _check(options: ManifestOptions) -> None:
    if not options.command:
        raise ValueError("No command for the containers; put it after '--', e.g. "
                         "tensorweave manifest ... -- python /app/trainer.py")
    if options.ps < 0 or options.workers < 1:
        raise ValueError(f"Need --workers >= 1 and --ps >= 0, got --ps {options.ps} "
                         f"--workers {options.workers}.")
    longest = max((f"{options.name}-{_label(role)}-{n - 1}"
                   for role, n in options.counts().items()), key=len)
    if not _NAME.match(options.name) or len(longest) > 63:
        raise ValueError(f"--name {options.name!r} must be a DNS label: lowercase letters, "
                         "digits and '-', starting with a letter, short enough that "
                         f"{longest!r} fits in 63 characters.")
    if not _NAME.match(options.namespace):
        raise ValueError(f"--namespace {options.namespace!r} is not a valid namespace name "
                         "(lowercase letters, digits and '-').")
    if not 1 <= options.port <= 65535:
        raise ValueError(f"--port {options.port} is not a TCP port (1-65535).")
    if options.kind not in ("tfjob", "plain", "both"):
        raise ValueError(f"--kind {options.kind!r} is not one of tfjob, plain, both.")
    if options.kind != "tfjob" and options.restart_policy not in ("OnFailure", "Never"):
        raise ValueError(f"--restart-policy {options.restart_policy} is not allowed for the "
                         "Jobs of --kind plain; use OnFailure or Never.")
    if options.restart_policy not in ("OnFailure", "Never", "Always", "ExitCode"):
        raise ValueError(f"--restart-policy {options.restart_policy!r} is not one of "
                         "OnFailure, Never, Always, ExitCode.")
    if options.max_restarts is not None and options.max_restarts < 0:
        raise ValueError(f"--max-restarts {options.max_restarts} must be 0 or more.")
    if options.restart is not None:
        roles = set(options.counts()) | ({"evaluator"} if options.evaluator else set())
        RestartPolicy(options.restart).check_roles(roles)
    if options.pass_flags and options.evaluator:
        raise ValueError("--evaluator and --pass-flags do not mix: the seed flags have no "
                         "evaluator task (it reads TF_CONFIG). Drop one of them.")
    if options.pass_flags and options.chief:
        raise ValueError("--chief and --pass-flags do not mix: the seed flags have no chief "
                         "job (worker 0 is the chief). Drop one of them.")
    if options.ps_standby < 0 or (options.ps_standby and not options.ps):
        raise ValueError(f"--ps-standby {options.ps_standby} needs --ps >= 1 (standby tasks "
                         "hold the ps tasks' replicas) and must be 0 or more.")
    if options.ps_standby and options.kind != "plain":
        raise ValueError("--ps-standby needs --kind plain: a TFJob has no replica type for "
                         "standby tasks (the training operator takes only Chief, PS, Worker, "
                         "Master and Evaluator). With a TFJob, pass --env "
                         "TENSORWEAVE_PS_REPLICATION=1: ps tasks then back each other up, or "
                         "the chief holds a lone ps's replica.")
    if options.pass_flags and options.kind != "plain":
        raise ValueError("--pass-flags needs per-task arguments, which a TFJob's shared "
                         "replica template cannot hold; use --kind plain, or let the program "
                         "read TF_CONFIG (tf.distribute.cluster_resolver.TFConfigClusterResolver).")


def _restart_policy(options: ManifestOptions, role: str, job_pod: bool) -> str:
    if options.restart is None:
        return options.restart_policy
    return kubernetes_restart_policy(RestartPolicy(options.restart).policy(role), job_pod)


def _backoff_limit(options: ManifestOptions, role: str) -> int:
    """A plain Job's retries (one Job per task)."""
    if options.restart is None:
        return 6 if options.max_restarts is None else options.max_restarts
    if RestartPolicy(options.restart).policy(role) == NEVER:
        return 0
    return 3 if options.max_restarts is None else options.max_restarts


def _run_policy(options: ManifestOptions, roles: dict[str, int]) -> dict[str, Any]:
    # Running pods are removed when the job ends (a ps that TF-style never exits).
    run: dict[str, Any] = {"cleanPodPolicy": "Running"}
    if options.restart is not None or options.max_restarts is not None:
        # The operator counts restarts over the whole job: each task's budget, summed.
        run["backoffLimit"] = sum(_backoff_limit(options, role) * n for role, n in roles.items())
    return run


def dns_address(options: ManifestOptions, role: str, index: int) -> str:
    """The stable address of one task in the plain design.

    Example:
        >>> dns_address(ManifestOptions(1, 1, "img", ["x"]), "ps", 0)
        'tensorweave-ps-0.tensorweave-ps.default.svc.cluster.local:2222'
    """
    base = f"{options.name}-{_label(role)}"
    return f"{base}-{index}.{base}.{options.namespace}.svc.cluster.local:{options.port}"


def _label(role: str) -> str:
    """The role in DNS names (no "_" there: the ps_standby job is "ps-standby")."""
    return role.replace("_", "-")


def _container(options: ManifestOptions, args: list[str], env: dict[str, str],
               command: list[str] | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {
        # The training operator finds the container by this name.
        "name": "tensorflow",
        "image": options.image,
        "command": options.command[:1] if command is None else command,
    }
    if args:
        container["args"] = args
    # In a pod, the task's own DNS name may not resolve yet when the server binds: listen
    # on every interface there (a "localhost" task on one machine stays on loopback).
    all_env = {**knobs.BIND_ALL.setting(True), **options.env, **env}
    if all_env:
        container["env"] = [{"name": k, "value": v} for k, v in all_env.items()]
    container["ports"] = [{"name": "tfjob-port", "containerPort": options.port}]
    return container


def _labels(options: ManifestOptions, role: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "tensorweave", "app.kubernetes.io/instance": options.name,
            "app.kubernetes.io/component": role}


def _pod_metadata(options: ManifestOptions, role: str,
                  labels: dict[str, str]) -> dict[str, Any]:
    """A pod template's metadata: its labels and, for a task that serves the task port,
    the annotations Prometheus' conventional pod discovery reads.

    Example:
        >>> _pod_metadata(ManifestOptions(1, 1, "img", ["x"]), "ps", {})["annotations"]
        {'prometheus.io/scrape': 'true', 'prometheus.io/port': '2222', \
'prometheus.io/path': '/metrics'}
    """
    metadata: dict[str, Any] = {"labels": labels}
    # The evaluator runs no server: an annotation there would be a target always down.
    if options.prometheus and role != "evaluator":
        metadata["annotations"] = {"prometheus.io/scrape": "true",
                                   "prometheus.io/port": str(options.port),
                                   "prometheus.io/path": "/metrics"}
    return metadata


def _tfjob(options: ManifestOptions) -> dict[str, Any]:
    specs = {}
    roles = dict(options.counts(), **({"evaluator": 1} if options.evaluator else {}))
    for role, replicas in roles.items():
        specs[_TFJOB_ROLES[role]] = {
            "replicas": replicas,
            "restartPolicy": _restart_policy(options, role, job_pod=False),
            "template": {"metadata": _pod_metadata(options, role, _labels(options, role)),
                         "spec": {"containers": [
                             _container(options, options.command[1:], {})]}},
        }
    return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
            "metadata": {"name": options.name, "namespace": options.namespace},
            "spec": {"runPolicy": _run_policy(options, roles), "tfReplicaSpecs": specs}}


def _service(options: ManifestOptions, role: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"{options.name}-{_label(role)}",
                         "namespace": options.namespace,
                         "labels": _labels(options, role)},
            "spec": {"clusterIP": "None", "publishNotReadyAddresses": True,
                     "selector": _labels(options, role),
                     "ports": [{"name": "tfjob-port", "port": options.port,
                                "targetPort": options.port}]}}


def plain_cluster(options: ManifestOptions) -> dict[str, list[str]]:
    """The cluster of the plain design: role -> DNS addresses."""
    return {role: [dns_address(options, role, i) for i in range(n)]
            for role, n in options.counts().items()}


def _task_job(options: ManifestOptions, role: str, index: int) -> dict[str, Any]:
    topology, task = Topology(plain_cluster(options)), Task(role, index)
    env = {"TF_CONFIG": topology.tf_config_json(task), **topology.standby_env()}
    if role == PS_STANDBY:  # a bare server: `python -m tensorweave server` reads TF_CONFIG
        program = options.command[0]
        python = program if os.path.basename(program).startswith("python") else "python3"
        command, args = [python], list(BARE_SERVER_ARGS)
    else:
        command, args = options.command[:1], list(options.command[1:])
        if options.pass_flags:
            args += topology.seed_flags(task)
    name = f"{options.name}-{_label(role)}-{index}"
    labels = {**_labels(options, role), "tensorweave/task-index": str(index)}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": options.namespace, "labels": labels},
            "spec": {"backoffLimit": _backoff_limit(options, role), "template": {
                "metadata": _pod_metadata(options, role, labels),
                "spec": {"hostname": name, "subdomain": f"{options.name}-{_label(role)}",
                         "restartPolicy": _restart_policy(options, role, job_pod=True),
                         "containers": [_container(options, args, env, command)]},
            }}}


def _evaluator_job(options: ManifestOptions) -> dict[str, Any]:
    # No Service and no stable name: the evaluator serves nothing, it reads model_dir.
    topology = Topology(plain_cluster(options), evaluator=True)
    env = {"TF_CONFIG": topology.tf_config_json(Task("evaluator", 0)),
           **topology.standby_env()}
    name = f"{options.name}-evaluator-0"
    labels = {**_labels(options, "evaluator"), "tensorweave/task-index": "0"}
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": options.namespace, "labels": labels},
            "spec": {"backoffLimit": _backoff_limit(options, "evaluator"), "template": {
                "metadata": _pod_metadata(options, "evaluator", labels),
                "spec": {"restartPolicy": _restart_policy(options, "evaluator", job_pod=True),
                         "containers": [_container(options, list(options.command[1:]),
                                                   env)]},
            }}}


def build_manifests(options: ManifestOptions) -> list[dict[str, Any]]:
    """The Kubernetes objects for `options.kind`, as plain dicts.

    Returns:
        The documents: a TFJob ("tfjob"), Services then Jobs ("plain"), or both.

    Raises:
        ValueError: If an option is invalid; the message names it.

    Example:
        >>> opts = ManifestOptions(1, 2, "img", ["python", "t.py"], kind="plain")
        >>> [d["kind"] for d in build_manifests(opts)][:2]
        ['Service', 'Service']
    """
    _check(options)
    docs: list[dict[str, Any]] = []
    if options.kind in ("tfjob", "both"):
        docs.append(_tfjob(options))
    if options.kind in ("plain", "both"):
        docs += [_service(options, role) for role in options.counts()]
        docs += [_task_job(options, role, i) for role, n in options.counts().items()
                 for i in range(n)]
        if options.evaluator:
            docs.append(_evaluator_job(options))
    return docs


def to_yaml(docs: list[dict[str, Any]], header: str = "") -> str:
    """Multi-document YAML text for `docs` (keys in the order written)."""
    import yaml  # PyYAML; imported here so the launcher does not need it

    class NoAliases(yaml.SafeDumper):
        """Writes shared dicts (labels) in full: kubectl users expect no &id001 anchors."""

        def ignore_aliases(self, data: Any) -> bool:
            return True

    body = yaml.dump_all(docs, Dumper=NoAliases, sort_keys=False, default_flow_style=False,
                         width=1000)
    return header + body

"""`tf.estimator.RunConfig`: run settings plus this process's place in the cluster.

The cluster part is read from TF_CONFIG (see `tensorweave.distributed.tf_config`)
exactly as TF's Estimator does, with one relaxation: TF insists on a "chief"
job, while here a cluster without one (the classic ps + worker layout) makes
worker 0 the chief. A legacy "master" job is treated like "chief".

Example:
    >>> # TF_CONFIG='{"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222"],
    >>> #             "ps": ["p0:2222"]}, "task": {"type": "worker", "index": 0}}'
    >>> config = tf.estimator.RunConfig(model_dir="/tmp/model")
    >>> config.is_chief, config.master, config.num_worker_replicas
    (False, 'grpc://w0:2222', 2)
"""
from __future__ import annotations

import copy
from typing import Any

from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.tf_config import load_tf_config, parse_tf_config

__all__ = ["RunConfig", "TaskType"]

_LOCAL_MASTER = ""
_GRPC_SCHEME = "grpc://"
_USE_DEFAULT = object()


class TaskType:
    """The task types TF_CONFIG uses."""

    MASTER = "master"
    PS = "ps"
    WORKER = "worker"
    CHIEF = "chief"
    EVALUATOR = "evaluator"


_REPLACEABLE = ("model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
                "save_checkpoints_secs", "session_config", "keep_checkpoint_max",
                "keep_checkpoint_every_n_hours", "log_step_count_steps", "train_distribute",
                "device_fn", "protocol", "eval_distribute", "experimental_distribute",
                "experimental_max_worker_delay_secs", "session_creation_timeout_secs")


class RunConfig:
    """Estimator run settings; the cluster fields come from TF_CONFIG.

    Args:
        model_dir: where checkpoints and summaries go.
        tf_random_seed: the graph-level random seed.
        save_summary_steps: write summaries every this many steps.
        save_checkpoints_steps: checkpoint every this many steps (exclusive with secs).
        save_checkpoints_secs: checkpoint every this many seconds (default 600).
        session_config: a ConfigProto for sessions.
        keep_checkpoint_max: how many recent checkpoints to keep.
        keep_checkpoint_every_n_hours: also keep one checkpoint per this many hours.
        log_step_count_steps: log the global step rate every this many steps.
        train_distribute, device_fn, protocol, eval_distribute, experimental_distribute,
        session_creation_timeout_secs: stored for callers that use them.
        experimental_max_worker_delay_secs: the most a worker waits before it starts
            (stored; tensorweave's workers start at once, see estimator/executor.py).

    Raises:
        ValueError: both checkpoint intervals given; TF_CONFIG with a cluster
            but no task; a task that is not in the cluster; more than one chief;
            or, without a cluster, a task other than worker 0.

    Example:
        >>> RunConfig().master   # no TF_CONFIG: a local run
        ''
    """

    def __init__(self, model_dir: str | None = None, tf_random_seed: int | None = None,
                 save_summary_steps: int = 100, save_checkpoints_steps: Any = _USE_DEFAULT,
                 save_checkpoints_secs: Any = _USE_DEFAULT, session_config: Any = None,
                 keep_checkpoint_max: int = 5, keep_checkpoint_every_n_hours: float = 10000,
                 log_step_count_steps: int = 100, train_distribute: Any = None,
                 device_fn: Any = None, protocol: str | None = None,
                 eval_distribute: Any = None, experimental_distribute: Any = None,
                 experimental_max_worker_delay_secs: int | None = None,
                 session_creation_timeout_secs: float = 7200) -> None:
        steps_given = save_checkpoints_steps not in (_USE_DEFAULT, None)
        secs_given = save_checkpoints_secs not in (_USE_DEFAULT, None)
        if steps_given and secs_given:
            raise ValueError(f"Can not provide both save_checkpoints_steps "
                             f"({save_checkpoints_steps}) and save_checkpoints_secs "
                             f"({save_checkpoints_secs}); set one of them to None.")
        if save_checkpoints_steps is _USE_DEFAULT:
            save_checkpoints_steps = None
        if save_checkpoints_secs is _USE_DEFAULT:
            save_checkpoints_secs = None if steps_given else 600
        self._model_dir = model_dir
        self._tf_random_seed = tf_random_seed
        self._save_summary_steps = save_summary_steps
        self._save_checkpoints_steps = save_checkpoints_steps
        self._save_checkpoints_secs = save_checkpoints_secs
        self._session_config = session_config
        self._keep_checkpoint_max = keep_checkpoint_max
        self._keep_checkpoint_every_n_hours = keep_checkpoint_every_n_hours
        self._log_step_count_steps = log_step_count_steps
        self._train_distribute = train_distribute
        self._device_fn = device_fn
        self._protocol = protocol
        self._eval_distribute = eval_distribute
        self._experimental_distribute = experimental_distribute
        self._experimental_max_worker_delay_secs = experimental_max_worker_delay_secs
        self._session_creation_timeout_secs = session_creation_timeout_secs
        self._init_cluster_from_tf_config()

    # ---- TF_CONFIG ---------------------------------------------------------------------
    def _init_cluster_from_tf_config(self) -> None:
        raw = load_tf_config()
        parsed = parse_tf_config(raw)
        self._cluster_spec = parsed.cluster_spec
        self._environment = raw.get("environment", "local")
        self._evaluation_master = raw.get("eval_session_master", _LOCAL_MASTER)
        if not self._cluster_spec:
            self._init_local(raw, parsed.task_type, parsed.task_index)
            return
        if parsed.task_type is None:
            raise ValueError(f"TF_CONFIG has a cluster (jobs {self._cluster_spec.jobs}) but "
                             "no task; set \"task\": {\"type\": ..., \"index\": ...}.")
        self._task_type, self._task_id = parsed.task_type, parsed.task_index
        assert self._task_id is not None  # a task with a type has an index (default 0)
        chief = _chief_job(self._cluster_spec)
        if self._task_type == TaskType.EVALUATOR:
            # The evaluator is not part of the training cluster.
            self._cluster_spec = ClusterSpec({})
            self._master = _LOCAL_MASTER
            self._num_ps_replicas = self._num_worker_replicas = 0
            self._global_id_in_cluster = None
            self._is_chief = False
            return
        self._master = raw.get("session_master") or _session_master(
            self._cluster_spec, self._task_type, self._task_id)
        self._num_ps_replicas = _num_tasks(self._cluster_spec, TaskType.PS)
        self._num_worker_replicas = _num_tasks(self._cluster_spec, TaskType.WORKER) + \
            (_num_tasks(self._cluster_spec, chief) if chief else 0)
        self._global_id_in_cluster = _global_id(self._cluster_spec, self._task_type,
                                                self._task_id, chief)
        if chief is not None:
            self._is_chief = self._task_type == chief
        else:  # no chief job: worker 0 is the chief (the ps + worker layout)
            self._is_chief = self._task_type == TaskType.WORKER and self._task_id == 0

    def _init_local(self, raw: dict[str, Any], task_type: str | None,
                    task_id: int | None) -> None:
        self._task_type = task_type or TaskType.WORKER
        self._task_id = task_id or 0
        if self._task_type != TaskType.WORKER or self._task_id != 0:
            raise ValueError(f"TF_CONFIG has no \"cluster\", so its task must be worker 0, "
                             f"got {self._task_type!r} {self._task_id}. Add the cluster or "
                             "drop the task.")
        self._master = raw.get("session_master", _LOCAL_MASTER)
        self._is_chief = True
        self._num_ps_replicas = 0
        self._num_worker_replicas = 1
        self._global_id_in_cluster = 0

    # ---- cluster properties ------------------------------------------------------------
    cluster_spec = property(lambda self: self._cluster_spec,
                            doc="The training cluster (empty for a local run or an evaluator).")
    task_type = property(lambda self: self._task_type, doc="This task's job name.")
    task_id = property(lambda self: self._task_id, doc="This task's index in its job.")
    is_chief = property(lambda self: self._is_chief,
                        doc="Whether this task is the chief (chief job, else worker 0).")
    master = property(lambda self: self._master,
                      doc="This task's session target, \"grpc://host:port\", or \"\" (local).")
    evaluation_master = property(lambda self: self._evaluation_master)
    num_ps_replicas = property(lambda self: self._num_ps_replicas)
    num_worker_replicas = property(lambda self: self._num_worker_replicas,
                                   doc="Workers plus the chief (as TF counts).")
    global_id_in_cluster = property(lambda self: self._global_id_in_cluster,
                                    doc="0 for the chief; other jobs sorted by name; ps last.")
    task_env = property(lambda self: self._environment)

    # ---- run settings ------------------------------------------------------------------
    model_dir = property(lambda self: self._model_dir)
    tf_random_seed = property(lambda self: self._tf_random_seed)
    save_summary_steps = property(lambda self: self._save_summary_steps)
    save_checkpoints_steps = property(lambda self: self._save_checkpoints_steps)
    save_checkpoints_secs = property(lambda self: self._save_checkpoints_secs)
    session_config = property(lambda self: self._session_config)
    keep_checkpoint_max = property(lambda self: self._keep_checkpoint_max)
    keep_checkpoint_every_n_hours = property(lambda self: self._keep_checkpoint_every_n_hours)
    log_step_count_steps = property(lambda self: self._log_step_count_steps)
    train_distribute = property(lambda self: self._train_distribute)
    device_fn = property(lambda self: self._device_fn)
    protocol = property(lambda self: self._protocol)
    eval_distribute = property(lambda self: self._eval_distribute)
    experimental_distribute = property(lambda self: self._experimental_distribute)
    experimental_max_worker_delay_secs = property(
        lambda self: self._experimental_max_worker_delay_secs)
    session_creation_timeout_secs = property(lambda self: self._session_creation_timeout_secs)

    def replace(self, **kwargs: Any) -> "RunConfig":
        """A copy with some run settings changed (cluster fields cannot be replaced).

        Raises:
            ValueError: a name that is not a replaceable setting, or both
                checkpoint intervals set.

        Example:
            >>> config = RunConfig().replace(save_checkpoints_steps=100,
            ...                              save_checkpoints_secs=None)
        """
        bad = sorted(set(kwargs) - set(_REPLACEABLE))
        if bad:
            raise ValueError(f"RunConfig.replace() cannot change {bad}; replaceable settings "
                             f"are {list(_REPLACEABLE)}.")
        new = copy.copy(self)
        for k, v in kwargs.items():
            setattr(new, "_" + k, v)
        if new._save_checkpoints_steps is not None and new._save_checkpoints_secs is not None:
            raise ValueError("Can not provide both save_checkpoints_steps and "
                             "save_checkpoints_secs; set one of them to None.")
        return new

    def __repr__(self) -> str:
        return (f"RunConfig(task_type={self._task_type!r}, task_id={self._task_id}, "
                f"is_chief={self._is_chief}, master={self._master!r}, "
                f"num_ps_replicas={self._num_ps_replicas}, "
                f"num_worker_replicas={self._num_worker_replicas}, "
                f"model_dir={self._model_dir!r})")


def _chief_job(cluster: ClusterSpec) -> str | None:
    for job in (TaskType.CHIEF, TaskType.MASTER):
        if job in cluster.jobs:
            if cluster.num_tasks(job) > 1:
                raise ValueError(f"The \"cluster\" in TF_CONFIG must have only one {job!r} "
                                 f"task, got {cluster.num_tasks(job)}.")
            return job
    return None


def _num_tasks(cluster: ClusterSpec, job: str) -> int:
    return cluster.num_tasks(job) if job in cluster.jobs else 0


def _session_master(cluster: ClusterSpec, task_type: str, task_id: int) -> str:
    jobs = cluster.jobs
    if len(jobs) == 1 and cluster.num_tasks(jobs[0]) == 1:
        return _LOCAL_MASTER  # a one-task cluster runs in-process
    return _GRPC_SCHEME + cluster.task_address(task_type, task_id)


def _global_id(cluster: ClusterSpec, task_type: str, task_id: int,
               chief: str | None) -> int:
    """0 for the chief, then the other jobs by name (task order), ps tasks last."""
    order = [chief] if chief else []
    order += [j for j in sorted(cluster.jobs) if j not in (chief, TaskType.PS)]
    if TaskType.PS in cluster.jobs:
        order.append(TaskType.PS)
    next_id = 0
    for job in order:
        if job == task_type:
            return next_id + task_id
        next_id += len(cluster.job_tasks(job))
    raise ValueError(f"Task type {task_type!r} is not a job of the cluster {cluster.jobs}.")

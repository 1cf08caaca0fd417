"""How the Estimator sets up its sessions: device placement, session config,
the default saver and the training hooks.

These follow TF 1.x's Estimator: in a cluster the training graph is placed by
`tf.train.replica_device_setter` over the config's ps tasks, and each task's
sessions see only the ps tasks and itself (device filters).
"""
from __future__ import annotations

from typing import Any

from tensorweave.distributed.run_config import RunConfig, TaskType
from tensorweave.estimator.model_fn import EstimatorSpec
from tensorweave.framework.device import DeviceSpec
from tensorweave.framework.graph_defaults import GraphKeys, add_to_collection, get_collection
from tensorweave.framework.proto.config_pb2 import ConfigProto
from tensorweave.train import basic_session_run_hooks as hooks_lib
from tensorweave.train import saver as saver_lib
from tensorweave.train.device_setter import replica_device_setter

__all__ = ["device_fn", "session_config", "ensure_saver", "training_hooks"]


def device_fn(config: RunConfig) -> Any:
    """Where training ops go: the config's device_fn, else a replica device setter
    over the ps tasks when the cluster has some (as TF's Estimator), else None."""
    if config.device_fn is not None:
        return config.device_fn
    if config.num_ps_replicas > 0:
        worker = DeviceSpec(job=config.task_type, task=config.task_id).to_string()
        return replica_device_setter(ps_tasks=config.num_ps_replicas, worker_device=worker,
                                     merge_devices=True, cluster=config.cluster_spec)
    return None


def session_config(config: RunConfig) -> Any:
    """The config's session_config; in a cluster, by default one whose device filters
    let this task see only the ps tasks and itself (as TF 1.x)."""
    if config.session_config is not None or not config.cluster_spec:
        return config.session_config
    if config.task_type not in (TaskType.CHIEF, TaskType.MASTER, TaskType.WORKER):
        return None
    own = DeviceSpec(job=config.task_type, task=config.task_id).to_string()
    return ConfigProto(allow_soft_placement=True, device_filters=["/job:ps", own])


def ensure_saver(spec: EstimatorSpec, config: RunConfig) -> None:
    """Gives the graph TF's default Estimator saver (sharded, keep_checkpoint_max)
    unless the scaffold or the SAVERS collection already has one."""
    if spec.scaffold.saver is not None or get_collection(GraphKeys.SAVERS):
        return
    saver = saver_lib.Saver(sharded=True, max_to_keep=config.keep_checkpoint_max,
                            keep_checkpoint_every_n_hours=config.keep_checkpoint_every_n_hours,
                            save_relative_paths=True)
    add_to_collection(GraphKeys.SAVERS, saver)


def training_hooks(spec: EstimatorSpec, config: RunConfig, global_step: Any,
                   hooks: list[Any], saving_listeners: list[Any]
                   ) -> tuple[list[Any], list[Any]]:
    """(every task's hooks, the chief's hooks) of a training run, as TF 1.x's Estimator
    adds them: NaN check and loss logging everywhere; checkpoints on the chief.

    Raises:
        ValueError: saving_listeners but a RunConfig that saves no checkpoints.
    """
    worker_hooks = list(hooks) + list(spec.training_hooks)
    worker_hooks.append(hooks_lib.NanTensorHook(spec.loss))
    if config.log_step_count_steps:
        worker_hooks.append(hooks_lib.LoggingTensorHook(
            {"loss": spec.loss, "step": global_step},
            every_n_iter=config.log_step_count_steps))
    chief_hooks = list(spec.training_chief_hooks)
    # As TF: a CheckpointSaverHook of the model_fn's or the caller's (DeepRec's
    # incremental one, say) replaces the RunConfig's, and gets the saving listeners.
    savers = [h for h in worker_hooks + chief_hooks
              if isinstance(h, hooks_lib.CheckpointSaverHook)]
    if not savers and (config.save_checkpoints_secs or config.save_checkpoints_steps):
        savers = [hooks_lib.CheckpointSaverHook(
            config.model_dir, save_secs=config.save_checkpoints_secs,
            save_steps=config.save_checkpoints_steps, scaffold=spec.scaffold)]
        chief_hooks.append(savers[0])
    if saving_listeners:
        if not savers:
            raise ValueError("There should be a CheckpointSaverHook to use saving_listeners: "
                             "set RunConfig save_checkpoints_steps or save_checkpoints_secs.")
        savers[0].add_listeners(saving_listeners)
    return worker_hooks, chief_hooks

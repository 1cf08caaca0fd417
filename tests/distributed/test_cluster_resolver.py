"""TFConfigClusterResolver, SimpleClusterResolver and RunConfig from TF_CONFIG."""
from __future__ import annotations

import json

import pytest

from tensorweave.distribute.cluster_resolver import (
    ClusterResolver, SimpleClusterResolver, TFConfigClusterResolver)
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.estimator import RunConfig

# Kubeflow TFJob with a chief.
KUBEFLOW = {"cluster": {"chief": ["job-chief-0.ns.svc:2222"],
                        "worker": ["job-worker-0.ns.svc:2222", "job-worker-1.ns.svc:2222"],
                        "ps": ["job-ps-0.ns.svc:2222", "job-ps-1.ns.svc:2222"]},
            "task": {"type": "worker", "index": 1}, "environment": "cloud"}
# SageMaker / Vertex style: ps + workers, no chief, task index as a string, rpc layer.
SAGEMAKER = {"cluster": {"master": ["algo-1:2222"], "worker": ["algo-2:2222"],
                         "ps": ["algo-1:2223", "algo-2:2223"]},
             "task": {"type": "master", "index": 0}}
VERTEX = {"cluster": {"worker": ["w0:2222", "w1:2222", "w2:2222"], "ps": ["p0:2222"]},
          "task": {"type": "worker", "index": "2"}, "rpc_layer": "grpc",
          "environment": "cloud"}


def _set(monkeypatch, config):
    monkeypatch.setenv("TF_CONFIG", json.dumps(config) if config is not None else "")


def test_resolver_kubeflow(monkeypatch):
    _set(monkeypatch, KUBEFLOW)
    r = TFConfigClusterResolver()
    assert isinstance(r, ClusterResolver)
    assert r.cluster_spec() == ClusterSpec(KUBEFLOW["cluster"])
    assert (r.task_type, r.task_id, r.rpc_layer, r.environment) == ("worker", 1, None, "cloud")
    assert r.master() == "job-worker-1.ns.svc:2222"   # as TF: no rpc_layer, no scheme
    assert r.master("ps", 0, rpc_layer="grpc") == "grpc://job-ps-0.ns.svc:2222"
    assert r.master("chief", 0, rpc_layer="grpc+verbs") == "grpc+verbs://job-chief-0.ns.svc:2222"
    assert r.num_accelerators() == {}


def test_resolver_overrides_and_rereads_environment(monkeypatch):
    _set(monkeypatch, VERTEX)
    r = TFConfigClusterResolver(task_type="ps", task_id=0, environment="google")
    assert (r.task_type, r.task_id, r.environment) == ("ps", 0, "google")
    assert r.master() == "grpc://p0:2222"
    r.task_type, r.task_id = None, None
    assert (r.task_type, r.task_id, r.rpc_layer) == ("worker", 2, "grpc")
    _set(monkeypatch, KUBEFLOW)          # read again on each call, as TF does
    assert r.task_id == 1


def test_resolver_without_tf_config(monkeypatch):
    _set(monkeypatch, None)
    r = TFConfigClusterResolver()
    assert r.cluster_spec() == ClusterSpec({})
    assert (r.task_type, r.task_id, r.master()) == (None, None, "")


def test_resolver_bad_task_names_it(monkeypatch):
    _set(monkeypatch, {"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker", "index": 3}})
    with pytest.raises(ValueError, match="task index 3"):
        TFConfigClusterResolver().master()


def test_simple_cluster_resolver():
    spec = ClusterSpec({"worker": ["w0:2222", "w1:2222"]})
    r = SimpleClusterResolver(spec, master="grpc://w0:2222", task_type="worker", task_id=1,
                              num_accelerators={"GPU": 0})
    assert r.cluster_spec() is spec
    assert r.master() == "grpc://w0:2222"
    assert r.master("worker", 1) == "w1:2222"                  # TF: no rpc_layer, no scheme
    assert r.master("worker", 1, rpc_layer="grpc") == "grpc://w1:2222"
    assert (r.task_type, r.task_id, r.environment) == ("worker", 1, "")
    assert r.num_accelerators() == {"GPU": 0}


def test_run_config_local(monkeypatch):
    _set(monkeypatch, None)
    c = RunConfig(model_dir="/tmp/m")
    assert (c.task_type, c.task_id, c.is_chief, c.master) == ("worker", 0, True, "")
    assert (c.num_ps_replicas, c.num_worker_replicas, c.global_id_in_cluster) == (0, 1, 0)
    assert c.cluster_spec == ClusterSpec({}) and c.evaluation_master == ""
    assert c.model_dir == "/tmp/m" and c.save_checkpoints_secs == 600


def test_run_config_kubeflow_with_chief(monkeypatch):
    _set(monkeypatch, KUBEFLOW)
    c = RunConfig()
    assert (c.task_type, c.task_id, c.is_chief) == ("worker", 1, False)
    assert c.master == "grpc://job-worker-1.ns.svc:2222"
    assert (c.num_ps_replicas, c.num_worker_replicas) == (2, 3)   # chief counts as a worker
    assert c.global_id_in_cluster == 2                              # chief 0, worker 1, 2
    _set(monkeypatch, {**KUBEFLOW, "task": {"type": "chief", "index": 0}})
    chief = RunConfig()
    assert chief.is_chief and chief.global_id_in_cluster == 0
    _set(monkeypatch, {**KUBEFLOW, "task": {"type": "ps", "index": 1}})
    assert RunConfig().global_id_in_cluster == 4                    # ps come last


def test_run_config_without_chief_job_worker0_is_chief(monkeypatch):
    _set(monkeypatch, {**VERTEX, "task": {"type": "worker", "index": 0}})
    c = RunConfig()
    assert c.is_chief and c.master == "grpc://w0:2222"
    assert (c.num_ps_replicas, c.num_worker_replicas, c.global_id_in_cluster) == (1, 3, 0)
    _set(monkeypatch, VERTEX)
    c2 = RunConfig()
    assert not c2.is_chief and c2.task_id == 2 and c2.global_id_in_cluster == 2


def test_run_config_legacy_master_job(monkeypatch):
    _set(monkeypatch, SAGEMAKER)
    c = RunConfig()
    assert c.is_chief and c.master == "grpc://algo-1:2222"
    assert (c.num_ps_replicas, c.num_worker_replicas) == (2, 2)


def test_run_config_evaluator_and_session_masters(monkeypatch):
    _set(monkeypatch, {**KUBEFLOW, "task": {"type": "evaluator", "index": 0},
                       "eval_session_master": "grpc://eval:1"})
    c = RunConfig()
    assert (c.is_chief, c.master, c.num_ps_replicas, c.num_worker_replicas) == \
        (False, "", 0, 0)
    assert c.global_id_in_cluster is None and c.cluster_spec == ClusterSpec({})
    assert c.evaluation_master == "grpc://eval:1"
    _set(monkeypatch, {"cluster": {"worker": ["w0:1"]}, "task": {"type": "worker"}})
    assert RunConfig().master == ""          # a one-task cluster runs in-process
    _set(monkeypatch, {**KUBEFLOW, "session_master": "grpc://elsewhere:1"})
    assert RunConfig().master == "grpc://elsewhere:1"


def test_run_config_errors(monkeypatch):
    _set(monkeypatch, {"cluster": KUBEFLOW["cluster"]})
    with pytest.raises(ValueError, match="no task"):
        RunConfig()
    _set(monkeypatch, {"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief"}})
    with pytest.raises(ValueError, match="only one 'chief'"):
        RunConfig()
    _set(monkeypatch, {"task": {"type": "ps", "index": 0}})
    with pytest.raises(ValueError, match="worker 0"):
        RunConfig()
    _set(monkeypatch, None)
    with pytest.raises(ValueError, match="both"):
        RunConfig(save_checkpoints_steps=10, save_checkpoints_secs=5)
    c = RunConfig(save_checkpoints_steps=10)
    assert c.save_checkpoints_secs is None
    c2 = c.replace(save_checkpoints_steps=None, save_checkpoints_secs=60, model_dir="/x")
    assert (c2.save_checkpoints_secs, c2.model_dir, c.model_dir) == (60, "/x", None)
    with pytest.raises(ValueError, match="master"):
        c.replace(master="grpc://x:1")

"""Issue 33's standby tasks: `tensorweave launch --ps-standby N` and `tensorweave manifest
--kind plain --ps-standby N` add a "ps_standby" job of bare servers that hold the ps
tasks' replicas, turn replication on in every task, and tell ps tasks whose ClusterSpec
comes from the seed flags where the standby tasks are (TENSORWEAVE_PS_STANDBY). The
launcher's whole job with a ps killed (its standby task's command, the standby stopped
after the ps) is in test_launch_restart.py; the manifests' run in
test_kubernetes_manifest_jobs_run.py."""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.base import knobs
from tensorweave.distributed import replica
from tensorweave.distributed.topology import BARE_SERVER_ARGS, PS_STANDBY, Task, Topology
from tensorweave.launch.manifest import ManifestOptions, build_manifests
from tensorweave.launch.restart import parse_restart

PS0 = "/job:ps/replica:0/task:0"


def test_the_local_topology_has_a_standby_job_after_the_ps():
    topology = Topology.local(ps=2, workers=1, ps_standby=2)
    assert list(topology.cluster) == ["ps", PS_STANDBY, "worker"]
    assert len(topology.cluster[PS_STANDBY]) == 2
    assert not Task(PS_STANDBY, 0).is_training
    with pytest.raises(ValueError, match="no ps task"):
        Topology.local(ps=0, workers=1, ps_standby=1)
    with pytest.raises(ValueError, match="--ps-standby -1"):
        Topology.local(ps=1, workers=1, ps_standby=-1)


def test_every_task_of_a_cluster_with_standby_tasks_replicates_and_knows_them():
    """What the launcher and the manifests put in each task's environment."""
    topology = Topology.local(ps=1, workers=2, ps_standby=1)
    env = topology.standby_env()
    assert knobs.PS_REPLICATION.get(env) is True
    assert knobs.PS_STANDBY.get(env) == tuple(topology.cluster[PS_STANDBY])
    assert Topology.local(ps=1, workers=1).standby_env() == {}
    assert parse_restart("ps_standby=on-failure") == {PS_STANDBY: "on-failure"}


def test_a_ps_whose_clusterspec_has_no_standby_job_finds_the_standby_by_the_knob(
        monkeypatch):
    flags_spec = tf.train.ClusterSpec({"ps": ["h1:1"], "worker": ["h2:1", "h3:1"]})
    monkeypatch.setenv(knobs.PS_STANDBY.name, "h4:1,h5:1")
    standby = replica.standby_tasks(flags_spec)
    assert standby == {"/job:ps_standby/replica:0/task:0": "h4:1",
                       "/job:ps_standby/replica:0/task:1": "h5:1"}
    cluster = replica.with_standby(flags_spec, standby)
    assert replica.holder_of(cluster, PS0) == "/job:ps_standby/replica:0/task:0"
    assert cluster.job_tasks("worker") == ["h2:1", "h3:1"]
    # a ClusterSpec that names its own standby job keeps it; the knob is not read
    own = tf.train.ClusterSpec({"ps": ["h1:1"], PS_STANDBY: ["h9:1"], "worker": ["h2:1"]})
    assert replica.standby_tasks(own) == {}
    monkeypatch.delenv(knobs.PS_STANDBY.name)
    assert replica.with_standby(flags_spec, replica.standby_tasks(flags_spec)) is flags_spec


def test_plain_manifests_name_the_standby_in_dns_form_and_a_tfjob_refuses_it():
    opts = ManifestOptions(1, 1, "img", ["python", "/app/t.py"], kind="plain", ps_standby=1)
    jobs = [d for d in build_manifests(opts) if d["kind"] == "Job"]
    (standby,) = [j for j in jobs if "standby" in j["metadata"]["name"]]
    assert standby["metadata"]["name"] == "tensorweave-ps-standby-0"  # no "_" in DNS
    (container,) = standby["spec"]["template"]["spec"]["containers"]
    assert container["command"] + container["args"] == ["python", *BARE_SERVER_ARGS]
    for job in jobs:
        (c,) = job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in c["env"]}
        assert env[knobs.PS_REPLICATION.name] == "1"
        assert env[knobs.PS_STANDBY.name].startswith("tensorweave-ps-standby-0.")
    with pytest.raises(ValueError, match="needs --kind plain"):
        build_manifests(ManifestOptions(1, 1, "img", ["python", "t.py"], ps_standby=1))
    with pytest.raises(ValueError, match="needs --ps >= 1"):
        build_manifests(ManifestOptions(0, 1, "img", ["python", "t.py"], kind="plain",
                                        ps_standby=1))

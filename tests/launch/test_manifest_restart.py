"""`tensorweave manifest --restart/--max-restarts`: the restart policies of
`tensorweave launch --restart` carried into a Kubeflow TFJob (restartPolicy per
replica type, runPolicy.backoffLimit) and into the plain Jobs (pod restartPolicy,
backoffLimit). Read back by parsing the YAML."""
from __future__ import annotations

import pytest
import yaml

from tensorweave.launch.cli import main
from tensorweave.launch.manifest import ManifestOptions, build_manifests

COMMAND = ["python", "/app/trainer.py"]


def _manifest(tmp_path, *args: str) -> list[dict]:
    out = tmp_path / "m.yaml"
    assert main(["manifest", "--image", "me/train:1", "--out", str(out), "--insecure", *args,
                 "--", *COMMAND]) == 0
    return [d for d in yaml.safe_load_all(out.read_text()) if d is not None]


def _jobs(docs: list[dict]) -> dict[str, dict]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "Job"}


def test_tfjob_restart_policy_per_replica_type(tmp_path):
    (job,) = _manifest(tmp_path, "--chief", "--ps", "2", "--workers", "3", "--restart",
                       "ps=always,worker=on-failure", "--max-restarts", "4")
    specs = job["spec"]["tfReplicaSpecs"]
    assert {role: s["restartPolicy"] for role, s in specs.items()} == {
        "PS": "Always", "Chief": "Never", "Worker": "OnFailure"}
    # The operator counts the whole job's restarts: 4 for each of the 5 tasks that restart.
    assert job["spec"]["runPolicy"] == {"cleanPodPolicy": "Running", "backoffLimit": 20}


def test_plain_jobs_restart_policy_and_backoff_limit(tmp_path):
    docs = _manifest(tmp_path, "--kind", "plain", "--evaluator", "--restart",
                     "on-failure,ps=always,evaluator=never", "--max-restarts", "2")
    jobs = _jobs(docs)
    policies = {name: (j["spec"]["template"]["spec"]["restartPolicy"], j["spec"]["backoffLimit"])
                for name, j in jobs.items()}
    assert policies == {
        # A Job's pod cannot be Always: the ps is restarted in place on any failure.
        "tensorweave-ps-0": ("OnFailure", 2),
        "tensorweave-worker-0": ("OnFailure", 2), "tensorweave-worker-1": ("OnFailure", 2),
        # Never: backoffLimit 0, or the Job would replace the failed pod anyway.
        "tensorweave-evaluator-0": ("Never", 0)}


def test_defaults_unchanged_without_restart_and_max_restarts_alone(tmp_path):
    docs = _manifest(tmp_path, "--kind", "both")
    tfjob = docs[0]
    assert tfjob["spec"]["runPolicy"] == {"cleanPodPolicy": "Running"}
    assert {s["restartPolicy"] for s in tfjob["spec"]["tfReplicaSpecs"].values()} == \
        {"OnFailure"}
    assert {j["spec"]["backoffLimit"] for j in _jobs(docs).values()} == {6}
    docs = _manifest(tmp_path, "--kind", "both", "--max-restarts", "1")
    assert docs[0]["spec"]["runPolicy"]["backoffLimit"] == 3  # 1 ps + 2 workers
    assert {j["spec"]["backoffLimit"] for j in _jobs(docs).values()} == {1}
    # --restart alone: launch's default of 3 restarts per task.
    docs = _manifest(tmp_path, "--kind", "plain", "--restart", "worker=on-failure")
    assert {n: j["spec"]["backoffLimit"] for n, j in _jobs(docs).items()} == {
        "tensorweave-ps-0": 0, "tensorweave-worker-0": 3, "tensorweave-worker-1": 3}


def test_bad_restart_options_are_named(tmp_path, capsys):
    assert main(["manifest", "--image", "i", "--restart", "on-failure", "--restart-policy",
                 "Never", "--", *COMMAND]) == 2
    assert "give --restart (per role) or --restart-policy" in capsys.readouterr().err
    assert main(["manifest", "--image", "i", "--restart", "chief=always", "--",
                 *COMMAND]) == 2
    assert "names chief, which this cluster does not have" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["manifest", "--image", "i", "--restart", "ps=maybe", "--", *COMMAND])
    assert "'maybe' is not a restart policy" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--max-restarts -2 must be 0 or more"):
        build_manifests(ManifestOptions(1, 1, "i", COMMAND, max_restarts=-2))

"""`tensorweave manifest`: Kubeflow TFJob and plain Services + per-task Jobs."""
from __future__ import annotations

import json

import pytest
import yaml

from tensorweave.launch.cli import main
from tensorweave.launch.manifest import ManifestOptions, build_manifests, dns_address

COMMAND = ["python", "/app/trainer.py", "--train_steps=300"]


def _manifest(tmp_path, *args: str) -> list[dict]:
    """The documents, without credentials (test_security_launch.py checks those)."""
    out = tmp_path / "m.yaml"
    assert main(["manifest", "--image", "me/train:1", "--out", str(out), "--insecure", *args,
                 "--", *COMMAND]) == 0
    return [d for d in yaml.safe_load_all(out.read_text()) if d is not None]


def _container(template: dict) -> dict:
    (container,) = template["spec"]["containers"]
    return container


def test_tfjob(tmp_path):
    (job,) = _manifest(tmp_path, "--ps", "2", "--workers", "3", "--chief", "--name", "mnist",
                       "--namespace", "ml")
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v1", "TFJob")
    assert job["metadata"] == {"name": "mnist", "namespace": "ml"}
    specs = job["spec"]["tfReplicaSpecs"]
    assert {role: s["replicas"] for role, s in specs.items()} == {"PS": 2, "Chief": 1,
                                                                  "Worker": 3}
    for spec in specs.values():
        assert spec["restartPolicy"] == "OnFailure"
        c = _container(spec["template"])
        assert c["name"] == "tensorflow" and c["image"] == "me/train:1"
        assert c["command"] + c["args"] == COMMAND
        assert c["ports"] == [{"name": "tfjob-port", "containerPort": 2222}]
        # the operator sets TF_CONFIG; we only widen the listening address
        assert {e["name"] for e in c["env"]} == {"TENSORWEAVE_BIND_ALL"}


def test_plain_services_and_jobs_carry_tf_config(tmp_path):
    docs = _manifest(tmp_path, "--kind", "plain", "--ps", "1", "--workers", "2",
                     "--port", "3333", "--name", "mnist", "--namespace", "ml")
    services = [d for d in docs if d["kind"] == "Service"]
    jobs = [d for d in docs if d["kind"] == "Job"]
    assert [s["metadata"]["name"] for s in services] == ["mnist-ps", "mnist-worker"]
    for s in services:
        assert s["spec"]["clusterIP"] == "None"
        assert s["spec"]["ports"][0]["port"] == 3333
    expected = {"ps": ["mnist-ps-0.mnist-ps.ml.svc.cluster.local:3333"],
                "worker": [f"mnist-worker-{i}.mnist-worker.ml.svc.cluster.local:3333"
                           for i in range(2)]}
    seen = []
    for job in jobs:
        assert job["apiVersion"] == "batch/v1"
        pod = job["spec"]["template"]
        role = pod["metadata"]["labels"]["app.kubernetes.io/component"]
        service = next(s for s in services if s["metadata"]["name"] == f"mnist-{role}")
        # The pod is what its Service selects and the DNS name its hostname/subdomain give.
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        c = _container(pod)
        assert c["image"] == "me/train:1" and c["command"] + c["args"] == COMMAND
        tf_config = json.loads(next(e["value"] for e in c["env"] if e["name"] == "TF_CONFIG"))
        assert tf_config["cluster"] == expected
        task = tf_config["task"]
        host = expected[task["type"]][task["index"]].split(".")
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (host[0], host[1])
        assert job["metadata"]["name"] == host[0]
        seen.append((task["type"], task["index"]))
    assert sorted(seen) == [("ps", 0), ("worker", 0), ("worker", 1)]


def test_plain_pass_flags_and_both(tmp_path):
    docs = _manifest(tmp_path, "--kind", "plain", "--pass-flags", "--workers", "1")
    job = next(d for d in docs if d.get("kind") == "Job"
               and d["metadata"]["name"] == "tensorweave-worker-0")
    args = _container(job["spec"]["template"])["args"]
    assert args[2:] == [
        "--ps_hosts=tensorweave-ps-0.tensorweave-ps.default.svc.cluster.local:2222",
        "--worker_hosts=tensorweave-worker-0.tensorweave-worker.default.svc.cluster.local:2222",
        "--job_name=worker", "--task_index=0"]
    assert "&id" not in (tmp_path / "m.yaml").read_text()  # no YAML anchors for kubectl
    kinds = [d["kind"] for d in _manifest(tmp_path, "--kind", "both")]
    assert kinds == ["TFJob", "Service", "Service", "Job", "Job", "Job"]


@pytest.mark.parametrize("change, message", [
    ({"name": "Bad_Name"}, "--name 'Bad_Name'"),
    ({"workers": 0}, "--workers >= 1"),
    ({"port": 70000}, "--port 70000"),
    ({"pass_flags": True}, "--kind plain"),
    ({"command": []}, "after '--'"),
    ({"kind": "plain", "restart_policy": "Always"}, "OnFailure or Never"),
])
def test_bad_options_are_named(change, message):
    options = {"ps": 1, "workers": 2, "image": "img", "command": COMMAND, **change}
    with pytest.raises(ValueError, match=message):
        build_manifests(ManifestOptions(**options))


def test_stdout_output(capsys):
    assert main(["manifest", "--image", "img", "--", "python", "t.py"]) == 0
    secret, doc = yaml.safe_load_all(capsys.readouterr().out)
    assert (secret["kind"], doc["kind"]) == ("Secret", "TFJob")  # its token, then the job
    assert dns_address(ManifestOptions(1, 1, "img", ["x"], name="a"), "worker", 3) == \
        "a-worker-3.a-worker.default.svc.cluster.local:2222"


PROMETHEUS = {"prometheus.io/scrape": "true", "prometheus.io/port": "3333",
              "prometheus.io/path": "/metrics"}


def _pod_templates(docs: list[dict]) -> dict[str, dict]:
    """Role -> pod template, from the TFJob's replica specs and the plain Jobs."""
    templates = {}
    for doc in docs:
        if doc["kind"] == "TFJob":
            for spec in doc["spec"]["tfReplicaSpecs"].values():
                template = spec["template"]
                templates["tfjob-" + template["metadata"]["labels"][
                    "app.kubernetes.io/component"]] = template
        elif doc["kind"] == "Job":
            templates[doc["metadata"]["name"]] = doc["spec"]["template"]
    return templates


def test_task_pods_are_annotated_for_prometheus(tmp_path):
    """Issue 36: Prometheus' pod discovery finds every task that serves /metrics on its
    port, in both designs; the evaluator, which runs no server, is left out."""
    docs = _manifest(tmp_path, "--kind", "both", "--chief", "--evaluator", "--port", "3333")
    templates = _pod_templates(docs)
    assert set(templates) == {
        "tfjob-ps", "tfjob-chief", "tfjob-worker", "tfjob-evaluator", "tensorweave-ps-0",
        "tensorweave-chief-0", "tensorweave-worker-0", "tensorweave-worker-1",
        "tensorweave-evaluator-0"}
    for name, template in templates.items():
        annotations = template["metadata"].get("annotations")
        assert annotations == (None if "evaluator" in name else PROMETHEUS), name
        # The annotated port is the one the container serves.
        if annotations:
            assert _container(template)["ports"][0]["containerPort"] == 3333


def test_ps_standby_is_annotated_and_no_prometheus_turns_it_off(tmp_path):
    docs = _manifest(tmp_path, "--kind", "plain", "--ps-standby", "1", "--port", "3333")
    assert _pod_templates(docs)["tensorweave-ps-standby-0"]["metadata"][
        "annotations"] == PROMETHEUS
    for template in _pod_templates(_manifest(tmp_path, "--kind", "both",
                                             "--no-prometheus")).values():
        assert "annotations" not in template["metadata"]

"""Issue 15, "the README's Kubernetes example works as written" (now docs/kubernetes.md):
render its manifest (`tensorweave manifest ... -- python /app/trainer.py`), then run every task's
command line with the TF_CONFIG that task gets, and the job trains and every task exits 0.

What is substituted to run it on one machine, and why (nothing else is):
* addresses: each task's DNS name (`<name>-<role>-<i>...svc...:2222`) becomes its own
  `localhost:<free port>`, the same mapping in every task's TF_CONFIG. There is no
  cluster DNS here, and all tasks share one host, so they cannot all use port 2222;
* `/app/trainer.py` (the file inside the image) becomes this checkout's
  `examples/trainer.py`, and `python` this interpreter;
* TENSORWEAVE_BIND_ALL=1 (which the manifest sets because a pod's own DNS name may not
  resolve yet when its server binds) is dropped: tests listen on loopback only;
* the Secret volumes (the generated auth token) are what Kubernetes makes of them: a
  directory with a file per key of the Secret the manifest holds, at the path its
  mount names (under tmp_path, not /etc), so the tasks read the generated token.
For the TFJob, TF_CONFIG is what the Kubeflow training operator writes into each pod:
role names lower-cased, `<job>-<role>-<i>.<namespace>.svc:<tfjob-port>` addresses,
`{"type": role, "index": i}`. For `--kind plain` it is the TF_CONFIG the manifest holds.
The training flags appended to the README's command only make the run test-sized.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tensorweave.distributed.topology import free_ports
from tensorweave.launch.cli import main
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = REPO_ROOT
IN_IMAGE = "/app/trainer.py"


def _render(tmp_path: Path, *options: str) -> list[dict[str, Any]]:
    out = tmp_path / "job.yaml"
    flags = ["--train_steps=60", "--hidden=16", "--log_every=20",
             f"--checkpoint_dir={tmp_path / 'ckpt'}"]
    assert main(["manifest", "--ps", "1", "--workers", "2", "--image", "me/train:1",
                 "--out", str(out), *options, "--", "python", IN_IMAGE, *flags]) == 0
    return [d for d in yaml.safe_load_all(out.read_text()) if d]


def _operator_tf_configs(tfjob: dict[str, Any]) -> dict[tuple[str, int], tuple[dict, dict]]:
    """(role, index) -> (container, TF_CONFIG) as the training operator sets them."""
    name, namespace = tfjob["metadata"]["name"], tfjob["metadata"]["namespace"]
    cluster: dict[str, list[str]] = {}
    containers: dict[str, dict] = {}
    replicas: dict[str, int] = {}
    for rtype, spec in tfjob["spec"]["tfReplicaSpecs"].items():
        role = rtype.lower()
        (container,) = spec["template"]["spec"]["containers"]
        containers[role], replicas[role] = container, spec["replicas"]
        if role == "evaluator":  # the operator keeps it out of the training cluster
            continue
        port = next(p["containerPort"] for p in container["ports"]
                    if p["name"] == "tfjob-port")
        cluster[role] = [f"{name}-{role}-{i}.{namespace}.svc:{port}"
                         for i in range(spec["replicas"])]
    return {(role, i): (containers[role], {"cluster": cluster, "environment": "cloud",
                                           "task": {"type": role, "index": i}})
            for role, n in replicas.items() for i in range(n)}


def _plain_tf_configs(docs: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[dict, dict]]:
    tasks = {}
    for job in (d for d in docs if d["kind"] == "Job"):
        (container,) = job["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e["value"] for e in container["env"]}
        cfg = json.loads(env["TF_CONFIG"])
        tasks[(cfg["task"]["type"], cfg["task"]["index"])] = (container, cfg)
    return tasks


def _on_loopback(tasks: dict) -> dict:
    """The one substitution of addresses: every DNS name -> its own localhost port (in
    TF_CONFIG, and in the variables that name tasks, TENSORWEAVE_PS_STANDBY)."""
    cluster = next(iter(tasks.values()))[1]["cluster"]
    names = [a for addrs in cluster.values() for a in addrs]
    local = dict(zip(names, (f"localhost:{p}" for p in free_ports(len(names)))))
    out = {}
    for key, (container, cfg) in tasks.items():
        assert cfg["cluster"] == cluster  # every task sees the same cluster
        cfg = dict(cfg, cluster={r: [local[a] for a in addrs] for r, addrs in cluster.items()})
        env = [dict(e, value=",".join(local.get(a, a) for a in e["value"].split(",")))
               if e["name"] == "TENSORWEAVE_PS_STANDBY" else e for e in container["env"]]
        out[key] = (dict(container, env=env), cfg)
    return out


def _mount_secrets(docs: list[dict[str, Any]], tmp_path: Path) -> dict[str, str]:
    """Each Secret the manifests hold, written as Kubernetes mounts it (a file per key):
    {mount path in the pod: the directory here}. Every pod mounts the same ones."""
    secrets = {d["metadata"]["name"]: d["stringData"] for d in docs if d["kind"] == "Secret"}
    pod = (docs[-1]["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
           if docs[-1]["kind"] == "TFJob" else docs[-1]["spec"]["template"]["spec"])
    volumes = {v["name"]: v["secret"]["secretName"] for v in pod.get("volumes", [])}
    mounts = {}
    for mount in pod["containers"][0].get("volumeMounts", []):
        here = tmp_path / "secrets" / volumes[mount["name"]]
        here.mkdir(parents=True, exist_ok=True)
        for key, value in secrets[volumes[mount["name"]]].items():
            (here / key).write_text(value)
        mounts[mount["mountPath"]] = str(here)
    return mounts


def _run_tasks(tasks: dict, tmp_path: Path, mounts: dict[str, str] | None = None
               ) -> dict[tuple[str, int], tuple[int, str]]:
    procs = {}
    try:
        for (role, index), (container, cfg) in sorted(tasks.items()):
            argv = container["command"] + container.get("args", [])
            if role == "ps_standby":  # the bare server, from the image's python
                assert argv == ["python", "-m", "tensorweave", "server"], argv
                argv = [sys.executable, *argv[1:]]
            else:
                assert argv[:2] == ["python", IN_IMAGE], argv
                argv = [sys.executable, str(ROOT / "examples" / "trainer.py"), *argv[2:]]
            env = {e["name"]: e["value"] for e in container.get("env", [])}
            env.pop("TENSORWEAVE_BIND_ALL")  # loopback only in tests (see the docstring)
            env["TF_CONFIG"] = json.dumps(cfg)
            for name, value in env.items():  # paths into the Secrets' volumes
                for in_pod, here in (mounts or {}).items():
                    if value.startswith(in_pod + "/"):
                        env[name] = here + value[len(in_pod):]
            log = open(tmp_path / f"{role}-{index}.log", "w")  # noqa: SIM115
            procs[(role, index)] = (subprocess.Popen(
                argv, env={**os.environ, **env, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path,
                stdout=log, stderr=subprocess.STDOUT), log)
        deadline = time.monotonic() + 300  # a hang guard, not a timing assertion
        for p, _ in procs.values():
            p.wait(max(deadline - time.monotonic(), 1))
    finally:
        for p, log in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()
            log.close()
    return {key: (p.returncode, (tmp_path / f"{key[0]}-{key[1]}.log").read_text())
            for key, (p, _) in procs.items()}


def _check_trained(results: dict, standby: int = 0) -> None:
    report = "\n".join(f"--- {k}: exit {code}\n{out[-3000:]}" for k, (code, out) in
                       results.items())
    assert all(code == 0 for code, _ in results.values()), report
    assert set(results) == {("ps", 0), ("worker", 0), ("worker", 1),
                            *(("ps_standby", i) for i in range(standby))}
    assert "worker 0: test accuracy" in results[("worker", 0)][1], report
    assert "worker 1: done" in results[("worker", 1)][1], report


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_readme_tfjob_runs_with_the_operators_tf_config(tmp_path):
    docs = _render(tmp_path)  # the README's command: a TFJob by default, and its token
    assert [d["kind"] for d in docs] == ["Secret", "TFJob"]
    _check_trained(_run_tasks(_on_loopback(_operator_tf_configs(docs[-1])), tmp_path,
                              _mount_secrets(docs, tmp_path)))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_readme_plain_jobs_run_with_their_own_tf_config(tmp_path):
    docs = _render(tmp_path, "--kind", "plain")
    _check_trained(_run_tasks(_on_loopback(_plain_tf_configs(docs)), tmp_path,
                              _mount_secrets(docs, tmp_path)))


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_plain_jobs_with_a_ps_standby_run_and_replicate(tmp_path):
    """`--ps-standby 1`: a ps_standby Job runs `python -m tensorweave server`; every task
    replicates (TENSORWEAVE_PS_REPLICATION), the ps's replica goes to the standby task
    (none is refused or lost), and the standby exits 0 when the chief ends the job."""
    docs = _render(tmp_path, "--kind", "plain", "--ps-standby", "1")
    results = _run_tasks(_on_loopback(_plain_tf_configs(docs)), tmp_path,
                         _mount_secrets(docs, tmp_path))
    _check_trained(results, standby=1)
    assert "holding the replica of /job:ps/replica:0/task:0" in results[("ps_standby", 0)][1]
    assert "could not update its replica" not in results[("ps", 0)][1]

"""Credentials from the command line (issue 12): `tensorweave launch --tls/--auth-token`
makes throw-away credentials and runs a job with them; `tensorweave manifest
--tls-secret/--auth-secret` mounts Kubernetes Secrets into every pod; `tensorweave
certs` writes a CA, a certificate and a token; `tensorweave server` takes the files
as flags. Beyond TF 1.x, which has no authentication.

Secure by default (issue 32): with no flag, `launch` gives every task a generated
token and `manifest` writes a Secret with a generated token and mounts it in every
pod; `--insecure` opts out of both.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from tensorweave.distributed.transport import credentials as C
from tensorweave.launch.cli import main
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = REPO_ROOT

# Each task of the launched job: the ps serves; worker 0 runs a step on the ps with
# the credentials it was given, then is refused without them; worker 1 only checks
# that it got its own certificate.
TASK = r'''
import json, os, sys
import tensorweave as tf
from tensorweave.distributed.transport import credentials as C
config = json.loads(os.environ["TF_CONFIG"])
job, index = config["task"]["type"], config["task"]["index"]
cluster = tf.train.ClusterSpec(config["cluster"])
print("CREDENTIALS", job, index, os.environ.get(C.CERT_ENV), os.environ.get(C.TOKEN_FILE_ENV))
if job == "ps":
    tf.train.Server(cluster, job_name=job, task_index=index).join()
elif index == 0:
    import socket, time
    port = int(cluster.task_address("ps", 0).rsplit(":", 1)[1])
    for _ in range(300):  # the ps may still be starting
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(5.0)
    with tf.Session("grpc://" + cluster.task_address("ps", 0)) as sess:
        sess.run(v.initializer)
        print("TRUSTED", sess.run(v))
    C.set_default(C.NONE)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(1.0)
        try:
            with tf.Session("grpc://" + cluster.task_address("ps", 0)) as sess:
                sess.run(w.initializer)
            print("NOT REFUSED")
        except tf.errors.UnauthenticatedError as e:
            print("REFUSED", e.message)
'''


def _launch(tmp_path: Path, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TENSORWEAVE_TLS")
           and k != C.TOKEN_FILE_ENV}
    return subprocess.run([sys.executable, "-m", "tensorweave", "launch", *args],
                          capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT,
                          check=False)


@pytest.mark.slow
@pytest.mark.parametrize("flags", [[], ["--tls"], ["--auth-token"], ["--tls", "--auth-token"],
                                   ["--insecure"]])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_launch_gives_each_task_credentials_and_strangers_are_refused(tmp_path, flags):
    script = tmp_path / "task.py"
    script.write_text(TASK)
    r = _launch(tmp_path, "--ps", "1", "--workers", "2", "--ps-grace", "2", "--no-progress",
                *flags, "--", sys.executable, str(script))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker 0] TRUSTED 5.0" in r.stdout, r.stdout
    secure = "--insecure" not in flags
    refused = [line for line in r.stdout.splitlines() if "REFUSED" in line]
    if secure:
        assert refused and "NOT REFUSED" not in r.stdout, r.stdout
        assert "/job:ps/replica:0/task:0" in refused[0]
        assert ("requires TLS" if "--tls" in flags else "requires an auth token") in refused[0]
        assert "every task has a generated auth token" in r.stderr, r.stderr
    else:  # no token: a stranger of the same host runs graphs (its address is the cluster's)
        assert refused == ["[worker 0] NOT REFUSED"], r.stdout
        assert "generated auth token" not in r.stderr
    lines = [line.split()[-2:] for line in r.stdout.splitlines() if "CREDENTIALS" in line]
    assert len(lines) == 3
    certs = [cert for cert, _ in lines]
    if "--tls" in flags:
        assert len(set(certs)) == 3  # a certificate per task
    else:
        assert set(certs) == {"None"}
    if secure:  # a token for every task, whatever else: the same one
        assert len({token for _, token in lines}) == 1 and lines[0][1] != "None"
    else:
        assert {token for _, token in lines} == {"None"}
    # The throw-away files are gone once the run ended.
    assert not any(os.path.exists(p) for line in lines for p in line if p != "None")


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_launch_tls_runs_the_seed_trainer(tmp_path):
    r = _launch(tmp_path, "--ps", "1", "--workers", "2", "--pass-flags", "--tls",
                "--no-progress", "--", sys.executable, "examples/trainer.py",
                "--train_steps=60", "--hidden=16", f"--checkpoint_dir={tmp_path / 'ckpt'}",
                "--log_every=20")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[worker 0] worker 0: done" in r.stdout and "[worker 1] worker 1: done" in r.stdout
    assert "all tasks finished" in r.stderr


def _manifest(tmp_path: Path, *args: str) -> list[dict]:
    out = tmp_path / "m.yaml"
    assert main(["manifest", "--image", "me/train:1", "--out", str(out), *args,
                 "--", "python", "/app/trainer.py"]) == 0
    return [d for d in yaml.safe_load_all(out.read_text()) if d is not None]


def _pods(docs: list[dict]) -> list[dict]:
    pods = []
    for doc in docs:
        if doc["kind"] == "TFJob":
            pods += [s["template"]["spec"] for s in doc["spec"]["tfReplicaSpecs"].values()]
        elif doc["kind"] == "Job":
            pods.append(doc["spec"]["template"]["spec"])
    return pods


@pytest.mark.parametrize("kind", ["tfjob", "plain"])
def test_manifest_mounts_the_secrets_into_every_pod(tmp_path, kind):
    docs = _manifest(tmp_path, "--kind", kind, "--ps", "1", "--workers", "2", "--chief",
                     "--tls-secret", "tw-tls", "--auth-secret", "tw-token")
    pods = _pods(docs)
    assert len(pods) == (3 if kind == "tfjob" else 4)
    for pod in pods:
        secrets = {v["secret"]["secretName"]: v["name"] for v in pod["volumes"]}
        assert set(secrets) == {"tw-tls", "tw-token"}
        (container,) = pod["containers"]
        mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
        assert mounts[secrets["tw-tls"]] == "/etc/tensorweave/tls"
        assert mounts[secrets["tw-token"]] == "/etc/tensorweave/auth"
        assert all(m["readOnly"] for m in container["volumeMounts"])
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env[C.CA_ENV] == "/etc/tensorweave/tls/ca.crt"
        assert env[C.CERT_ENV] == "/etc/tensorweave/tls/tls.crt"
        assert env[C.KEY_ENV] == "/etc/tensorweave/tls/tls.key"
        assert env[C.SERVER_NAME_ENV] == C.CLUSTER_NAME
        assert env[C.TOKEN_FILE_ENV] == "/etc/tensorweave/auth/token"


def test_manifest_insecure_mounts_nothing(tmp_path):
    docs = _manifest(tmp_path, "--kind", "both", "--insecure")
    assert "Secret" not in {d["kind"] for d in docs}
    for pod in _pods(docs):
        assert "volumes" not in pod
        assert not {e["name"] for e in pod["containers"][0]["env"]} & {
            C.CA_ENV, C.TOKEN_FILE_ENV}


def test_certs_writes_a_ca_a_certificate_for_the_hosts_and_a_token(tmp_path):
    out = tmp_path / "certs"
    assert main(["certs", "--out", str(out), "--host", "ps-0.train", "--host",
                 "10.0.0.7"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["ca.crt", "tls.crt", "tls.key", "token"]
    assert all((p.stat().st_mode & 0o077) == 0 for p in out.iterdir())  # owner only
    cert = x509.load_pem_x509_certificate((out / "tls.crt").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    dns = names.get_values_for_type(x509.DNSName)
    assert {"ps-0.train", C.CLUSTER_NAME, "localhost"} <= set(dns)
    assert "10.0.0.7" in {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    creds = C.Credentials.from_files(str(out / "ca.crt"), str(out / "tls.crt"),
                                     str(out / "tls.key"), str(out / "token"))
    assert creds.tls and len(creds.token) == 64
    creds.server_context()
    creds.client_context()  # the key matches the certificate, the CA loads


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_server_flags_name_a_missing_file(tmp_path, capsys, monkeypatch):
    for name in (C.CA_ENV, C.CERT_ENV, C.KEY_ENV):  # main() sets them for this process:
        monkeypatch.setenv(name, "")  # so that monkeypatch restores them afterwards
    code = main(["server", "--job", "ps", "--task", "0", "--cluster",
                 '{"ps": ["localhost:1"]}', "--tls-ca", str(tmp_path / "nope.crt"),
                 "--tls-cert", str(tmp_path / "c"), "--tls-key", str(tmp_path / "k")])
    assert code == 2
    err = capsys.readouterr().err
    assert "nope.crt" in err and "TLS CA file" in err


def test_incomplete_tls_files_are_named():
    with pytest.raises(ValueError, match="TENSORWEAVE_TLS_CERT"):
        C.Credentials(ca=b"x")


@pytest.mark.parametrize("kind", ["tfjob", "plain", "both"])
def test_manifest_generates_a_token_secret_and_mounts_it_by_default(tmp_path, kind):
    docs = _manifest(tmp_path, "--kind", kind, "--name", "mnist", "--namespace", "ml")
    secrets = [d for d in docs if d["kind"] == "Secret"]
    assert len(secrets) == 1 and docs[0] is secrets[0]  # before the pods that mount it
    (secret,) = secrets
    assert secret["metadata"]["name"] == "mnist-auth"
    assert secret["metadata"]["namespace"] == "ml"
    token = secret["stringData"]["token"]
    assert len(token) == 64 and int(token, 16)  # 32 random bytes, hex
    text = (tmp_path / "m.yaml").read_text()
    assert "keep this file private" in text
    assert (tmp_path / "m.yaml").stat().st_mode & 0o077 == 0  # owner only: it holds a token
    for pod in _pods(docs):
        (volume,) = pod["volumes"]
        assert volume["secret"]["secretName"] == "mnist-auth"
        (container,) = pod["containers"]
        assert container["volumeMounts"] == [{"name": volume["name"],
                                              "mountPath": "/etc/tensorweave/auth",
                                              "readOnly": True}]
        env = {e["name"]: e["value"] for e in container["env"]}
        assert env[C.TOKEN_FILE_ENV] == "/etc/tensorweave/auth/token"
    again = _manifest(tmp_path, "--kind", kind, "--name", "mnist", "--namespace", "ml")
    assert again[0]["stringData"]["token"] != token  # generated anew each time


def test_manifest_auth_secret_replaces_the_generated_one(tmp_path):
    docs = _manifest(tmp_path, "--auth-secret", "tw-token")
    assert [d["kind"] for d in docs] == ["TFJob"]
    for pod in _pods(docs):
        assert [v["secret"]["secretName"] for v in pod["volumes"]] == ["tw-token"]


@pytest.mark.parametrize("command, message", [
    (["manifest", "--image", "i", "--insecure", "--auth-secret", "s"], "--auth-secret"),
    (["manifest", "--image", "i", "--insecure", "--tls-secret", "s"], "--tls-secret"),
    (["launch", "--insecure", "--tls"], "--tls"),
    (["launch", "--insecure", "--auth-token"], "--auth-token")])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_insecure_with_credentials_is_a_contradiction(command, message, capsys):
    assert main([*command, "--", "python", "t.py"]) == 2
    err = capsys.readouterr().err
    assert "--insecure" in err and message in err


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_launch_credentials_default_to_a_token():
    from tensorweave.launch.cli import build_parser
    from tensorweave.launch.credentials import launch_credentials
    from tensorweave.distributed.topology import Task

    creds = launch_credentials(build_parser().parse_args(["launch"]))
    assert creds is not None
    try:
        env = creds.env(Task("ps", 0))
        assert set(env) == {C.TOKEN_FILE_ENV}
        assert len(Path(env[C.TOKEN_FILE_ENV]).read_text()) == 64
    finally:
        creds.close()
    assert launch_credentials(build_parser().parse_args(["launch", "--insecure"])) is None

"""Authentication and TLS (issue 12): clusters that train with credentials on, and
clients without (or with wrong) credentials refused with a clear error while the
cluster keeps training. Real server processes on loopback.

TF 1.x has no authentication at all (any client that reaches a port runs graphs
there): everything here is beyond TF, opt-in through the TENSORWEAVE_TLS_* /
TENSORWEAVE_AUTH_TOKEN_FILE variables.
"""
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport.tcp import rpc
from tensorweave.launch.credentials import write_cluster_certificates
from tensorweave.testing.cluster import LocalCluster
from tensorweave.testing.seed_job import SeedJob
from suite_markers import TASK_PROCESSES

TRAINER = "examples/trainer.py"


@pytest.fixture(scope="module")
def cert_dirs(tmp_path_factory):
    """The cluster's files, and a stranger's (another CA, another token)."""
    base = tmp_path_factory.mktemp("credentials")
    return (write_cluster_certificates(str(base / "cluster"), ["localhost"]),
            write_cluster_certificates(str(base / "stranger"), ["localhost"]))


def _env(files, tls=True, token=False):
    env = {}
    if tls:
        env.update({C.CA_ENV: files["ca.crt"], C.CERT_ENV: files["tls.crt"],
                    C.KEY_ENV: files["tls.key"]})
    if token:
        env[C.TOKEN_FILE_ENV] = files["token"]
    return env


@pytest.fixture
def client_credentials():
    """This process's credentials for the test body; the environment's again after."""
    yield C.set_default
    C.set_default(None)


def _read_variable(target, creds, set_default):
    """Creates a session on `target` with `creds` and reads a ps variable (the graph is
    built fresh each time so the master really creates a session)."""
    set_default(creds)
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            probe = tf.Variable(3.0, name="security_probe")
        with tf.Session(target) as sess:
            sess.run(probe.initializer)
            return sess.run(probe)


def _assert_refused(target, creds, set_default, error, *words):
    with pytest.raises(error) as info:
        _read_variable(target, creds, set_default)
    for word in words:
        assert word in info.value.message, info.value.message


def _train_while_strangers_knock(tmp_path, env, strangers, set_default, transport,
                                 monkeypatch):
    """The seed trainer on 1 ps + 2 workers with `env`; meanwhile each
    (credentials, error, words) stranger tries a session on the ps and is refused."""
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", transport)
    job = SeedJob(TRAINER, extra=["--train_steps=300", "--hidden=32", "--log_every=100",
                                  f"--checkpoint_dir={tmp_path}"],
                  env={**env, "TENSORWEAVE_TRANSPORT": transport})
    try:
        job.start()
        ps = job.topology.address(job.topology.tasks[0])
        job.wait_listening("ps0")
        for creds, error, words in strangers:
            _assert_refused(f"grpc://{ps}", creds, set_default, error, *words)
        result = job.wait(240)
    finally:
        job.stop()
    assert result.returncodes == {"ps0": 0, "worker0": 0, "worker1": 0}, \
        {k: v[-2000:] for k, v in result.outputs.items()}
    acc = re.findall(r"final batch accuracy ([0-9.]+)", result.outputs["worker0"])
    assert acc and float(acc[-1]) > 0.5, result.outputs["worker0"][-2000:]
    assert "refused connection from" in result.outputs["ps0"], result.outputs["ps0"][-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_tls_cluster_trains_seed_trainer_and_refuses_strangers(
        tmp_path, cert_dirs, client_credentials, transport, monkeypatch):
    cluster, stranger = cert_dirs
    strangers = [
        (C.NONE, tf.errors.UnauthenticatedError,
         ["/job:ps/replica:0/task:0", "requires TLS", C.CA_ENV]),
        (C.Credentials.from_env(_env(stranger)), tf.errors.PermissionDeniedError,
         ["certificate", C.CA_ENV]),
    ]
    _train_while_strangers_knock(tmp_path, _env(cluster), strangers, client_credentials,
                                 transport, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_token_cluster_trains_seed_trainer_and_refuses_strangers(
        tmp_path, cert_dirs, client_credentials, transport, monkeypatch):
    cluster, stranger = cert_dirs
    strangers = [
        (C.NONE, tf.errors.UnauthenticatedError,
         ["/job:ps/replica:0/task:0", "requires an auth token", C.TOKEN_FILE_ENV]),
        (C.Credentials.from_env(_env(stranger, tls=False, token=True)),
         tf.errors.PermissionDeniedError, ["wrong auth token", C.TOKEN_FILE_ENV]),
    ]
    _train_while_strangers_knock(tmp_path, _env(cluster, tls=False, token=True), strangers,
                                 client_credentials, transport, monkeypatch)


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_tls_and_token_together_big_tensors_pulled_over_tls(cert_dirs, client_credentials,
                                                            monkeypatch):
    """Both modes at once over gRPC; a big tensor comes over the side channel (TLS, with
    the token digest in its handshake), not the gRPC fallback."""
    cluster, stranger = cert_dirs
    env = _env(cluster, tls=True, token=True)
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", "tcp")
    monkeypatch.delenv("TENSORWEAVE_BULK", raising=False)
    with LocalCluster(ps=1, workers=1, env={**env, "TENSORWEAVE_TRANSPORT": "tcp"}) as lc:
        client_credentials(C.Credentials.from_env(env))
        big = np.arange(1 << 19, dtype=np.float32)  # 2 MiB: above the inline limit
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(big, name="big")
            with tf.Session(lc.target("worker", 0)) as sess:
                sess.run(v.initializer)
                np.testing.assert_array_equal(sess.run(v * 2.0), big * 2)
        worker_port = int(lc.spec["worker"][0].rsplit(":", 1)[1])
        pulled = [key for key, socks in rpc.Client._bulk_client._idle.items()
                  if key[1] == worker_port and socks]
        rpc.Client._bulk_client.close()  # the shared pool: others' tests look into it
        assert pulled and all(len(key) == 3 for key in pulled)  # with the TLS handshake
        # A TLS client whose token is wrong is still refused.
        wrong = C.Credentials(ca=C.Credentials.from_env(env).ca,
                              cert=C.Credentials.from_env(env).cert,
                              key=C.Credentials.from_env(env).key, token=b"not the token")
        _assert_refused(lc.target("worker", 0), wrong, client_credentials,
                        tf.errors.PermissionDeniedError, "wrong auth token")


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_tls_client_will_not_talk_to_a_task_without_tls(cert_dirs, client_credentials,
                                                        transport, monkeypatch):
    """A client with TLS credentials refuses a task that cannot prove who it is (the
    task itself serves plain clients as before)."""
    cluster, _ = cert_dirs
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", transport)
    with LocalCluster(ps=1, workers=1, env={"TENSORWEAVE_TRANSPORT": transport}) as lc:
        _assert_refused(lc.target("worker", 0), C.Credentials.from_env(_env(cluster)),
                        client_credentials, tf.errors.UnauthenticatedError,
                        lc.spec["worker"][0], "TLS")
        assert _read_variable(lc.target("worker", 0), C.NONE, client_credentials) == 3.0


@pytest.mark.slow
@pytest.mark.transports("grpc", why=(
    "a whole job of seed-trainer processes (~12 s); the credentials on each socket wire are "
    "checked by the tcp and unix cases above"))
def test_worker_task_without_credentials_is_refused_and_the_chief_trains_on(tmp_path,
                                                                           cert_dirs):
    """worker 1 starts without the cluster's TLS files: its session on the ps is refused
    (UnauthenticatedError naming the ps and what to set); the ps and the chief go on
    and finish the job."""
    cluster, _ = cert_dirs
    job = SeedJob(TRAINER, extra=["--train_steps=200", "--hidden=32", "--log_every=100",
                                  f"--checkpoint_dir={tmp_path}"], env=_env(cluster))
    try:
        job.start_task("ps0")
        job.start_task("worker0")
        job.env = {k: v for k, v in job.env.items() if not k.startswith("TENSORWEAVE_TLS")}
        job.start_task("worker1")
        result = job.wait(240)
    finally:
        job.stop()
    assert result.returncodes["ps0"] == 0 and result.returncodes["worker0"] == 0, \
        {k: v[-2000:] for k, v in result.outputs.items()}
    assert "worker 0: done" in result.outputs["worker0"]
    assert result.returncodes["worker1"] != 0
    out = result.outputs["worker1"]
    assert "UnauthenticatedError" in out and "/job:ps/replica:0/task:0" in out, out[-2000:]
    assert C.CA_ENV in out


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["tcp", "unix"])
def test_server_name_lets_one_certificate_serve_every_host(tmp_path, client_credentials,
                                                           transport, monkeypatch):
    """A certificate that names only the cluster (as a Kubernetes Secret shared by every
    pod would) fails the host check of the address dialled, unless
    TENSORWEAVE_TLS_SERVER_NAME says which name to check."""
    from tensorweave.launch.credentials import CertificateAuthority
    ca = CertificateAuthority()
    cert, key = ca.issue("every task", [], local=False)
    for name, data in (("ca.crt", ca.cert_pem), ("tls.crt", cert), ("tls.key", key)):
        (tmp_path / name).write_bytes(data)
    files = {n: str(tmp_path / n) for n in ("ca.crt", "tls.crt", "tls.key")}
    env = {**_env(files), C.SERVER_NAME_ENV: C.CLUSTER_NAME}
    monkeypatch.setenv("TENSORWEAVE_TRANSPORT", transport)
    with LocalCluster(ps=1, workers=1, env={**env, "TENSORWEAVE_TRANSPORT": transport}) as lc:
        _assert_refused(lc.target("worker", 0), C.Credentials.from_env(_env(files)),
                        client_credentials, tf.errors.PermissionDeniedError,
                        "certificate", "ostname")
        assert _read_variable(lc.target("worker", 0), C.Credentials.from_env(env),
                              client_credentials) == 3.0

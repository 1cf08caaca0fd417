"""Issue 36: every task answers `GET /metrics` (Prometheus text) on its one port.

A real job (1 ps + 2 workers, each worker training in its own session) is scraped
twice on each task, over a raw socket and with urllib: at least 8 families, counters
that rose, per-peer labels naming tasks, every line valid exposition format. gRPC
and big-tensor (bulk) traffic go on on the same port meanwhile. A task with a token
answers 401 without it and 200 with it; a TLS task is scraped over TLS only.
"""
from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.topology import free_ports
from tensorweave.distributed.transport import credentials as C
from tensorweave.distributed.transport import sidechannel
from suite_markers import PORT
from runtime.test_metrics_format import assert_valid_exposition

PS = "/job:ps/replica:0/task:0"
BIG = 600  # a 600x600 float32 variable: 1.4 MB, fetched over the bulk channel


def _port(server) -> int:
    return int(server.target.rsplit(":", 1)[1])


def scrape_raw(port: int, request: bytes = b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"
               ) -> tuple[int, str]:
    """(status, body) of one request sent byte for byte on a plain socket."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode()


def scrape_urllib(port: int, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=15) as resp:
            assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def value(text: str, name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels`."""
    total, found = 0.0, False
    for line in text.splitlines():
        m = re.match(rf"^{name}(\{{(.*)\}})? (\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(2) or "") for k, v in labels.items()):
            total, found = total + float(m.group(3)), True
    assert found, f"no {name} {labels} in:\n{text}"
    return total


def _train(servers, steps: int) -> None:
    """Each worker runs `steps` SGD steps on the ps's variables, in its own session."""
    for i in range(2):
        target = servers[("worker", i)].target
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                w = tf.get_variable("w", [BIG, BIG], initializer=tf.zeros_initializer())
            with tf.device(f"/job:worker/task:{i}"):
                loss = tf.reduce_sum(tf.matmul(tf.ones([4, BIG]), w) ** 2)
                train = tf.train.GradientDescentOptimizer(1e-6).minimize(loss)
            with tf.Session(target) as sess:
                if i == 0:
                    sess.run(tf.global_variables_initializer())
                for _ in range(steps):
                    sess.run(train)
                assert sess.run(w).shape == (BIG, BIG)  # a big fetch: the bulk channel


@pytest.mark.transports("grpc", "tcp", why=PORT)
@pytest.mark.cluster_shape(ps=1, workers=2)
def test_every_task_scraped_twice_while_training(inprocess_cluster):
    _spec, servers = inprocess_cluster
    _train(servers, 3)
    first = {key: scrape_raw(_port(s)) for key, s in servers.items()}
    _train(servers, 3)
    second = {key: scrape_urllib(_port(s)) for key, s in servers.items()}
    for key in servers:
        (status1, text1), (status2, text2) = first[key], second[key]
        assert status1 == status2 == 200, (key, text1[:200])
        families = assert_valid_exposition(text2)
        assert len(families) >= 8, families
        assert value(text2, "process_cpu_seconds_total") >= \
            value(text1, "process_cpu_seconds_total")
        assert value(text2, "process_resident_memory_bytes") > 0
    worker = second[("worker", 0)][1]
    # Counters that rose, per-peer labels naming tasks.
    assert value(worker, "tensorweave_peer_sent_bytes_total", peer=PS) > \
        value(first[("worker", 0)][1], "tensorweave_peer_sent_bytes_total", peer=PS) > 0
    assert value(worker, "tensorweave_peer_received_bytes_total", peer=PS) > 0
    assert value(worker, "tensorweave_peer_rpc_seconds_count", peer=PS,
                 method="run_graph") > 0
    assert value(worker, "tensorweave_steps_total") > \
        value(first[("worker", 0)][1], "tensorweave_steps_total") >= 4
    ps = second[("ps", 0)][1]
    updates = 2 * (3 + 3) + 2  # 12 SGD steps and 2 initializations (assign)
    assert value(ps, "tensorweave_variable_updates_total", variable="w") == updates
    assert value(ps, "tensorweave_variable_update_bytes_total", variable="w") == \
        updates * BIG * BIG * 4
    assert value(ps, "tensorweave_variable_updates_total", variable="w") > \
        value(first[("ps", 0)][1], "tensorweave_variable_updates_total", variable="w")
    for i in range(2):
        assert value(ps, "tensorweave_peer_received_bytes_total",
                     peer=f"/job:worker/replica:0/task:{i}") > 0
    assert value(ps, "tensorweave_task_info", task=PS, job="ps") == 1
    # Only /metrics; the port's other protocols are unharmed (trained above, and again).
    assert scrape_raw(_port(servers[("ps", 0)]), b"GET / HTTP/1.1\r\n\r\n")[0] == 404
    _train(servers, 1)


@pytest.mark.transports("tcp", why=PORT)
def test_a_task_with_a_token_refuses_an_unauthenticated_scrape(monkeypatch):
    monkeypatch.setattr(sidechannel, "_last_logged", {})
    token = C.Credentials(token=b"the-cluster-secret")
    server = tf.train.Server({"ps": [f"localhost:{free_ports(1)[0]}"]}, job_name="ps",
                             task_index=0, credentials=token, exit_when_done=False)
    try:
        port = _port(server)
        status, body = scrape_urllib(port)
        assert status == 401 and "Authorization: Bearer" in body, body
        assert "tensorweave_" not in body
        assert scrape_urllib(port, token="a-wrong-secret")[0] == 401
        assert scrape_raw(port)[0] == 401
        status, body = scrape_urllib(port, token="the-cluster-secret")
        assert status == 200 and len(assert_valid_exposition(body)) >= 8
        # The task still serves gRPC to a client with the token.
        C.set_default(token)
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.float32(5.0))
            with tf.Session(server.target) as sess:
                sess.run(v.initializer)
                assert sess.run(v) == 5.0
    finally:
        C.set_default(None)
        server.stop()


@pytest.mark.transports("tcp", why=PORT)
def test_a_tls_task_is_scraped_over_tls_with_a_cluster_certificate(tmp_path, monkeypatch):
    monkeypatch.setattr(sidechannel, "_last_logged", {})  # its refusal: not others' logs
    import ssl
    from tensorweave.launch.credentials import write_cluster_certificates
    files = write_cluster_certificates(str(tmp_path), ["localhost"])
    creds = C.Credentials.from_files(ca=files["ca.crt"], cert=files["tls.crt"],
                                     key=files["tls.key"])
    server = tf.train.Server({"ps": [f"localhost:{free_ports(1)[0]}"]}, job_name="ps",
                             task_index=0, credentials=creds, exit_when_done=False)
    try:
        ctx = ssl.create_default_context(cafile=files["ca.crt"])
        ctx.check_hostname = False
        ctx.load_cert_chain(files["tls.crt"], files["tls.key"])
        url = f"https://127.0.0.1:{_port(server)}/metrics"
        with urllib.request.urlopen(url, context=ctx, timeout=15) as resp:
            assert resp.status == 200
            assert len(assert_valid_exposition(resp.read().decode())) >= 8
        # Plain HTTP to a TLS port: closed, never answered.
        with socket.create_connection(("127.0.0.1", _port(server)), timeout=15) as sock:
            sock.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
            try:
                assert sock.recv(64) == b""
            except ConnectionResetError:
                pass
    finally:
        server.stop()

"""The job's end waits for the living (issue 32).

Once the chief has ended the job, a ps keeps serving while a worker still has a
session open on it. A worker that does not answer is not dead at its first lost
health check: it is declared gone (its sessions closed, naming it and how long it
was silent) only after several failed checks spanning TENSORWEAVE_JOB_END_SILENCE_SECS,
within the server's done_grace_secs. One that answers again before then finishes,
and the ps exits 0 after it.

Timings here are bounds, never targets: the machine is shared.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import tensorweave as tf
from tensorweave.distributed.job import JobEndWatch, notify_job_done
from tensorweave.distributed.protocol import service_pb2 as pb
from tensorweave.distributed.server import Server
from tensorweave.testing import lossy
from tensorweave.testing.cluster import cluster_dict
from suite_markers import JOB_END

pytestmark = pytest.mark.usefixtures("fresh_graph")

WORKER1 = "/job:worker/replica:0/task:1"


# ---- in this process: the watch itself, over the lossy transport --------------------
def _open_session_on_ps(cluster) -> tf.Session:
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="job_end_v")
    sess = tf.Session(cluster.target("worker", 0))
    sess.run(v.initializer)
    return sess


def _poll(watch: JobEndWatch, seconds: float) -> bool:
    """Asks the watch as `join()` does (every 0.2 s) for up to `seconds`; True once done."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if watch.finished():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.slow
def test_lost_health_checks_do_not_end_a_session_whose_worker_answers_again(
        lossy_cluster, monkeypatch, caplog):
    monkeypatch.setenv("TENSORWEAVE_JOB_END_SILENCE_SECS", "60")
    ps = lossy_cluster.servers[("ps", 0)]
    worker0 = "/job:worker/replica:0/task:0"
    sess = _open_session_on_ps(lossy_cluster)
    lost = lossy.Rule("call", match="get_status", task=worker0, drop=True, times=3)
    lossy.LOSSY.rules = [lost]
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, enabled=True, grace_secs=120.0)
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    caplog.set_level(logging.INFO, "tensorweave.job")
    try:
        # Three checks are lost (each after its 2 s timeout), then one is answered.
        deadline = time.monotonic() + 60
        while "answers again" not in caplog.text and time.monotonic() < deadline:
            assert not watch.finished(), "the session was given up while checks failed"
            time.sleep(0.2)
        assert len(lost.hits) == 3, lost.hits
        assert f"{worker0} answers again after 3 failed health check(s)" in caplog.text
        assert ps.worker.open_sessions(), "the answering worker's session was closed"
        assert not watch.finished()
        sess.run(tf.constant(1.0))  # the worker's session still works on the ps
    finally:
        sess.close()
    assert _poll(watch, 30), "the session closed but the job's end did not notice"


@pytest.mark.slow
def test_a_worker_silent_past_the_bound_is_declared_gone_by_name(lossy_cluster, monkeypatch,
                                                                 caplog):
    monkeypatch.setenv("TENSORWEAVE_JOB_END_SILENCE_SECS", "1")
    ps = lossy_cluster.servers[("ps", 0)]
    worker0 = "/job:worker/replica:0/task:0"
    sess = _open_session_on_ps(lossy_cluster)
    lost = lossy.Rule("call", match="get_status", task=worker0, drop=True)
    lossy.LOSSY.rules = [lost]
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, enabled=True, grace_secs=120.0)
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    caplog.set_level(logging.INFO, "tensorweave.job")
    try:
        assert _poll(watch, 90), "a silent worker kept the finished job alive"
    finally:
        lossy.LOSSY.rules = []
        sess.close()
    assert len(lost.hits) >= 3, lost.hits  # several checks, not one
    assert f"{worker0} answered none of its last" in caplog.text
    assert "silent for" in caplog.text
    assert "giving up on" not in caplog.text  # declared gone, not the grace running out
    assert not ps.worker.open_sessions()


def test_a_session_of_a_handle_without_owner_is_kept_until_the_grace(lossy_cluster,
                                                                     monkeypatch):
    ps = lossy_cluster.servers[("ps", 0)]
    ps.worker._sessions.add("legacy-handle")  # not "<job>.<index>....": nothing to check
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, enabled=True, grace_secs=1.0)
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    assert not watch.finished()
    assert _poll(watch, 30)  # the grace ran out


def test_sessions_an_earlier_incarnation_of_a_worker_opened_are_closed_at_once(
        lossy_cluster, caplog):
    ps = lossy_cluster.servers[("ps", 0)]
    worker0 = lossy_cluster.servers[("worker", 0)]
    sess = _open_session_on_ps(lossy_cluster)
    live = ps.worker.open_sessions()
    assert live and all(h.endswith(f".i{worker0.worker.incarnation:x}") for h in live)
    stale = f"worker.0.s99.i{worker0.worker.incarnation ^ 1:x}"  # worker 0 before a restart
    ps.worker._sessions.add(stale)
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, enabled=True, grace_secs=120.0)
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    caplog.set_level(logging.INFO, "tensorweave.job")
    try:
        end = time.monotonic() + 30
        while stale in ps.worker.open_sessions() and time.monotonic() < end:
            assert not watch.finished()  # the live session keeps the job
            time.sleep(0.2)
        assert ps.worker.open_sessions() == live
        assert f"/job:worker/replica:0/task:0 restarted since it opened session(s) " \
               f"['{stale}']" in caplog.text
    finally:
        sess.close()
    assert _poll(watch, 30)


def test_a_session_left_by_a_worker_that_restarted_and_finished_does_not_hold_the_ps(
        lossy_cluster, caplog):
    # A worker killed mid-job left its session open; its restart opened a newer one,
    # finished, closed it and exited. The ps cannot ask the worker (nothing serves its
    # port), but the newer session says the old process is gone: no silence to wait out.
    ps = lossy_cluster.servers[("ps", 0)]
    gone = "/job:worker/replica:0/task:1"  # no session of its own in this cluster
    stale, restarted = "worker.1.s1.i1a2b", "worker.1.s1.i3c4d"
    for handle in (stale, restarted):
        ps.worker.register_graph(pb.RegisterGraphRequest(session_handle=handle))
    ps.worker.close_session(pb.CloseWorkerSessionRequest(session_handle=restarted))
    assert ps.worker.newest_session(gone) == restarted
    lost = lossy.Rule("call", match="get_status", task=gone, drop=True)
    lossy.LOSSY.rules = [lost]
    watch = JobEndWatch(ps.task, ps.worker, ps.peer, enabled=True, grace_secs=120.0)
    ps.worker.job_done(pb.JobDoneRequest(reason="test"))
    caplog.set_level(logging.INFO, "tensorweave.job")
    assert watch.finished()  # at once: no health check needed
    assert not lost.hits and ps.worker.open_sessions() == []
    assert f"{gone} restarted since it opened session(s) ['{stale}']" in caplog.text


@pytest.mark.slow
def test_a_close_that_could_not_reach_the_ps_is_sent_again(lossy_cluster, caplog):
    # A worker that re-creates its session after a cut closed the old one while the ps
    # could not hear it: left open, that session would hold a finished job's ps.
    ps = lossy_cluster.servers[("ps", 0)]
    sess = _open_session_on_ps(lossy_cluster)
    handles = ps.worker.open_sessions()
    lost = lossy.Rule("call", match="close_session", task=ps.task, drop=True, times=1)
    lossy.LOSSY.rules = [lost]
    caplog.set_level(logging.INFO, "tensorweave.master")
    sess.close()  # its close_session is lost (after the call's 10 s timeout)
    assert len(lost.hits) == 1, lost.hits
    end = time.monotonic() + 30
    while ps.worker.open_sessions() and time.monotonic() < end:
        time.sleep(0.2)
    assert ps.worker.open_sessions() == [], "the lost close was never sent again"
    assert f"Closed session {handles[0]} on {ps.task} (it could not be reached at first)" \
        in caplog.text


# ---- real processes: a frozen worker, a killed worker -------------------------------
PS_PROGRAM = textwrap.dedent("""
    import json, logging, sys
    import tensorweave as tf
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    server = tf.train.Server(json.loads(sys.argv[1]), job_name="ps", task_index=0,
                             done_grace_secs=float(sys.argv[2]))
    server.join()
""")

# Worker 1: a session with a variable on the ps, stepping until the file FINISH
# exists, then two more steps, and a normal exit.
WORKER_PROGRAM = textwrap.dedent("""
    import json, os, sys, time
    import tensorweave as tf
    spec, finish = json.loads(sys.argv[1]), sys.argv[2]
    server = tf.train.Server(spec, job_name="worker", task_index=1, exit_when_done=False)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(0.0, name="count")
    add = tf.assign_add(v, 1.0)
    cfg = tf.ConfigProto(operation_timeout_in_ms=30000)
    with tf.Session(server.target, config=cfg) as sess:
        sess.run(v.initializer)
        while not os.path.exists(finish):
            print("step", sess.run(add), flush=True)
            time.sleep(0.1)
        for _ in range(2):
            print("step", sess.run(add), flush=True)
    print("worker finished", flush=True)
""")


def _spawn(tmp_path, name, program, args, env=None):
    script = tmp_path / f"{name}.py"
    script.write_text(program)
    out = open(tmp_path / f"{name}.log", "w")
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=out,
                            stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    out.close()
    return proc


def _log(tmp_path, name):
    return (tmp_path / f"{name}.log").read_text()


def _wait_for(tmp_path, name, text, proc, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in _log(tmp_path, name):
            return
        assert proc.poll() is None, f"{name} exited ({proc.returncode}):\n{_log(tmp_path, name)}"
        time.sleep(0.2)
    raise AssertionError(f"{name} never said {text!r}:\n{_log(tmp_path, name)[-3000:]}")


def _stop(*procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait(30)


def _job(tmp_path, silence_secs: str, grace_secs: str):
    """ps and worker 1 as processes; worker 0 (the chief) in this process."""
    spec = cluster_dict(ps=1, workers=2)
    import json
    env = {"TENSORWEAVE_JOB_END_SILENCE_SECS": silence_secs}
    ps = _spawn(tmp_path, "ps", PS_PROGRAM, [json.dumps(spec), grace_secs], env)
    worker = _spawn(tmp_path, "worker1", WORKER_PROGRAM,
                    [json.dumps(spec), str(tmp_path / "FINISH")])
    return spec, ps, worker


@pytest.mark.slow
@pytest.mark.transports("grpc", why=JOB_END)
def test_a_frozen_worker_that_comes_back_finishes_and_the_ps_exits_after_it(tmp_path):
    spec, ps, worker = _job(tmp_path, silence_secs="40", grace_secs="90")
    chief = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
    try:
        _wait_for(tmp_path, "worker1", "step", worker)  # its session is open on the ps
        worker.send_signal(signal.SIGSTOP)  # a GC pause, a stalled VM, a cut link
        assert notify_job_done(chief.target) == ["/job:ps/replica:0/task:0"]
        _wait_for(tmp_path, "ps", "does not answer its health check", ps)
        time.sleep(5)  # a few more failed checks
        assert ps.poll() is None, "the ps left a frozen worker's open session:\n" + \
            _log(tmp_path, "ps")
        worker.send_signal(signal.SIGCONT)
        (tmp_path / "FINISH").write_text("")
        assert worker.wait(60) == 0, _log(tmp_path, "worker1")
        assert ps.wait(60) == 0, _log(tmp_path, "ps")
    finally:
        chief.stop()
        _stop(worker, ps)
    assert "worker finished" in _log(tmp_path, "worker1")
    ps_log = _log(tmp_path, "ps")
    assert f"{WORKER1} answers again after" in ps_log
    assert "is gone" not in ps_log and "giving up on" not in ps_log


@pytest.mark.slow
@pytest.mark.transports("grpc", why=JOB_END)
def test_a_killed_worker_is_declared_gone_by_name_within_the_grace(tmp_path):
    spec, ps, worker = _job(tmp_path, silence_secs="3", grace_secs="60")
    chief = Server(spec, job_name="worker", task_index=0, exit_when_done=False)
    try:
        _wait_for(tmp_path, "worker1", "step", worker)
        worker.kill()
        worker.wait(30)
        notify_job_done(chief.target)
        assert ps.wait(60) == 0, _log(tmp_path, "ps")  # done_grace_secs
    finally:
        chief.stop()
        _stop(worker, ps)
    ps_log = _log(tmp_path, "ps")
    assert f"{WORKER1} answered none of its last" in ps_log and "silent for" in ps_log
    assert "giving up on" not in ps_log  # declared gone, not the grace running out

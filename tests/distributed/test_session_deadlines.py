"""Issue 15, "no unbounded waits": creating or re-creating a session while a ps is down
gives up after the session deadline with UnavailableError naming the missing task, says
"still waiting" at WARNING meanwhile, and recovery after a lost task is capped and says
at WARNING what it does. (Beyond TF 1.x, which retried session creation forever and
logged the retries at INFO.)

The clusters are real server processes on loopback with the ps never started (or
killed); the deadlines are a few seconds so the tests stay short.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from tensorweave.train.device_setter import replica_device_setter
from tensorweave.train.monitored_session import MonitoredTrainingSession
from tensorweave.train.session_deadline import (
    DEADLINE_ENV, DEFAULT_SESSION_DEADLINE_SECS, MAX_RECOVERIES_IN_A_ROW, session_deadline_secs)
from tensorweave.train.session_run_hook import SessionRunHook
from tensorweave.train.supervisor import Supervisor
from suite_markers import TASK_PROCESSES

PS = "/job:ps/replica:0/task:0"
# Each attempt on the worker's master waits this long for the ps (ConfigProto).
QUICK = tf.ConfigProto(operation_timeout_in_ms=1000)


def _bounded(fn: Callable[[], Any]) -> BaseException:
    """Runs fn in a thread (with this thread's default graph); returns what it raised.

    The join guard only turns a hang (the behaviour this file forbids) into a failure
    instead of a stuck test run; it is many times the few-second deadlines used here,
    so it is no timing assertion."""
    outcome: list[BaseException] = []
    graph = tf.get_default_graph()

    def body() -> None:
        try:
            with graph.as_default():
                fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            outcome.append(e)
    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(300)
    assert not t.is_alive(), "session creation did not give up: an unbounded wait"
    assert outcome, "session creation succeeded although the ps is down"
    return outcome[0]


@pytest.fixture
def ps_down():
    """A cluster of 1 ps + 1 worker whose worker process runs and whose ps never starts."""
    spec = cluster_dict(1, 1)
    with LocalCluster(spec=spec, in_process=(("ps", 0),)) as lc:
        yield lc


def _model(spec: dict) -> Any:
    with tf.device(replica_device_setter(cluster=spec, worker_device="/job:worker/task:0")):
        step = tf.train.get_or_create_global_step()
        v = tf.Variable(0.0, name="v")
        return tf.group(tf.assign_add(v, 1.0), tf.assign_add(step, 1))


def test_default_deadline_is_about_a_minute_and_configurable(monkeypatch):
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    assert session_deadline_secs(None) == DEFAULT_SESSION_DEADLINE_SECS == 60
    assert session_deadline_secs(tf.ConfigProto(operation_timeout_in_ms=2500)) == 2.5
    monkeypatch.setenv(DEADLINE_ENV, "7")
    assert session_deadline_secs(tf.ConfigProto(operation_timeout_in_ms=2500)) == 7.0
    monkeypatch.setenv(DEADLINE_ENV, "soon")
    with pytest.raises(ValueError, match=f"{DEADLINE_ENV}='soon'"):
        session_deadline_secs(None)


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_chief_gives_up_naming_the_missing_ps(ps_down, graph, caplog, monkeypatch):
    monkeypatch.setenv(DEADLINE_ENV, "4")
    train = _model(ps_down.spec)
    caplog.set_level(logging.WARNING, logger="tensorweave")

    def create() -> None:
        with MonitoredTrainingSession(master=ps_down.target("worker", 0), is_chief=True,
                                      config=QUICK) as sess:
            sess.run(train)
    err = _bounded(create)
    assert isinstance(err, tf.errors.UnavailableError), repr(err)
    assert f"task {PS} did not answer" in str(err) and "deadline 4s" in str(err)
    assert DEADLINE_ENV in str(err)  # says how to wait longer
    waiting = [r for r in caplog.records if "Still waiting for" in r.getMessage()]
    assert waiting and all(r.levelno == logging.WARNING for r in waiting)
    assert f"Still waiting for {PS} to create a session on" in waiting[0].getMessage()


@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_operation_timeout_in_ms_is_honoured(ps_down, graph, monkeypatch):
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    train = _model(ps_down.spec)
    config = tf.ConfigProto(operation_timeout_in_ms=1500)

    def create() -> None:
        with MonitoredTrainingSession(master=ps_down.target("worker", 0), is_chief=True,
                                      config=config) as sess:
            sess.run(train)
    err = _bounded(create)
    assert isinstance(err, tf.errors.UnavailableError)
    assert "deadline 1.5s" in str(err) and PS in str(err)


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_non_chief_gives_up_instead_of_waiting_out_max_wait_secs(ps_down, graph, caplog,
                                                                  monkeypatch):
    # max_wait_secs (TF's two hours) bounds waiting for the chief; an unreachable ps is
    # a different wait, bounded by the session deadline.
    monkeypatch.setenv(DEADLINE_ENV, "3")
    train = _model(ps_down.spec)
    caplog.set_level(logging.WARNING, logger="tensorweave")

    def create() -> None:
        with MonitoredTrainingSession(master=ps_down.target("worker", 0), is_chief=False,
                                      config=QUICK, max_wait_secs=7200) as sess:
            sess.run(train)
    err = _bounded(create)
    assert isinstance(err, tf.errors.UnavailableError), repr(err)
    assert "Gave up waiting for the model to be ready" in str(err) and PS in str(err)
    assert any(r.levelno == logging.WARNING and f"Still waiting for {PS} (unreachable)"
               in r.getMessage() for r in caplog.records)


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_supervisor_worker_gives_up_too(ps_down, graph, monkeypatch):
    monkeypatch.setenv(DEADLINE_ENV, "3")
    _model(ps_down.spec)
    sv = Supervisor(is_chief=False, recovery_wait_secs=1)
    err = _bounded(lambda: sv.prepare_or_wait_for_session(ps_down.target("worker", 0),
                                                          config=QUICK))
    assert isinstance(err, tf.errors.UnavailableError) and PS in str(err)


@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", why=TASK_PROCESSES)
def test_recovery_after_a_lost_ps_says_what_it_does(tmp_path, caplog):
    """The ps process is killed and restarted mid-training: the chief's recovery logs
    at WARNING that it restarts the session, which checkpoint it restored and the step
    it resumes at."""
    spec = cluster_dict(1, 1)
    caplog.set_level(logging.WARNING, logger="tensorweave")
    with LocalCluster(spec=spec, in_process=(("worker", 0),)) as procs:
        server = Server(spec, job_name="worker", task_index=0)
        try:
            with tf.Graph().as_default():
                train = _model(spec)
                with MonitoredTrainingSession(master=server.target, is_chief=True,
                                              checkpoint_dir=str(tmp_path),
                                              save_checkpoint_steps=2) as sess:
                    for _ in range(3):
                        sess.run(train)  # checkpoints at steps 0 and 2
                    procs.kill("ps", 0)
                    procs.start_task("ps", 0)
                    procs.wait_task("ps", 0)
                    sess.run(train)
        finally:
            server.stop()
    text = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("restarting the session (recovery 1 of at most" in t for t in text), text
    resumed = [t for t in text if t.startswith("Session re-created on")]
    assert resumed and "restored checkpoint" in resumed[0], text
    assert "model.ckpt-2" in resumed[0] and "resuming at global step 2" in resumed[0]


class AlwaysLost(SessionRunHook):
    """Every step fails as if its ps had just been lost."""

    def __init__(self) -> None:
        self.sessions = 0

    def after_create_session(self, session: Any, coord: Any) -> None:
        self.sessions += 1

    def before_run(self, run_context: Any) -> None:
        raise tf.errors.UnavailableError(None, None, f"injected: {PS} is unavailable")


def test_recovery_is_capped(graph, caplog):
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    hook = AlwaysLost()
    caplog.set_level(logging.WARNING, logger="tensorweave")
    with pytest.raises(tf.errors.UnavailableError,
                       match=f"Gave up after {MAX_RECOVERIES_IN_A_ROW} session re-creations"):
        with MonitoredTrainingSession(hooks=[hook]) as sess:
            sess.run(train)
    assert hook.sessions == 1 + MAX_RECOVERIES_IN_A_ROW
    lost = [r for r in caplog.records if f"(lost {PS}?)" in r.getMessage()]
    assert len(lost) == MAX_RECOVERIES_IN_A_ROW
    assert all(r.levelno == logging.WARNING for r in lost)

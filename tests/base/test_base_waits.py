"""tensorweave.base.waits: the one back-off policy, deadline and give-up message.

A fake clock stands in for `time` inside `base.waits`, so nothing here measures time:
sleeping advances the fake clock by exactly the delay asked for.
"""
from __future__ import annotations

import doctest
import itertools
import logging
import threading
from types import SimpleNamespace

import pytest

import tensorweave as tf
from tensorweave.base import waits
from tensorweave.base.waits import DEFAULT_WAIT_SECS, Backoff, Wait, WaitTimeout, wait_until
from tensorweave.distributed.master import MasterService
from tensorweave.estimator import executor as executor_mod
from tensorweave.train import session_deadline
from tensorweave.train.session_deadline import ClusterWait


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, secs: float) -> None:
        assert secs >= 0
        self.slept.append(secs)
        self.now += secs


@pytest.fixture
def clock(monkeypatch):
    c = FakeClock()
    monkeypatch.setattr(waits, "time", c)
    return c


# ----- Backoff -----------------------------------------------------------------------

def test_backoff_grows_by_its_factor_up_to_its_cap():
    assert list(itertools.islice(Backoff().delays(), 7)) == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert list(itertools.islice(Backoff(0.1, 1.0, 0.1).delays(), 3)) == [0.1, 0.1, 0.1]


def test_jittered_backoff_stays_within_10_to_100_percent():
    nominal = list(itertools.islice(Backoff(0.05, 2.0, 1.0).delays(), 40))
    jittered = list(itertools.islice(Backoff(0.05, 2.0, 1.0, jitter=True).delays(), 40))
    assert all(0.1 * n <= j <= n for n, j in zip(nominal, jittered))
    assert jittered != nominal


def test_the_nth_delay_and_a_huge_attempt_number_stay_at_the_cap():
    policy = Backoff(1.0, 2.0, 30.0)
    assert [policy.delay(n) for n in (1, 2, 3, 5, 6, 10_000)] == [1, 2, 4, 16, 30, 30]
    assert list(itertools.islice(policy.delays(), 6)) == [policy.delay(n) for n in range(1, 7)]


def test_launch_restart_back_off_is_the_same_policy():
    from tensorweave.launch.restart import RestartPolicy
    restart = RestartPolicy(backoff=0.5, backoff_max=3.0)
    assert [restart.delay(n) for n in (1, 2, 3, 4, 50)] == \
        [Backoff(0.5, 2.0, 3.0).delay(n) for n in (1, 2, 3, 4, 50)] == [0.5, 1, 2, 3, 3]


@pytest.mark.parametrize("kwargs", [dict(first=-1), dict(factor=0.5), dict(first=2, cap=1)])
def test_backoff_refuses_a_policy_that_shrinks_or_is_negative(kwargs):
    with pytest.raises(ValueError, match="first >= 0, factor >= 1 and cap >= first"):
        Backoff(**kwargs)


# ----- Wait ------------------------------------------------------------------------------

def test_a_wait_sleeps_the_back_off_and_gives_up_with_a_message_saying_what_and_why(clock):
    wait = Wait("for the ps to answer", 1.0, hint="Start the ps.",
                error=lambda m: tf.errors.UnavailableError(None, None, m))
    with pytest.raises(tf.errors.UnavailableError) as info:
        while True:
            wait.pause("/job:ps/task:0 did not answer")
    # the last sleep is cut to the time left, never past the deadline
    assert clock.slept == [0.05, 0.1, 0.2, 0.4, 0.25]
    assert str(info.value) == ("Gave up waiting for the ps to answer after 1s (6 attempts; "
                               "deadline 1s): /job:ps/task:0 did not answer. Start the ps.")


def test_give_up_defaults_to_wait_timeout_and_a_hint_can_replace_the_wait_s_own(clock):
    wait = Wait("for x", 0.0, hint="Do a.")
    err = wait.give_up("", hint="Do b.")
    assert isinstance(err, WaitTimeout) and isinstance(err, TimeoutError)
    assert str(err) == "Gave up waiting for x after 0s (1 attempt; deadline 0s). Do b."


def test_detail_given_as_a_callable_is_only_built_at_the_give_up(clock):
    built = []

    def detail() -> str:
        built.append(1)
        return "still missing: a"
    wait = Wait("for a", 0.2)
    with pytest.raises(WaitTimeout, match="still missing: a"):
        while True:
            wait.pause(detail)
    assert len(built) == 1


def test_remaining_expired_and_restart(clock):
    wait = Wait("for y", 2.0)
    assert wait.remaining() == 2.0 and not wait.expired()
    clock.now += 2.5
    assert wait.remaining() == 0.0 and wait.expired()
    wait.restart()
    assert wait.remaining() == 2.0 and wait.attempts == 0


def test_no_deadline_never_expires_and_a_passed_one_gives_up_at_once(clock):
    forever = Wait("for a step TF waits for without end", None)
    clock.now += 1e9
    assert not forever.expired() and forever.remaining() == float("inf")
    assert not forever.pause()
    with pytest.raises(WaitTimeout, match="deadline 0s"):
        Wait("for z", -3.0).pause()
    with pytest.raises(ValueError, match="'for nan' needs a timeout in seconds"):
        Wait("for nan", float("nan"))


def test_should_log_after_first_log_s_then_every_log_every_s(clock):
    wait = Wait("for w", None, log_every_s=5.0, first_log_s=3.0)
    said = []
    for _ in range(12):
        said.append(wait.should_log())
        clock.now += 1.0
    assert [i for i, s in enumerate(said) if s] == [3, 8]
    wait.log_soon()
    assert wait.should_log()


def test_an_event_ends_a_pause_at_once():
    # A 60 s back-off: only the event can end this pause before the test's timeout.
    wait = Wait("for the flag", 120.0, backoff=Backoff(60.0, 1.0, 60.0))
    flag = threading.Event()
    threading.Timer(0.05, flag.set).start()
    assert wait.pause(event=flag) is True


def test_wait_until_returns_the_value_and_uses_the_caller_s_error(clock):
    values = iter([None, 0, [], "ready"])
    assert wait_until(lambda: next(values), "for the value") == "ready"
    assert clock.slept == [0.05, 0.1, 0.2]
    with pytest.raises(RuntimeError, match=r"waiting for never after 1s .*: left: \[3\]\. Hm\."):
        wait_until(lambda: False, "for never", 1.0, hint="Hm.", error=RuntimeError,
                   detail=lambda: "left: [3]")


def test_doctests():
    result = doctest.testmod(waits, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ----- one default, used by every wait for the cluster ---------------------------------

def test_session_creation_and_a_session_s_tasks_share_one_default(clock, monkeypatch):
    monkeypatch.delenv(session_deadline.DEADLINE_ENV, raising=False)
    assert session_deadline.DEFAULT_SESSION_DEADLINE_SECS is DEFAULT_WAIT_SECS
    assert ClusterWait("grpc://w0:2222").deadline_secs == DEFAULT_WAIT_SECS
    # A step's wait for its tasks, with no timeout of its own: the same default.
    master = SimpleNamespace(_probe=lambda task: "refused" if task.endswith("task:1") else None)
    with pytest.raises(tf.errors.UnavailableError) as info:
        MasterService.wait_for_tasks(master, ["/job:ps/replica:0/task:0",
                                              "/job:ps/replica:0/task:1"], None)
    text = str(info.value)
    assert f"deadline {DEFAULT_WAIT_SECS:g}s" in text and clock.now - 1000.0 == DEFAULT_WAIT_SECS
    assert "tasks /job:ps/replica:0/task:1 (refused) did not answer" in text
    assert "task:0" not in text and "operation_timeout_in_ms" in text


def test_one_rule_for_how_long_a_wait_for_the_cluster_lasts(clock, monkeypatch):
    env = session_deadline.DEADLINE_ENV
    monkeypatch.delenv(env, raising=False)
    assert waits.cluster_wait_secs() == waits.cluster_wait_secs(0) == DEFAULT_WAIT_SECS
    assert waits.cluster_wait_secs(2.5) == 2.5
    monkeypatch.setenv(env, "7")   # the knob, when set, is the one answer
    assert waits.cluster_wait_secs(2.5) == waits.cluster_wait_secs() == 7.0
    assert session_deadline.session_deadline_secs(tf.ConfigProto(operation_timeout_in_ms=9)) \
        == 7.0
    master = SimpleNamespace(_probe=lambda task: "refused")
    with pytest.raises(tf.errors.UnavailableError, match=f"deadline 7s.*{env}"):
        MasterService.wait_for_tasks(master, ["/job:ps/replica:0/task:0"], 2.5)
    monkeypatch.setenv(env, "soon")
    with pytest.raises(ValueError, match=f"{env}='soon'"):
        waits.cluster_wait_secs()


def test_cluster_wait_names_the_tasks_and_how_to_wait_longer(clock):
    wait = ClusterWait("grpc://w0:2222", tf.ConfigProto(operation_timeout_in_ms=500))
    lost = tf.errors.UnavailableError(None, None, "/job:ps/replica:0/task:0 is down")
    with pytest.raises(tf.errors.UnavailableError) as info:
        while True:
            wait.retry_or_raise(lost)
    text = str(info.value)
    assert text.startswith("Gave up waiting to create a session on grpc://w0:2222 after 0s (")
    assert "deadline 0.5s): task /job:ps/replica:0/task:0 did not answer." in text
    assert "Check that those servers are running" in text
    assert session_deadline.DEADLINE_ENV in text and info.value.__cause__ is lost
    with pytest.raises(tf.errors.UnavailableError) as again:  # an outer wait re-raises it
        ClusterWait("grpc://w0:2222").retry_or_raise(info.value)
    assert again.value is info.value


def test_a_chief_with_nothing_to_train_stops_telling_ps_tasks_after_the_default(
        clock, monkeypatch, caplog):
    told = []
    monkeypatch.setattr(executor_mod, "notify_enabled", lambda: True)
    monkeypatch.setattr(executor_mod, "notify_job_done", lambda target: told.append(1) or [])
    config = SimpleNamespace(master="grpc://c0:2222", num_ps_replicas=2)
    ex = executor_mod.TrainingExecutor(SimpleNamespace(config=config), None, None)
    with caplog.at_level(logging.WARNING):
        ex._end_job_without_training()   # returns: the chief's own work is done
    assert clock.now - 1000.0 == DEFAULT_WAIT_SECS and len(told) > 2
    assert any("Gave up waiting for the 2 ps task(s) to hear that the job is done" in r.message
               and "stop them by hand" in r.message for r in caplog.records)


def test_a_test_cluster_s_wait_for_a_server_names_the_address(tmp_path):
    import subprocess
    import sys

    from tensorweave.distributed.topology import free_ports
    from tensorweave.testing.cluster import wait_listening
    address = f"localhost:{free_ports(1)[0]}"   # nothing listens there
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(TimeoutError, match=f"waiting for the server of {address} to listen"):
            wait_listening(address, proc, timeout=0.2, log_path=str(tmp_path / "log"))
    finally:
        proc.kill()
        proc.wait()

"""`tensorweave launch`: tasks get TF_CONFIG/flags, output is prefixed, failures and
Ctrl-C stop every process, a real seed-002 training run ends with exit 0."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tensorweave.launch.progress import PROGRESS_PREFIX, ProgressTracker
from tensorweave.launch.topology import Topology
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = REPO_ROOT

# One script, several behaviours (argv[1]); it records its pid (and its child's)
# so the tests can check that nothing is left running.
TASK_SCRIPT = textwrap.dedent("""
    import json, os, signal, subprocess, sys, time
    cfg = json.loads(os.environ["TF_CONFIG"])
    job, idx = cfg["task"]["type"], cfg["task"]["index"]
    mode, piddir = sys.argv[1], os.environ["PID_DIR"]
    def note(name, pid):
        with open(os.path.join(piddir, name + ".tmp"), "w") as f:
            f.write(str(pid))
        os.replace(os.path.join(piddir, name + ".tmp"), os.path.join(piddir, name))
    print("TF_CONFIG=" + os.environ["TF_CONFIG"])
    print("ARGV=" + json.dumps(sys.argv[2:]))
    if mode == "ok":
        if (job, idx) == ("worker", 0):  # the explicit progress protocol
            print(os.environ["TENSORWEAVE_PROGRESS_PREFIX"] + '{"global_step": 7, "loss": 0.5}')
        sys.exit(0)
    if mode == "fail" and (job, idx) == ("worker", 1):
        for i in range(30):
            print("line %d" % i)
        note(f"{job}-{idx}", os.getpid())
        sys.exit(3)
    if mode == "ps_stays" and job == "worker":
        note(f"{job}-{idx}", os.getpid())
        sys.exit(0)
    if mode == "hang" and job == "ps":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # forces the SIGKILL escalation
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    note(f"{job}-{idx}-child", child.pid)
    note(f"{job}-{idx}", os.getpid())
    print("ready", flush=True)
    time.sleep(300)
""")


@pytest.fixture
def task_script(tmp_path: Path) -> Path:
    path = tmp_path / "task.py"
    path.write_text(TASK_SCRIPT)
    (tmp_path / "pids").mkdir()
    return path


def _alive(pid: int) -> bool:
    """Running and not a zombie (a reparented zombie may wait for a lazy init)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _pids(tmp_path: Path) -> dict[str, int]:
    return {p.name: int(p.read_text()) for p in (tmp_path / "pids").iterdir()
            if not p.name.endswith(".tmp")}


def _launch_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "tensorweave", "launch", *args]


def _run(tmp_path: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    env = dict(os.environ, PID_DIR=str(tmp_path / "pids"))
    return subprocess.run(_launch_cmd(*args), capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT, check=False)


def _assert_all_gone(pids: dict[str, int]) -> None:
    deadline = time.monotonic() + 5  # reparented grandchildren are reaped asynchronously
    while time.monotonic() < deadline and any(_alive(p) for p in pids.values()):
        time.sleep(0.05)
    assert not [name for name, p in pids.items() if _alive(p)]


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_tasks_get_tf_config_and_prefixed_output(tmp_path, task_script):
    r = _run(tmp_path, "--ps", "1", "--workers", "2", "--chief", "--logdir",
             str(tmp_path / "logs"), "--", sys.executable, str(task_script), "ok", "--x=1")
    assert r.returncode == 0, r.stderr
    configs = {}
    for line in r.stdout.splitlines():
        prefix, _, rest = line.partition("] ")
        if rest.startswith("TF_CONFIG="):
            configs[prefix.lstrip("[")] = json.loads(rest[len("TF_CONFIG="):])
        if rest.startswith("ARGV="):
            assert json.loads(rest[len("ARGV="):]) == ["--x=1"]  # no seed flags
    assert set(configs) == {"ps 0", "chief 0", "worker 0", "worker 1"}
    cluster = configs["worker 1"]["cluster"]
    assert {job: len(a) for job, a in cluster.items()} == {"ps": 1, "chief": 1, "worker": 2}
    addresses = [a for addrs in cluster.values() for a in addrs]
    assert len(set(addresses)) == 4 and all(a.startswith("localhost:") for a in addresses)
    for name, cfg in configs.items():
        job, index = name.split()
        assert cfg["task"] == {"type": job, "index": int(index)}
        assert cfg["cluster"] == cluster
    assert "all tasks finished" in r.stderr
    assert "[progress] global step 7 | loss 0.5 | ended" in r.stderr
    assert "global_step" not in r.stdout  # protocol lines are consumed, not echoed
    logs = sorted(p.name for p in (tmp_path / "logs").iterdir())
    assert logs == ["chief-0.log", "ps-0.log", "worker-0.log", "worker-1.log"]
    assert (tmp_path / "logs" / "worker-1.log").read_text().startswith("TF_CONFIG=")


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_pass_flags_appends_seed_flags(tmp_path, task_script):
    r = _run(tmp_path, "--ps", "2", "--workers", "1", "--pass-flags", "--",
             sys.executable, str(task_script), "ok")
    assert r.returncode == 0, r.stderr
    argv = {line.split("] ")[0][1:]: json.loads(line.split("ARGV=")[1])
            for line in r.stdout.splitlines() if "ARGV=" in line}
    ps_hosts = argv["ps 1"][0]
    assert ps_hosts.startswith("--ps_hosts=localhost:") and ps_hosts.count(",") == 1
    assert argv["ps 1"][2:] == ["--job_name=ps", "--task_index=1"]
    assert argv["worker 0"][2:] == ["--job_name=worker", "--task_index=0"]
    assert argv["worker 0"][:2] == argv["ps 0"][:2]


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_failing_worker_stops_everything_and_is_reported(tmp_path, task_script):
    r = _run(tmp_path, "--ps", "1", "--workers", "2", "--kill-grace", "3", "--",
             sys.executable, str(task_script), "fail")
    assert r.returncode == 3, r.stderr
    assert "worker 1 failed (exit code 3); its last 20 output lines:" in r.stderr
    assert "    line 29" in r.stderr and "    line 9\n" not in r.stderr
    assert "line 10" in r.stderr
    pids = _pids(tmp_path)
    assert "worker-1" in pids
    _assert_all_gone(pids)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_ps_that_stays_is_stopped_after_grace(tmp_path, task_script):
    r = _run(tmp_path, "--ps", "1", "--workers", "1", "--ps-grace", "1", "--kill-grace", "2",
             "--", sys.executable, str(task_script), "ps_stays")
    # The workers succeeded, so the job did: the stopped ps is reported, not a failure.
    assert r.returncode == 0, r.stderr
    assert "ps 0 still running 1s after the last worker ended" in r.stderr
    assert "ps 0 stopped after --ps-grace 1s" in r.stderr
    _assert_all_gone(_pids(tmp_path))


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_sigint_stops_every_task_and_exits_130(tmp_path, task_script):
    env = dict(os.environ, PID_DIR=str(tmp_path / "pids"))
    proc = subprocess.Popen(_launch_cmd("--ps", "1", "--workers", "2", "--kill-grace", "1",
                                        "--", sys.executable, str(task_script), "hang"),
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while len(_pids(tmp_path)) < 6 and time.monotonic() < deadline:
            assert proc.poll() is None
            time.sleep(0.05)
        pids = _pids(tmp_path)
        assert len(pids) == 6
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "SIGINT received; stopping every task" in err
    assert "ps 0 did not stop after SIGTERM; sending SIGKILL" in err
    _assert_all_gone(pids)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_missing_program_and_timeout(tmp_path, task_script):
    r = _run(tmp_path, "--workers", "1", "--", "/no/such/program-tw")
    assert r.returncode == 127 and "/no/such/program-tw" in r.stderr
    r = _run(tmp_path, "--ps", "0", "--workers", "1", "--timeout", "1", "--kill-grace", "1",
             "--", sys.executable, str(task_script), "hang")
    assert r.returncode == 124 and "timed out after 1s" in r.stderr
    _assert_all_gone(_pids(tmp_path))


def test_progress_patterns_and_protocol():
    tracker = ProgressTracker()
    assert not tracker.feed("starting up")
    assert tracker.feed("worker 0: local step 20, global step 32, loss 0.0586, batch acc 1.0")
    assert tracker.feed("Global_step: 40 loss=1.5e-02")
    assert (tracker.global_step, tracker.loss) == (40, 0.015)
    assert tracker.feed("global step 35")  # a slower worker: the step never goes back
    assert tracker.global_step == 40
    assert tracker.feed_protocol('{"global_step": 50, "loss": 0.25}')
    assert not tracker.feed_protocol("not json")
    assert tracker.summary().startswith("global step 50 | ")
    assert PROGRESS_PREFIX.strip()


def test_topology_refuses_flags_with_chief():
    topo = Topology.local(ps=1, workers=1, chief=True)
    with pytest.raises(ValueError, match="no chief job"):
        topo.seed_flags(topo.tasks[0])


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_seed_trainer_runs_unchanged(tmp_path):
    r = _run(tmp_path, "--ps", "1", "--workers", "2", "--pass-flags", "--progress-interval",
             "0.2", "--", sys.executable, "examples/trainer.py", "--train_steps=60",
             "--hidden=16", f"--checkpoint_dir={tmp_path / 'ckpt'}", "--log_every=20",
             timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    # Which worker logs first depends on scheduling; both end.
    assert re.search(r"^\[worker [01]\] worker [01]: local step 20, global step", r.stdout,
                     re.MULTILINE)
    assert "[worker 0] worker 0: done" in r.stdout and "[worker 1] worker 1: done" in r.stdout
    assert "tensorweave launch: ps 0 finished" in r.stderr  # exited by itself
    assert "[progress] global step" in r.stderr and "loss" in r.stderr
    assert "all tasks finished" in r.stderr


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_a_ps_that_exits_between_two_polls_is_still_reported(monkeypatch):
    # The launcher reaps (reports) ended tasks, then asks which still run. A ps that
    # exits in between used to have its exit code recorded by that question and was
    # never reported: "all tasks finished" named only the other ps. Here every ps is
    # made to exit exactly there, after the round's reap.
    import io

    from tensorweave.launch import process
    from tensorweave.launch.launcher import LaunchOptions, Launcher
    script = ("import json, os, sys, time; t = json.loads(os.environ['TF_CONFIG'])['task']; "
              "time.sleep(1.0 if t['type'] == 'ps' else 0); sys.exit(0)")
    real_running = process.TaskProcess.running

    def running(self):
        if self.task.job == "ps" and self.proc is not None:
            self.proc.wait(30)   # the ps ends right after the reap that missed it
        return real_running.fget(self)
    monkeypatch.setattr(process.TaskProcess, "running", property(running))
    err = io.StringIO()
    code = Launcher([sys.executable, "-c", script], LaunchOptions(ps=2, workers=1),
                    out=io.StringIO(), err=err).run()
    assert code == 0, err.getvalue()
    for ps in (0, 1):
        assert f"ps {ps} exited by itself (exit code 0)" in err.getvalue(), err.getvalue()

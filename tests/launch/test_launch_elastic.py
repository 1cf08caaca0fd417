"""`tensorweave launch --max-workers` and `tensorweave scale` (issue 35, elastic jobs): an
async job started with 1 worker gains two more, its global step rate rises, one of them
is killed and the job still finishes (exit 0, saying which worker left) with nothing
waiting for it. Beyond TF 1.x, whose set of workers is fixed when the job starts."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from elastic_helpers import logged_steps as _steps, wait_for as _wait
from suite_markers import WHOLE_JOB
from suite_paths import REPO_ROOT
from tensorweave.distributed.membership import Members, write_members
from tensorweave.distributed.topology import Task
from tensorweave.launch.cli import main
from tensorweave.launch.control import JOB_FILE, request
from tensorweave.launch.process import TaskProcess
from tensorweave.launch.verdict import JobVerdict



def test_members_file_says_who_left(tmp_path):
    path = str(tmp_path / "members.json")
    assert not Members("").elastic and not Members("").left("/job:worker/replica:0/task:1")
    members = Members(path)
    assert not members.left("/job:worker/replica:0/task:1")  # no file yet: nobody left
    write_members(path, [0, 2])
    assert members.left("/job:worker/replica:0/task:1")
    assert not members.left("/job:worker/replica:0/task:2")
    assert not members.left("/job:ps/replica:0/task:1")  # only workers come and go
    write_members(path, [0, 1, 2])
    assert not members.left("/job:worker/replica:0/task:1")


def _ended(job: str, index: int, code: int) -> TaskProcess:
    tp = TaskProcess(Task(job, index), tail_lines=1, log=None)
    tp.returncode = code
    return tp


def test_elastic_verdict_is_the_chiefs_and_names_who_left():
    tasks = [_ended("ps", 0, 0), _ended("worker", 0, 0), _ended("worker", 1, -9)]
    assert not JobVerdict().decided(tasks)  # a fixed job needs every worker
    verdict = JobVerdict(elastic=True)
    assert verdict.deciding(tasks) == [tasks[1]] and verdict.decided(tasks)
    verdict.left["worker 1"] = "left the job (killed by SIGKILL)"
    code, line = verdict.outcome(tasks)
    assert code == 0 and "worker 0 (the chief) succeeded" in line
    assert "worker 1 left the job (killed by SIGKILL)" in line


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_bad_scale_requests_name_the_value(tmp_path, capsys):
    assert main(["launch", "--workers", "3", "--max-workers", "2", "--", "true"]) == 2
    assert "--max-workers 2 must be at least --workers 3" in capsys.readouterr().err
    assert main(["scale", str(tmp_path), "--workers", "2"]) == 2
    assert f"{str(tmp_path)!r} holds no running elastic job" in capsys.readouterr().err
    assert main(["scale", "nosuchjob", "--workers", "2"]) == 2
    assert "No running elastic job 'nosuchjob'" in capsys.readouterr().err


def _rate(logs: Path, since: float) -> float:
    """Global steps per second over the step lines logged since `since` (wall time)."""
    window = [(t, g) for t, g, _ in _steps(logs) if t >= since]
    assert len(window) >= 5, f"too few steps to measure since {since}: {window}"
    return (window[-1][1] - window[0][1]) / max(window[-1][0] - window[0][0], 1e-3)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_scale_up_raises_the_step_rate_and_a_killed_worker_leaves(tmp_path, capsys):
    logs, stop = tmp_path / "logs", tmp_path / "stop"
    err = (tmp_path / "launch.err").open("w")
    out = (tmp_path / "launch.out").open("w")
    # Paced steps (0.05 s asleep each): a worker's rate is bounded by its pace, not by
    # the two cores the suite shares, so three workers step clearly faster than one.
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorweave", "launch", "--ps", "1", "--workers", "1",
         "--max-workers", "3", "--logdir", str(logs), "--no-progress", "--timeout", "120",
         "--", sys.executable, "-m", "tensorweave.testing.fault_trainer",
         "--checkpoint_dir", str(tmp_path / "ck"), "--last_step", "1000000",
         "--save_steps", "1000000", "--step_secs", "0.05", "--stop_file", str(stop)],
        stdout=out, stderr=err, cwd=REPO_ROOT, env=dict(os.environ))
    try:
        _wait("20 steps of worker 0", lambda: len(_steps(logs)) >= 20, proc)
        mark = time.time()
        time.sleep(1.0)
        before = _rate(logs, mark)
        assert main(["scale", str(logs), "--workers", "3"]) == 0
        assert "started worker 1, worker 2; 3 of 3 worker slots" in capsys.readouterr().out

        def new_workers_train() -> bool:
            by = [w for _, _, w in _steps(logs)]
            return by.count(1) >= 10 and by.count(2) >= 10
        _wait("10 steps of each new worker", new_workers_train, proc)
        mark = time.time()
        time.sleep(1.0)
        after = _rate(logs, mark)
        assert after > 1.3 * before, f"global steps/s {before:.1f} -> {after:.1f} at 3 workers"

        pid = request(str(logs), {"op": "status"})["pids"]["2"]
        os.kill(pid, signal.SIGKILL)
        _wait("worker 2's leaving", lambda: "worker 2 left the job" in
              (tmp_path / "launch.err").read_text(), proc)
        trained = len(_steps(logs))
        _wait("training after worker 2 left", lambda: len(_steps(logs)) >= trained + 10, proc)
        assert main(["scale", str(logs), "--workers", "1"]) == 0  # worker 1 goes too
        assert "stopping worker 1; 1 of 3 worker slots" in capsys.readouterr().out
        _wait("worker 1's leaving", lambda: "worker 1 left the job" in
              (tmp_path / "launch.err").read_text(), proc)
        stopped = time.monotonic()
        stop.touch()
        assert proc.wait(timeout=60) == 0, (tmp_path / "launch.err").read_text()
        # The ps did not wait out worker 2's open session (45 s of health checks).
        assert time.monotonic() - stopped < 20
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
        out.close()
    text = (tmp_path / "launch.err").read_text()
    assert "worker 2 left the job (killed by SIGKILL); training goes on with 2 worker(s)" \
        in text
    assert "worker 1 left the job (stopped by tensorweave scale: killed by SIGTERM); " \
        "training goes on with 1 worker(s)" in text
    assert text.rstrip().splitlines()[-1].endswith(
        "worker 2 left the job (killed by SIGKILL); worker 1 left the job (stopped by "
        "tensorweave scale: killed by SIGTERM); exit code 0")
    assert not (logs / JOB_FILE).exists()  # the control endpoint went with the job

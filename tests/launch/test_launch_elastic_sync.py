"""Sync training that adapts (issue 35): a SyncReplicasOptimizer job of 3 workers
(`tensorweave launch --max-workers 3`) loses one to SIGKILL and keeps training, then
gets it back with `tensorweave scale`, and ends with exit 0. Each step aggregates
max(floor, min(replicas_to_aggregate, live)) gradients (kernels/replica_roster.py);
in TF 1.x the chief waited forever for the dead worker's gradient."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from elastic_helpers import logged_steps as _steps, wait_for as _wait
from suite_markers import WHOLE_JOB
from suite_paths import REPO_ROOT
from tensorweave.launch.cli import main
from tensorweave.launch.control import request



def _top(logs: Path) -> int:
    return max((g for _, g, _ in _steps(logs)), default=-1)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_sync_job_loses_a_worker_keeps_training_and_takes_it_back(tmp_path, capsys):
    logs, stop, err_path = tmp_path / "logs", tmp_path / "stop", tmp_path / "launch.err"
    err, out = err_path.open("w"), (tmp_path / "launch.out").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorweave", "launch", "--ps", "1", "--workers", "3",
         "--max-workers", "3", "--logdir", str(logs), "--no-progress", "--timeout", "120",
         "--", sys.executable, "-m", "tensorweave.testing.fault_trainer", "--sync",
         "--checkpoint_dir", str(tmp_path / "ck"), "--last_step", "1000000",
         "--save_steps", "1000000", "--step_secs", "0.02", "--stop_file", str(stop)],
        stdout=out, stderr=err, cwd=REPO_ROOT, env=dict(os.environ))
    try:
        def every_worker_trains() -> bool:
            return {w for _, _, w in _steps(logs)} == {0, 1, 2} and _top(logs) >= 5
        _wait("steps of all 3 workers", every_worker_trains, proc)
        os.kill(request(str(logs), {"op": "status"})["pids"]["2"], signal.SIGKILL)
        _wait("worker 2's leaving", lambda: "worker 2 left the job" in err_path.read_text(),
              proc)
        # The barrier needed 3 gradients; with worker 2 gone it takes the 2 live ones.
        left_at = _top(logs)
        _wait("10 global steps after worker 2 left", lambda: _top(logs) >= left_at + 10,
              proc, secs=30)
        assert main(["scale", str(logs), "--workers", "3"]) == 0
        assert "started worker 2; 3 of 3 worker slots" in capsys.readouterr().out
        back_at = _top(logs)

        def worker_2_trains_again() -> bool:
            return any(w == 2 and g > back_at for _, g, w in _steps(logs))
        _wait("worker 2's steps after it rejoined", worker_2_trains_again, proc)
        rejoined = _top(logs)
        _wait("10 global steps with worker 2 back", lambda: _top(logs) >= rejoined + 10,
              proc, secs=30)
        stop.touch()
        assert proc.wait(timeout=60) == 0, err_path.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        err.close()
        out.close()
    text = err_path.read_text()
    assert "worker 2 left the job (killed by SIGKILL), then rejoined" in text, text

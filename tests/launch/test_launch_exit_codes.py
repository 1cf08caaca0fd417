"""Issue 15, "launcher exit codes as cluster managers judge them": the job's exit code
is its workers' (or its chief's) verdict; what happened to each ps is reported, never
turned into a failure. (TF 1.x's ps never exits; Kubeflow's TFJob judges a job by its
chief or workers, so a ps the launcher has to stop is no failure.)"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = REPO_ROOT

# A valid between-graph program that uses a plain tf.Session: nobody tells the ps
# the job is done, so its server.join() serves until the launcher stops it.
PLAIN_SESSION_PROGRAM = textwrap.dedent("""
    import json, os
    import tensorweave as tf
    cfg = json.loads(os.environ["TF_CONFIG"])
    job, index = cfg["task"]["type"], cfg["task"]["index"]
    server = tf.train.Server(tf.train.ClusterSpec(cfg["cluster"]), job_name=job,
                             task_index=index)
    if job == "ps":
        server.join()
    else:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(0.0, name="v")
        add = tf.assign_add(v, 1.0)
        with tf.Session(server.target) as sess:
            if index == 0:
                sess.run(v.initializer)
            else:
                while not sess.run(tf.is_variable_initialized(v)):
                    pass
            for _ in range(3):
                sess.run(add)
        print("worker %d: done" % index, flush=True)
""")


def _launch(tmp_path: Path, program: str, *flags: str) -> subprocess.CompletedProcess:
    script = tmp_path / "prog.py"
    script.write_text(program)
    cmd = [sys.executable, "-m", "tensorweave", "launch", "--no-progress", *flags, "--",
           sys.executable, str(script)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=180,
                          check=False, env=dict(os.environ))


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_plain_session_program_exits_0_although_the_ps_is_stopped(tmp_path):
    # Beyond TF 1.x's launchers: a ps that never exits is stopped after --ps-grace and
    # reported, and the job still succeeds because every worker did.
    r = _launch(tmp_path, PLAIN_SESSION_PROGRAM, "--ps", "1", "--workers", "2",
                "--ps-grace", "1", "--kill-grace", "5")
    assert "[worker 0] worker 0: done" in r.stdout and "[worker 1] worker 1: done" in r.stdout
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ps 0 still running 1s after the last worker ended; stopping it" in r.stderr
    assert "every worker succeeded; ps 0 stopped after --ps-grace 1s" in r.stderr
    assert "exit code 0" in r.stderr


PS_FAILS_AFTER_WORKERS = textwrap.dedent("""
    import json, os, sys, time
    cfg = json.loads(os.environ["TF_CONFIG"])
    job = cfg["task"]["type"]
    if job == "ps":
        # Serves until the workers are gone, then exits badly (e.g. a crash at teardown).
        marker = os.path.join(os.path.dirname(__file__), "workers-done")
        while len(os.listdir(os.path.dirname(marker))) < 3:
            time.sleep(0.05)
        sys.exit(7)
    open(os.path.join(os.path.dirname(__file__), "w%d" % cfg["task"]["index"]), "w").close()
""")


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_ps_failing_after_the_workers_is_reported_not_counted(tmp_path):
    r = _launch(tmp_path, PS_FAILS_AFTER_WORKERS, "--ps", "1", "--workers", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ps 0 failed (exit code 7)" in r.stderr
    assert "ps 0 ended after the job had succeeded; reported, not counted" in r.stderr
    assert "ps 0 exit code 7" in r.stderr  # its fate, in the closing line


WORKER_FAILS = textwrap.dedent("""
    import json, os, sys, time
    cfg = json.loads(os.environ["TF_CONFIG"])
    if cfg["task"]["type"] == "ps":
        time.sleep(60)
    sys.exit(5 if cfg["task"]["index"] == 1 else 0)
""")


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_a_failed_worker_is_still_the_exit_code(tmp_path):
    r = _launch(tmp_path, WORKER_FAILS, "--ps", "1", "--workers", "2", "--kill-grace", "2")
    assert r.returncode == 5, r.stdout + r.stderr
    assert "worker 1 failed (exit code 5)" in r.stderr


CHIEF_DECIDES = textwrap.dedent("""
    import json, os, sys, time
    cfg = json.loads(os.environ["TF_CONFIG"])
    here = os.path.dirname(os.path.abspath(__file__))
    if cfg["task"]["type"] == "chief":
        sys.exit(0)
    if cfg["task"]["type"] == "worker":
        # Ends badly once the chief has been reported finished (the launcher's log file).
        while "chief 0 finished" not in open(os.path.join(here, "launch.err")).read():
            time.sleep(0.05)
        sys.exit(4)
""")


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_with_a_chief_the_chief_decides(tmp_path):
    # TFJob's default success policy: with a chief, the job succeeds when the chief
    # does; a worker failing after that is reported.
    script = tmp_path / "prog.py"
    script.write_text(CHIEF_DECIDES)
    cmd = [sys.executable, "-m", "tensorweave", "launch", "--no-progress", "--ps", "0",
           "--workers", "1", "--chief", "--", sys.executable, str(script)]
    with open(tmp_path / "launch.err", "w") as err:
        code = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                              timeout=120, check=False).returncode
    text = (tmp_path / "launch.err").read_text()
    assert code == 0, text
    assert "worker 0 failed (exit code 4)" in text
    assert "worker 0 ended after the job had succeeded; reported, not counted" in text
    assert "the chief succeeded" in text

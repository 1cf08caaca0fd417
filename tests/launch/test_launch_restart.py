"""`tensorweave launch --restart`: a ps killed with SIGKILL mid-run comes back on its port
and the seed trainer finishes (exit 0); policies per role; restarts used up fail the job
with a clear message. Beyond TF 1.x, which has no launcher: the policies follow
Kubernetes' restartPolicy and Kubeflow's TFJob."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Callable
from pathlib import Path

import pytest

from tensorweave.launch.cli import main
from tensorweave.launch.restart import RestartBook, RestartPolicy, parse_restart
from suite_paths import REPO_ROOT
from suite_markers import WHOLE_JOB

ROOT = REPO_ROOT

# Each start of a task appends a line to STARTS/<job>-<index> (its pid), so a test
# can count starts and check that every process is gone at the end.
TASK_SCRIPT = textwrap.dedent("""
    import json, os, sys, time
    cfg = json.loads(os.environ["TF_CONFIG"])
    job, idx = cfg["task"]["type"], cfg["task"]["index"]
    mode, starts = sys.argv[1], os.path.join(os.environ["STARTS"], f"{job}-{idx}")
    with open(starts, "a") as f:
        f.write(f"{os.getpid()}\\n")
    count = len(open(starts).read().split())
    print(f"start {count}", flush=True)
    if mode == "worker_fails" and (job, idx) == ("worker", 1):
        sys.exit(3)
    if mode == "ps_exits_early":
        if job == "ps" and count == 1:
            sys.exit(0)  # too early: the workers still need it
        if job == "ps":
            time.sleep(300)
        ps_starts, deadline = os.path.join(os.environ["STARTS"], "ps-0"), time.time() + 60
        while not (os.path.exists(ps_starts) and len(open(ps_starts).read().split()) >= 2):
            if time.time() > deadline:
                sys.exit(4)
            time.sleep(0.05)
        sys.exit(0)  # done once the ps has come back
    # "ends": the ps exits 0 first (as ours do when the chief says the job is done),
    # the workers a moment later.
    time.sleep(0.5 if job == "ps" else 2.0)
    sys.exit(0)
""")


def _alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _assert_gone(pids: set[int]) -> None:
    deadline = time.monotonic() + 5  # reparented processes are reaped asynchronously
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.05)
    assert not [p for p in pids if _alive(p)]


def _launch(tmp_path: Path, *args: str, mode: str, timeout: float = 60
            ) -> subprocess.CompletedProcess:
    script = tmp_path / "task.py"
    script.write_text(TASK_SCRIPT)
    (tmp_path / "starts").mkdir(exist_ok=True)
    env = dict(os.environ, STARTS=str(tmp_path / "starts"))
    return subprocess.run([sys.executable, "-m", "tensorweave", "launch", *args, "--",
                           sys.executable, str(script), mode], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout, check=False)


def _starts(tmp_path: Path) -> dict[str, list[int]]:
    return {p.name: [int(x) for x in p.read_text().split()]
            for p in (tmp_path / "starts").iterdir()}


def test_parse_restart_forms():
    assert parse_restart("on-failure") == {"*": "on-failure"}
    assert parse_restart("ps=always, worker=on-failure") == {"ps": "always",
                                                              "worker": "on-failure"}
    policy = RestartPolicy(parse_restart("never,ps=always"))
    assert (policy.policy("ps"), policy.policy("worker"), policy.policy("chief")) == \
        ("always", "never", "never")
    assert RestartPolicy(parse_restart("ps=on-failure")).policy("worker") == "never"
    assert RestartPolicy().describe() == "never" and not RestartPolicy().enabled


@pytest.mark.parametrize("spec, message", [
    ("sometimes", "'sometimes' is not a restart policy; use never, on-failure or always"),
    ("ps=often", "'often' is not a restart policy"),
    ("master=always", "'master' is not a role; roles are ps, worker, chief, evaluator"),
    ("ps=always,ps=never", "names 'ps' twice"),
    ("always,never", "two policies for every role"),
    ("ps=always,", "empty part"),
])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_bad_restart_values_name_the_offending_part(spec, message, capsys):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_restart(spec)
    with pytest.raises(SystemExit) as exc:  # argparse: usage, the message, exit 2
        main(["launch", "--restart", spec, "--", "true"])
    assert exc.value.code == 2
    assert f"argument --restart: --restart {spec!r}" in capsys.readouterr().err


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_bad_counts_and_roles_the_cluster_lacks(capsys):
    assert main(["launch", "--restart", "on-failure", "--max-restarts", "-1", "--",
                 "true"]) == 2
    assert "--max-restarts -1 must be 0 or more" in capsys.readouterr().err
    assert main(["launch", "--restart", "on-failure", "--restart-backoff", "5",
                 "--restart-backoff-max", "1", "--", "true"]) == 2
    assert "must satisfy 0 <= backoff <= max" in capsys.readouterr().err
    assert main(["launch", "--restart", "chief=always", "--", "true"]) == 2
    assert "names chief, which this cluster does not have" in capsys.readouterr().err


def test_backoff_doubles_up_to_its_cap_and_counts_per_task():
    policy = RestartPolicy({"*": "on-failure"}, max_restarts=5, backoff=0.5, backoff_max=3)
    assert [policy.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    book = RestartBook(policy)
    assert book.on_exit("worker 0", "worker", 0, now=0.0) is None  # exit 0 is done
    message = book.on_exit("ps 0", "ps", -9, now=10.0)
    assert message is not None and "restarting ps 0 (killed by SIGKILL) in 0.5s" in message
    assert book.due(10.4) == [] and [p.name for p in book.due(10.5)] == ["ps 0"]
    always = RestartBook(RestartPolicy({"ps": "always"}, max_restarts=1))
    assert "unless the job ends meanwhile" in (always.on_exit("ps 0", "ps", 0, 0.0) or "")
    assert always.pending["ps 0"].clean and always.pending["ps 0"].due == 5.0


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_restarts_used_up_fail_the_job_with_a_clear_message(tmp_path):
    r = _launch(tmp_path, "--ps", "1", "--workers", "2", "--restart", "worker=on-failure",
                "--max-restarts", "2", "--restart-backoff", "0.1", "--kill-grace", "2",
                "--logdir", str(tmp_path / "logs"), mode="worker_fails")
    assert r.returncode == 3, r.stderr
    assert "restarting worker 1 (exit code 3) in 0.1s, restart 1 of 2" in r.stderr
    assert "restarting worker 1 (exit code 3) in 0.2s, restart 2 of 2" in r.stderr
    assert ("worker 1 exit code 3 after 2 restart(s), the most --max-restarts 2 allows; "
            "not restarting it") in r.stderr
    assert "[worker 1] start 3" in r.stdout and "start 4" not in r.stdout
    # A restarted task's log continues.
    assert (tmp_path / "logs" / "worker-1.log").read_text() == "start 1\nstart 2\nstart 3\n"
    starts = _starts(tmp_path)
    assert len(starts["worker-1"]) == 3 and len(starts["ps-0"]) == 1  # ps: never
    _assert_gone({p for pids in starts.values() for p in pids})


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_always_restarts_an_early_clean_exit_but_not_the_jobs_end(tmp_path):
    # The ps returns 0 while the workers still need it: restarted after the settle time.
    r = _launch(tmp_path, "--ps", "1", "--workers", "2", "--restart", "ps=always",
                "--ps-grace", "1", "--kill-grace", "2", mode="ps_exits_early")
    assert r.returncode == 0, r.stderr
    assert ("ps 0 exited 0 while the job runs; restarting it in 5s unless the job ends "
            "meanwhile, restart 1 of 3 (--restart ps=always)") in r.stderr
    assert "restarted ps 0 (pid" in r.stderr
    _assert_gone({p for pids in _starts(tmp_path).values() for p in pids})



@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_always_does_not_restart_a_finished_job(tmp_path):
    # The ps exits 0 before the workers (the chief told it the job is done): the job
    # ends within the settle time, so nothing is restarted.
    r = _launch(tmp_path, "--ps", "1", "--workers", "2", "--restart", "always", mode="ends")
    assert r.returncode == 0, r.stderr
    assert "ps 0 exited 0 while the job runs; restarting it in 5s" in r.stderr
    assert "ps 0 not restarted: the job has ended" in r.stderr
    assert not re.search(r"^tensorweave launch: restarted ", r.stderr, re.MULTILINE)
    assert all(len(pids) == 1 for pids in _starts(tmp_path).values())


def _children(pid: int) -> set[int]:
    out: set[int] = set()
    for t in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{t}/children") as f:
            out |= {int(c) for c in f.read().split()}
    return out


def _job_of(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
    except (FileNotFoundError, ProcessLookupError):
        return None
    return json.loads(env[b"TF_CONFIG"])["task"]["type"] if b"TF_CONFIG" in env else None


def _wait_for(proc: subprocess.Popen, out: list[str], ready: Callable[[], bool]) -> None:
    """Until the job's step lines show global step 300 (of 600: the replica, 0.1 s
    behind, is then past half of it at any step rate) and `ready()` holds."""
    deadline = time.monotonic() + 120
    while max(map(int, re.findall(r"global step (\d+)", "".join(out))), default=0) < 300 \
            or not ready():
        assert proc.poll() is None and time.monotonic() < deadline, "".join(out)[-3000:]
        time.sleep(0.02)


@pytest.mark.slow
@pytest.mark.parametrize("standby", [False, True], ids=["incremental_checkpoint", "ps_standby"])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_seed_trainer_finishes_after_its_ps_is_killed(tmp_path, standby):
    """`--restart on-failure`: SIGKILL the ps at global step >= 300 of 600; the launcher
    restarts it on its port, the workers re-create their sessions, training finishes,
    exit 0, no process left. Without standby (no replica survives) the chief restores the
    first full checkpoint plus the chain of incremental ones saved every 0.2 s since
    (DeepRec's flag; the ps is killed once one exists), so training goes on from near
    where it was. With `--ps-standby 1` (and the seed flags, whose ClusterSpec names no
    standby job: the ps finds it through TENSORWEAVE_PS_STANDBY) and no checkpoint after
    step 0, the
    restarted ps loads its replica from the standby task, the chief restores nothing, and
    the global step goes on from near where it was (the replica is 0.1 s behind; a
    restore would go back to 0); the launcher stops the standby after the ps."""
    err_file = tmp_path / "stderr.txt"
    extra = ["--ps-standby", "1", "--pass-flags"] if standby else []
    with open(err_file, "w") as err_out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tensorweave", "launch", "--restart", "on-failure",
             *extra, "--progress-interval", "0.2", "--", sys.executable,
             "examples/trainer.py", "--train_steps=600", "--hidden=16",
             f"--checkpoint_dir={tmp_path / 'ckpt'}",
             "--save_checkpoint_steps=100000", "--log_every=10",
             *([] if standby else ["--save_incremental_checkpoint_secs=0.2"])],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=err_out, text=True)
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.extend(proc.stdout or []), daemon=True)
    reader.start()
    pids: set[int] = set()
    incremental = tmp_path / "ckpt" / ".incremental_checkpoint" / "checkpoint"
    try:
        _wait_for(proc, out, lambda: standby or incremental.exists())
        pids = _children(proc.pid)
        (ps,) = [p for p in pids if _job_of(p) == "ps"]
        # the newest incremental checkpoint's step (one saved after this only adds)
        saved = 0 if standby else int(re.findall(r"-(\d+)\"", incremental.read_text())[0])
        os.kill(ps, signal.SIGKILL)
        before = len(out)
        at_kill = max(map(int, re.findall(r"global step (\d+)", "".join(out))))
        proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(5)
    stdout, err = "".join(out), err_file.read_text()
    assert proc.returncode == 0, stdout[-3000:] + err
    assert "ps 0 failed (killed by SIGKILL)" in err
    assert "restarting ps 0 (killed by SIGKILL) in 1s, restart 1 of 3" in err
    restarted = re.search(r"restarted ps 0 \(pid (\d+); it had ended: killed by SIGKILL\)", err)
    assert restarted, err
    assert "restarted ps 0 x1 (killed by SIGKILL)" in err  # on the progress line
    assert "[worker 0] worker 0: done" in stdout and "[worker 1] worker 1: done" in stdout
    after = [int(s) for s in re.findall(r"global step (\d+)", "".join(out[before:]))]
    assert after and min(after) >= (at_kill // 2 if standby else saved), (at_kill, after[:5])
    if standby:
        assert re.search(r"\[ps 0\] .*loaded \d+ variables from its replica on "
                         r"/job:ps_standby/replica:0/task:0", stdout), stdout[-3000:]
        assert "live on the ps tasks" in stdout and "restored checkpoint" not in stdout
        # the chief's ClusterSpec (from the flags) names no standby to tell: the launcher
        # stops it once the ps has exited
        assert "ps_standby 0 stopped once the ps tasks had ended" in err, err
    else:
        # (prefixed by tf.logging's "WARNING:tensorweave.train:" once a hook has logged)
        assert re.search(r"\[worker 0\] (?:WARNING:[\w.]+:)?Session re-created on .*: "
                         r"restored checkpoint "
                         r".*\.incremental_checkpoint/incremental_model\.ckpt-\d+", stdout
                         ), stdout[-3000:]
    assert "all tasks finished: every worker succeeded; ps 0 exited by itself" in err
    _assert_gone(pids | {int(restarted.group(1))})

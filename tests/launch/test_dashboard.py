"""Issue 36: the live dashboard, used as a person would. A 1 ps + 2 worker job runs
under `tensorweave launch --dashboard --restart ps=on-failure`; headless Chromium
(Debian's `chromium` package) loads the page, which names every task and shows the global
step rising; `tensorweave dashboard --cluster ... --auth-token-file ...` serves the same
cluster on its own; the ps is killed with SIGKILL and its restart shows as an event on
both. A screenshot of the page is saved in the test's temporary directory (the README's
picture, docs/dashboard.png, is of a longer sync job: docs/dashboard.md says how it was made).

Without Chromium the test is skipped, saying how to install it (`apt-get install
chromium`). The dashboard's parts without a job: tests/launch/test_dashboard_units.py."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable

import pytest

from suite_markers import WHOLE_JOB
from suite_paths import REPO_ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TASKS = ("ps 0", "worker 0", "worker 1")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed: the dashboard test loads "
    "the page in Debian's `chromium` package (`apt-get install chromium`)")


def _chromium(url: str, profile: Path, *flags: str) -> str:
    """Runs headless Chromium on `url` (JS runs for 2 s of virtual time); its stdout."""
    out = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
         "--window-size=1280,900", "--virtual-time-budget=2000", *flags, url],
        capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _page(url: str, profile: Path) -> str:
    return _chromium(url, profile, "--dump-dom")


def _shown_step(dom: str) -> int:
    m = re.search(r'id="global-step">([\d,]+)<', dom)
    assert m, dom[:3000]
    return int(m.group(1).replace(",", ""))


def _api(url: str, path: str) -> Any:
    with urllib.request.urlopen(url + path, timeout=10) as resp:
        return json.loads(resp.read())


def _wait(what: str, ready: Callable[[], Any], deadline_s: float = 40) -> Any:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _line(path: Path, pattern: str) -> Callable[[], re.Match | None]:
    return lambda: re.search(pattern, path.read_text())


def _ps_pid(launcher: int) -> int | None:
    """The ps task: the launcher's child whose command line says --job_name=ps."""
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if ppid == launcher and b"--job_name=ps" in cmd:
            return int(entry)
    return None


def _all_up(url: str) -> bool:
    c = _api(url, "api/cluster")
    return all(t["up"] for t in c["tasks"]) and (c["global"]["step"] or 0) > 0


def _restart_events(url: str, source: str) -> list[dict]:
    return [e for e in _api(url, "api/events")["events"]
            if e["kind"] == "restart" and e["task"] == "ps 0" and e["source"] == source]


def _standalone(tmp_path: Path, err: Path) -> tuple[subprocess.Popen, str]:
    """`tensorweave dashboard` on the launched cluster, with its token file."""
    text = err.read_text()
    token = re.search(r"TENSORWEAVE_AUTH_TOKEN_FILE=(\S+)", text).group(1)  # type: ignore
    spec: dict[str, list[str]] = {}
    for job, address in re.findall(r"(ps|worker) \d at (localhost:\d+)", text):
        spec.setdefault(job, []).append(address)
    out = tmp_path / "standalone.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tensorweave", "dashboard", "--cluster", json.dumps(spec),
         "--auth-token-file", token, "--port", "0", "--interval", "0.5"],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=open(out, "w"))  # noqa: SIM115
    m = _wait("the standalone dashboard's URL", _line(out, r"dashboard: (http://\S+/)"), 30)
    return proc, m.group(1)


@pytest.mark.slow
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_dashboard_in_chromium_names_every_task_shows_steps_and_a_ps_restart(tmp_path):
    err = tmp_path / "launch.err"
    launcher = subprocess.Popen(
        [sys.executable, "-m", "tensorweave", "launch", "--ps", "1", "--workers", "2",
         "--pass-flags", "--restart", "ps=on-failure", "--dashboard", "--progress-interval",
         "1", "--", sys.executable, "examples/trainer.py", "--train_steps=10000000",
         "--hidden=16", f"--checkpoint_dir={tmp_path / 'ckpt'}", "--log_every=20"],
        cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=open(err, "w"))  # noqa: SIM115
    standalone: subprocess.Popen | None = None
    profile = tmp_path / "chromium-profile"
    try:
        url = _wait("the dashboard's URL", _line(err, r"dashboard at (http://\S+/)")).group(1)
        _wait("every task up and a global step", lambda: _all_up(url))
        standalone, alone_url = _standalone(tmp_path, err)
        _wait("the standalone dashboard to see every task up", lambda: all(
            t["up"] for t in _api(alone_url, "api/cluster")["tasks"]), 20)

        # The ps is killed first, so two page loads (each a Chromium start, the test's
        # costliest part) show the tasks, the restart event and a rising global step.
        ps = _ps_pid(launcher.pid)
        assert ps is not None
        os.kill(ps, signal.SIGKILL)
        _wait("the ps restart as the launcher's event", lambda: _restart_events(url, "launcher"))
        _wait("the ps restart seen by scraping", lambda: _restart_events(url, "scrape"), 30)
        _wait("the standalone dashboard to see the restart",
              lambda: _restart_events(alone_url, "scrape"), 20)
        _wait("every task up again and training", lambda: _all_up(url))
        first = _page(url, profile)
        for task in TASKS:
            assert f'data-task="{task}"' in first, (task, first[:3000])
        assert re.search(r'<li class="event restart"[^>]*><time>[^<]*</time>restarted ps 0 '
                         r"\(pid \d+; it had ended: killed by SIGKILL\)", first), first[-3000:]
        step = _shown_step(first)
        time.sleep(1.5)
        second = _page(url, profile)
        assert _shown_step(second) > step > 0
        assert "nothing waits" in second and "w1" in second  # sync card; ps's hottest variable
        shot = tmp_path / "dashboard.png"
        _chromium(url, profile, f"--screenshot={shot}")
        assert shot.stat().st_size > 20_000
        print(f"dashboard screenshot: {shot}")
    finally:
        for proc in (standalone, launcher):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in (standalone, launcher):
            if proc is not None:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
    assert standalone is not None and standalone.returncode == 0
    assert launcher.returncode == 130, err.read_text()[-3000:]

"""The dashboard's memory: every task scraped once a second, a short history, events.

`Collector.tick` scrapes every task at once (one thread each, from a small pool), keeps
the two latest scrapes per task (rates need two), appends a point to the history (global
step, steps/s, loss, each worker's steps/s, each ps's update bytes/s) and turns what
changed into events: a task that stops answering, answers again, or answers with a new
incarnation (it restarted). The launcher adds its own events (`say`): restarts, failures,
workers leaving. The HTTP side (server.py) only reads, under the same lock.

Example:
    >>> c = Collector({"ps 0": "localhost:2222"}, interval=1.0)  # doctest: +SKIP
    >>> c.start(); c.cluster()["tasks"][0]["up"]                   # doctest: +SKIP
    True
"""
from __future__ import annotations

import re
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.launch.dashboard.scrape import Metrics, ScrapeError, scrape
from tensorweave.launch.dashboard.view import Sample, cluster_view, incarnation

__all__ = ["Collector", "Progress", "classify"]

# (global step, steps/s, loss) as the launcher reads them from the tasks' output.
Progress = Callable[[], tuple[int | None, float | None, float | None]]
Scraper = Callable[[str, Credentials | None, float], Metrics]

_TASK = re.compile(r"\b(ps_standby|ps|worker|chief|evaluator) (\d+)\b")
_FAULT = re.compile(r"failed|killed|left the job|did not stop|timed out|cannot|still running"
                    r"|stopped answering|SIGINT|SIGTERM", re.IGNORECASE)
_RESTART = re.compile(r"\brestart", re.IGNORECASE)
_EVENTS_KEPT = 500
_TAIL_LINES = re.compile(r"; its last \d+ output lines:$")


def classify(message: str) -> tuple[str, str | None]:
    """(kind, task) of a launcher message: kind "restart", "fault" or "info"; the first
    task it names ("ps 0"), if any."""
    first = message.splitlines()[0] if message else ""
    m = _TASK.search(first)
    kind = "restart" if _RESTART.search(first) else "fault" if _FAULT.search(first) else "info"
    return kind, (f"{m.group(1)} {m.group(2)}" if m else None)


class Collector:
    """Scrapes a cluster's tasks every `interval` seconds and keeps what the page shows.

    Args:
        addresses: task name ("worker 1") -> "host:port", in the order the page lists them.
        credentials: what a scrape presents (the cluster's token, TLS); None: nothing.
        interval: seconds between scrapes.
        progress: the launcher's global step, steps/s and loss (None: standalone, where
            the global step rate is the global_step variable's updates on the ps tasks).
        states: the launcher's word on each task ("running", "ended"), if any.
        window: points of history kept (interval x window seconds).
        scraper: how one task is scraped (tests pass a fake).
    """

    def __init__(self, addresses: dict[str, str], credentials: Credentials | None = None,
                 interval: float = 1.0, progress: Progress | None = None,
                 states: Callable[[], dict[str, str]] | None = None, window: int = 600,
                 scraper: Scraper = scrape) -> None:
        self.addresses = dict(addresses)
        self.credentials = credentials
        self.interval = interval
        self._progress = progress
        self._states = states
        self._scraper = scraper
        self._lock = threading.Lock()
        self._samples: dict[str, tuple[Sample | None, Sample]] = {}
        self._good: dict[str, Sample] = {}  # each task's last scrape that answered
        self._view: dict[str, Any] = cluster_view(self.addresses, {})
        self._series: deque[dict[str, Any]] = deque(maxlen=window)
        self._events: deque[dict[str, Any]] = deque(maxlen=_EVENTS_KEPT)
        self._next_event = 1
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(max(1, min(16, len(addresses))),
                                        thread_name_prefix="dashboard-scrape")
        self._thread: threading.Thread | None = None

    # ----- running ------------------------------------------------------------------

    def start(self) -> None:
        """Scrapes in a daemon thread until `close()`."""
        self._thread = threading.Thread(target=self._loop, name="dashboard-collector",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stops scraping (waits for a round in flight, at most a few seconds)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            self.tick()
            self._stop.wait(max(0.0, self.interval - (time.monotonic() - started)))

    def _scrape_one(self, address: str) -> Sample:
        t = time.time()
        try:
            return Sample(t, self._scraper(address, self.credentials,
                                           max(0.5, min(2.0, self.interval * 2))))
        except ScrapeError as e:
            return Sample(t, error=str(e))

    def tick(self) -> None:
        """One round: scrape every task, update the view, the history and the events."""
        futures = {n: self._pool.submit(self._scrape_one, a)
                   for n, a in self.addresses.items() if a}
        fresh = {n: f.result() for n, f in futures.items()}
        states = self._states() if self._states else {}
        with self._lock:
            for name, now in fresh.items():
                previous = self._samples.get(name, (None, None))[1]
                good = self._good.get(name)  # rates span a failed scrape or two
                self._notice(name, previous, now, good, states.get(name))
                self._samples[name] = (good, now)
                if now.metrics is not None:
                    self._good[name] = now
            self._view = cluster_view(self.addresses, self._samples, states)
            self._view["global"] = self._global()
            self._series.append(self._point(time.time()))

    # ----- what changed -------------------------------------------------------------

    def _notice(self, name: str, before: Sample | None, now: Sample, good: Sample | None,
                state: str | None) -> None:
        """Events from two consecutive scrapes of one task (lock held); `good` is its
        last scrape that answered. A task the launcher saw end is its event, not ours."""
        if before is None:
            return
        was_up, is_up = before.metrics is not None, now.metrics is not None
        if was_up and not is_up:
            if state not in ("ended", "empty slot"):
                self._add(f"{name} stopped answering scrapes ({now.error})", "fault", name,
                          "scrape")
            return
        if not is_up or good is None:  # still starting: it never answered yet
            return
        old, new = incarnation(good.metrics), incarnation(now.metrics)
        if old and new and old != new:
            self._add(f"{name} restarted (new incarnation {new})", "restart", name, "scrape")
        elif not was_up:
            self._add(f"{name} answers scrapes again", "info", name, "scrape")

    def say(self, message: str) -> None:
        """Records a launcher message as an event (its first line)."""
        kind, task = classify(message)
        first = message.splitlines()[0] if message else ""
        first = _TAIL_LINES.sub("", first)[:300]  # the task's output lines stay in the log
        with self._lock:
            self._add(first, kind, task, "launcher")

    def _add(self, text: str, kind: str, task: str | None, source: str) -> None:
        self._events.append({"id": self._next_event, "t": time.time(), "kind": kind,
                             "task": task, "text": text, "source": source})
        self._next_event += 1

    def _global(self) -> dict[str, Any]:
        step, rate, loss = self._progress() if self._progress else (None, None, None)
        source = "launcher" if self._progress else "scrape"
        if rate is None:
            rate = self._view.get("global_step_updates_per_s")
        return {"step": step, "rate": rate, "loss": loss, "source": source}

    def _point(self, t: float) -> dict[str, Any]:
        g = self._view["global"]
        return {"t": t, "step": g["step"], "rate": g["rate"], "loss": g["loss"],
                "workers": {r["name"]: r.get("step_rate") for r in self._view["tasks"]
                            if r["job"] in ("chief", "worker", "master")},
                "ps": {p["task"]: p["bytes_per_s"] for p in self._view["ps"]}}

    # ----- what the page reads ------------------------------------------------------

    def cluster(self) -> dict[str, Any]:
        """The cluster now: tasks, links, ps loads, sync waits, the global numbers."""
        with self._lock:
            return dict(self._view, t=time.time(), interval=self.interval)

    def series(self, since: float = 0.0) -> list[dict[str, Any]]:
        """History points after time `since` (seconds since the epoch)."""
        with self._lock:
            return [p for p in self._series if p["t"] > since]

    def events(self, after: int = 0) -> list[dict[str, Any]]:
        """Events whose id is above `after`, oldest first."""
        with self._lock:
            return [e for e in self._events if e["id"] > after]

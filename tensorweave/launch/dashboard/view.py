"""What the dashboard shows, computed from two consecutive scrapes of every task.

Pure functions over `Metrics` (no threads, no I/O), so each number the page shows is
tested without a cluster: per task its step rate, CPU and memory; per link between two
tasks its bytes/s; per ps its update load and hottest variables; who sync training
waits for; which workers straggle.

Rates are (now - before) / seconds; a counter that went down (its task restarted) counts
from zero, as Prometheus' `rate()` does.

Example:
    >>> task_name("/job:ps/replica:0/task:1")
    'ps 1'
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Any

from tensorweave.launch.dashboard.scrape import Metrics

__all__ = ["Sample", "STRAGGLER_FRACTION", "cluster_view", "incarnation", "task_name"]

# A worker is marked a straggler below this fraction of the workers' median step rate.
STRAGGLER_FRACTION = 0.5
HOTTEST = 5  # variables listed per ps
_TASK = re.compile(r"/job:([^/]+)/replica:\d+/task:(\d+)")
_TRAINING_JOBS = ("chief", "worker", "master")


def task_name(device: str) -> str:
    """"ps 0" for "/job:ps/replica:0/task:0" (the launcher's names); other text as is."""
    m = _TASK.search(device)
    return f"{m.group(1)} {m.group(2)}" if m else device


@dataclass
class Sample:
    """One scrape of one task: its metrics, or why there are none."""

    t: float  # time.time() of the scrape
    metrics: Metrics | None = None
    error: str | None = None


def _rate(name: str, before: Sample | None, now: Sample, **labels: str) -> float | None:
    if now.metrics is None or before is None or before.metrics is None or now.t <= before.t:
        return None
    v1 = now.metrics.value(name, **labels)
    if v1 is None:
        return None
    v0 = before.metrics.value(name, **labels) or 0.0
    return (v1 - v0 if v1 >= v0 else v1) / (now.t - before.t)


def _rates(name: str, label: str, before: Sample | None, now: Sample) -> dict[str, float]:
    """Per-`label` rates of a counter (empty before two scrapes)."""
    if now.metrics is None or before is None or before.metrics is None or now.t <= before.t:
        return {}
    v0, v1 = before.metrics.by_label(name, label), now.metrics.by_label(name, label)
    dt = now.t - before.t
    return {k: (v - v0.get(k, 0.0) if v >= v0.get(k, 0.0) else v) / dt for k, v in v1.items()}


def incarnation(metrics: Metrics | None) -> str | None:
    """The task's incarnation (`tensorweave_task_info`): it changes when the task restarts."""
    labels = metrics.labels("tensorweave_task_info") if metrics else []
    return labels[0].get("incarnation") if labels else None


def _task_row(name: str, address: str, before: Sample | None, now: Sample | None,
              state: str | None) -> dict[str, Any]:
    job, _, index = name.rpartition(" ")
    row: dict[str, Any] = {"name": name, "job": job, "index": int(index or 0),
                           "address": address, "up": bool(now and now.metrics),
                           "state": state, "error": now.error if now else None}
    if now is None or now.metrics is None:
        return row
    m = now.metrics
    cpu = _rate("process_cpu_seconds_total", before, now)
    row.update(steps=m.value("tensorweave_steps_total"),
               step_rate=_rate("tensorweave_steps_total", before, now),
               cpu=cpu, rss=m.value("process_resident_memory_bytes"),
               threads=m.value("process_threads"), incarnation=incarnation(m),
               sessions=m.value("tensorweave_open_sessions"))
    return row


def _links(samples: dict[str, tuple[Sample | None, Sample]]) -> list[dict[str, Any]]:
    """Bytes/s between two tasks. Each end counts the link's tensors (what it sent and
    received); the two counts agree up to what one end could not see, so the larger wins
    instead of their sum (which would count each tensor twice)."""
    seen: dict[tuple[str, str], float] = {}
    for name, (before, now) in samples.items():
        both: dict[str, float] = {}
        for family in ("tensorweave_peer_sent_bytes_total",
                       "tensorweave_peer_received_bytes_total"):
            for peer, r in _rates(family, "peer", before, now).items():
                both[task_name(peer)] = both.get(task_name(peer), 0.0) + r
        for peer, r in both.items():
            key = (min(name, peer), max(name, peer))
            seen[key] = max(seen.get(key, 0.0), r)
    return [{"a": a, "b": b, "bytes_per_s": r} for (a, b), r in sorted(seen.items())]


def _ps_load(name: str, before: Sample | None, now: Sample) -> dict[str, Any] | None:
    """A task's variable updates (a ps's load), with its hottest variables by bytes/s."""
    if now.metrics is None:
        return None
    totals = now.metrics.by_label("tensorweave_variable_update_bytes_total", "variable")
    if not totals:
        return None
    byte_rates = _rates("tensorweave_variable_update_bytes_total", "variable", before, now)
    update_rates = _rates("tensorweave_variable_updates_total", "variable", before, now)
    counts = now.metrics.by_label("tensorweave_variable_updates_total", "variable")
    rows = [{"variable": v, "bytes": b, "bytes_per_s": byte_rates.get(v),
             "updates": counts.get(v), "updates_per_s": update_rates.get(v)}
            for v, b in totals.items()]
    rows.sort(key=lambda r: (r["bytes_per_s"] or 0.0, r["bytes"]), reverse=True)
    return {"task": name, "variables": len(rows), "hottest": rows[:HOTTEST],
            "bytes": sum(totals.values()),
            "bytes_per_s": sum(byte_rates.values()) if byte_rates else None,
            "updates_per_s": sum(update_rates.values()) if update_rates else None}


def _sync_waits(name: str, now: Sample) -> list[dict[str, Any]]:
    """The sync barrier's takes waiting now on this task, and for whom."""
    m = now.metrics
    if m is None:
        return []
    waiting = m.by_label("tensorweave_sync_barrier_waiting_seconds", "accumulator")
    depth = m.by_label("tensorweave_accumulator_depth", "accumulator")
    out = []
    for acc, secs in sorted(waiting.items()):
        missing = sorted(task_name(r) for r, v in m.by_label(
            "tensorweave_sync_barrier_waiting_for", "replica", accumulator=acc).items() if v)
        if secs > 0 or missing:
            out.append({"task": name, "accumulator": acc, "waiting_s": secs,
                        "depth": depth.get(acc), "waiting_for": missing})
    return out


def _mark_stragglers(rows: list[dict[str, Any]]) -> float | None:
    """Marks training tasks whose step rate is under STRAGGLER_FRACTION of the median;
    returns the median (None with fewer than two rates)."""
    rates = [r["step_rate"] for r in rows
             if r["job"] in _TRAINING_JOBS and r.get("step_rate") is not None]
    median = statistics.median(rates) if len(rates) >= 2 else None
    for r in rows:
        r["straggler"] = bool(median and r["job"] in _TRAINING_JOBS
                              and r.get("step_rate") is not None
                              and r["step_rate"] < STRAGGLER_FRACTION * median)
    return median


def cluster_view(addresses: dict[str, str], samples: dict[str, tuple[Sample | None, Sample]],
                 states: dict[str, str] | None = None) -> dict[str, Any]:
    """The page's picture of the cluster now (JSON-ready).

    Args:
        addresses: task name ("worker 1") -> "host:port", in the order to show.
        samples: task name -> (the scrape before, the latest scrape); a task not scraped
            yet is absent.
        states: what the launcher knows of each task ("running", "ended", ...), if any.
    """
    states = states or {}
    rows = []
    for n, a in addresses.items():
        before, now = samples.get(n, (None, None))
        rows.append(_task_row(n, a, before, now, states.get(n)))
    median = _mark_stragglers(rows)
    ps, sync = [], []
    for n, (before, now) in samples.items():
        # ps tasks only: a worker's own variables (sync's local step) are not placement
        load = _ps_load(n, before, now) if n.startswith("ps ") else None
        if load is not None:
            ps.append(load)
        sync.extend(_sync_waits(n, now))
    global_rate = None  # the global step's updates: one per global step, on its ps
    for before, now in samples.values():
        r = _rate("tensorweave_variable_updates_total", before, now, variable="global_step")
        if r is not None:
            global_rate = (global_rate or 0.0) + r
    return {"tasks": rows, "links": _links(samples), "ps": ps, "sync": sync,
            "median_step_rate": median, "global_step_updates_per_s": global_rate}

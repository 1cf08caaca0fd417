"""The process's own numbers, read from /proc at scrape time (no timer, no thread).

The names are Prometheus' conventional ones (those its client libraries export), so
dashboards made for other jobs read them: `process_cpu_seconds_total`,
`process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
`process_max_fds`, `process_start_time_seconds`, plus `process_threads` (OS threads,
gRPC's included) and `python_threads` (Python's `threading` threads). Off Linux only the
last two are there.

Example:
    >>> [f.name for f in collect()][-1]
    'python_threads'
"""
from __future__ import annotations

import os
import resource
import threading

from tensorweave.runtime.metrics import Family

__all__ = ["collect"]

_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE = resource.getpagesize()
_boot_time: list[float] = []


def _stat() -> list[str] | None:
    try:
        with open("/proc/self/stat", "rb") as f:
            text = f.read().decode()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # after "pid (comm) ": comm may hold spaces


def _boot() -> float:
    if not _boot_time:
        with open("/proc/stat", "rb") as f:
            for line in f:
                if line.startswith(b"btime "):
                    _boot_time.append(float(line.split()[1]))
                    break
            else:
                _boot_time.append(0.0)
    return _boot_time[0]


def collect() -> list[Family]:
    """The process families now (each read costs a few microseconds of /proc)."""
    out: list[Family] = []
    fields = _stat()
    if fields is not None:  # man 5 proc: fields from the 3rd (state) on, so index - 3
        utime, stime = int(fields[11]), int(fields[12])
        out += [
            Family("process_cpu_seconds_total", "counter", "User and system CPU time spent "
                   "in seconds.").add((utime + stime) / _TICKS),
            Family("process_virtual_memory_bytes", "gauge", "Virtual memory size in "
                   "bytes.").add(int(fields[20])),
            Family("process_resident_memory_bytes", "gauge", "Resident memory size in "
                   "bytes.").add(int(fields[21]) * _PAGE),
            Family("process_start_time_seconds", "gauge", "Start time of the process since "
                   "unix epoch in seconds.").add(_boot() + int(fields[19]) / _TICKS),
            Family("process_threads", "gauge", "OS threads of the process.")
            .add(int(fields[17])),
        ]
        try:
            out.append(Family("process_open_fds", "gauge", "Number of open file "
                              "descriptors.").add(len(os.listdir("/proc/self/fd"))))
        except OSError:
            pass
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        out.append(Family("process_max_fds", "gauge", "Maximum number of open file "
                          "descriptors.").add(soft))
    out.append(Family("python_threads", "gauge", "Python threads (threading) of the "
                      "process.").add(threading.active_count()))
    return out

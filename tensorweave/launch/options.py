"""`LaunchOptions`: what `tensorweave launch` was asked for (launch/launcher.py runs it).

Example:
    >>> LaunchOptions(ps=1, workers=1, max_workers=3).max_workers
    3
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from tensorweave.distributed.topology import Task
from tensorweave.launch.restart import RestartPolicy

__all__ = ["LaunchOptions"]


@dataclass
class LaunchOptions:
    """How `Launcher` builds and supervises the cluster (see `tensorweave launch --help`)."""

    ps: int = 1
    workers: int = 2
    chief: bool = False
    evaluator: bool = False
    pass_flags: bool = False
    logdir: str | None = None
    timeout: float | None = None
    ps_grace: float = 60.0
    kill_grace: float = 10.0
    progress_interval: float = 5.0
    keep_going: bool = False
    tail_lines: int = 20
    progress: bool = True
    # Extra environment per task: its credentials (launch/credentials.py, --tls).
    task_env: Callable[[Task], dict[str, str]] | None = None
    restart: RestartPolicy = field(default_factory=RestartPolicy)  # see launch/restart.py
    ps_standby: int = 0  # bare servers holding the ps replicas (Topology.standby_env)
    max_workers: int | None = None  # worker slots of an elastic job (launch/elastic.py)
    dashboard: int | None = None  # --dashboard's port (0: a free one); None: no dashboard
    dashboard_host: str = "127.0.0.1"

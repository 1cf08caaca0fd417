"""Starting the dashboard: inside `tensorweave launch --dashboard [PORT]`, or alone as
`tensorweave dashboard --cluster <ClusterSpec | TF_CONFIG | @FILE>` for a cluster started
any other way (Kubernetes, `tensorweave server` on each machine, a program's own servers).

Example:
    $ tensorweave launch --ps 1 --workers 2 --dashboard 8080 -- python train.py
    $ tensorweave dashboard --cluster '{"ps": ["ps0:2222"], "worker": ["w0:2222"]}' \\
          --auth-token-file /etc/tensorweave/auth/token --port 8080
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any

from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.tf_config import parse_tf_config
from tensorweave.distributed.transport.credentials import Credentials
from tensorweave.launch.dashboard.collector import Collector
from tensorweave.launch.dashboard.server import Dashboard
from tensorweave.launch.server_cli import load_cluster_json

__all__ = ["add_dashboard_parser", "add_launch_flags", "cluster_addresses",
           "launch_dashboard", "run_dashboard"]

_JOB_ORDER = ("ps", "chief", "master", "worker", "ps_standby", "evaluator")


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535; 0 picks a free one)")
    return port


def add_launch_flags(p: argparse.ArgumentParser) -> None:
    """`tensorweave launch --dashboard [PORT] --dashboard-host HOST`."""
    p.add_argument("--dashboard", nargs="?", const=0, default=None, type=_port,
                   metavar="PORT",
                   help="serve a live web dashboard of the job on PORT (none given: a free "
                        "port; the URL is printed): tasks and links, step rates, loss, ps "
                        "load, sync waits, restarts (docs/dashboard.md)")
    p.add_argument("--dashboard-host", default="127.0.0.1", metavar="HOST",
                   help="address the dashboard listens on (default 127.0.0.1: reach it "
                        "from elsewhere through a port-forward)")


def add_dashboard_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The `tensorweave dashboard` subcommand (credential flags are added by cli.py)."""
    p = sub.add_parser(
        "dashboard", help="serve a live web dashboard of a running cluster",
        description="Scrape GET /metrics of every task of a cluster once a second and serve "
                    "a web page of it (docs/dashboard.md). The cluster comes from --cluster "
                    "or TF_CONFIG; a cluster with a token needs --auth-token-file (or "
                    "TENSORWEAVE_AUTH_TOKEN_FILE), one with TLS the --tls-* files.")
    p.add_argument("--cluster", metavar="SPEC",
                   help="the cluster: ClusterSpec JSON ({\"ps\": [...], \"worker\": [...]}), "
                        "TF_CONFIG JSON ({\"cluster\": {...}, \"task\": ...}), or @FILE / a "
                        "path holding either (default: the TF_CONFIG variable)")
    p.add_argument("--port", type=_port, default=8080, help="port to serve on (default 8080)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default 127.0.0.1)")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECS",
                   help="seconds between scrapes (default 1)")
    p.set_defaults(run=run_dashboard, takes_command=False)
    return p


def cluster_addresses(text: str | None) -> dict[str, str]:
    """Task name ("worker 1") -> "host:port" from a ClusterSpec or TF_CONFIG.

    Args:
        text: ClusterSpec JSON, TF_CONFIG JSON, "@FILE" or a file's path; None reads
            the TF_CONFIG variable.

    Raises:
        ValueError: the text is not JSON of either form, or names no task.
    """
    if text is None:
        spec = parse_tf_config().cluster_spec
    else:
        if not text.startswith("@") and not text.lstrip().startswith("{") and \
                os.path.isfile(text):
            text = "@" + text   # a file's path, as @FILE
        value = load_cluster_json(text)
        spec = (parse_tf_config(value).cluster_spec if "cluster" in value
                else ClusterSpec(value))
    jobs = sorted(spec.jobs, key=lambda j: (_JOB_ORDER.index(j) if j in _JOB_ORDER
                                            else len(_JOB_ORDER), j))
    addresses = {f"{job} {i}": spec.task_address(job, i)
                 for job in jobs for i in spec.task_indices(job)}
    if not addresses:
        raise ValueError("The cluster names no task: pass --cluster '{\"ps\": [...], "
                         "\"worker\": [...]}' or set TF_CONFIG.")
    return addresses


def launch_dashboard(launcher: Any, port: int, host: str = "127.0.0.1") -> Dashboard:
    """The dashboard of a `Launcher`: its tasks, their credentials, its progress line's
    numbers and its messages (fed by `LauncherIO._say`); started.

    Raises:
        ValueError: the port cannot be listened on.
    """
    topology = launcher.topology
    addresses = {t.name: topology.address(t) for t in topology.tasks}
    first = topology.tasks[0]
    task_env = launcher.options.task_env
    creds = Credentials.from_env({**os.environ, **(task_env(first) if task_env else {})})
    tracker = launcher.tracker

    def states() -> dict[str, str]:
        known = {tp.task.name: "running" if tp.running else "ended" for tp in launcher.tasks}
        return {n: known.get(n, "empty slot") for n in addresses}

    collector = Collector(addresses, creds, progress=lambda: (
        tracker.global_step, tracker.steps_per_sec, tracker.loss), states=states)
    try:
        dashboard = Dashboard(collector, host, port, title="tensorweave launch")
    except OSError as e:
        raise ValueError(f"--dashboard {port}: cannot listen on {host}:{port} "
                         f"({e.strerror or e}); pick another port, or none for a free one."
                         ) from None
    dashboard.start()
    return dashboard


def run_dashboard(args: argparse.Namespace, command: list[str]) -> int:
    """`tensorweave dashboard`: serves until Ctrl-C (exit 0)."""
    from tensorweave.launch.credentials import apply_server_flags

    apply_server_flags(args)  # --auth-token-file, --tls-*: into the environment, checked
    addresses = cluster_addresses(args.cluster)
    if args.interval <= 0:
        raise ValueError(f"--interval {args.interval:g} must be above 0 seconds.")
    collector = Collector(addresses, Credentials.from_env(), interval=args.interval)
    try:
        dashboard = Dashboard(collector, args.host, args.port, title="tensorweave dashboard")
    except OSError as e:
        raise ValueError(f"--port {args.port}: cannot listen on {args.host}:{args.port} "
                         f"({e.strerror or e}); pick another port (0: a free one).") from None
    dashboard.start()
    print(f"tensorweave dashboard: {dashboard.url} ({len(addresses)} tasks: "
          + ", ".join(f"{n} at {a}" for n, a in addresses.items()) + "); Ctrl-C stops it",
          file=sys.stderr, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        dashboard.close()
    return 0

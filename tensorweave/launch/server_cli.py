"""`tensorweave server`: one bare server task of a real multi-machine cluster.

Run it on each ps machine (or wherever a task only serves): it starts a
`tensorweave.distributed.server.Server` for its task and blocks in `join()`.
The task comes from `--job/--task/--cluster` or, when those are left out, from
TF_CONFIG (as Kubeflow's TFJob, SageMaker and Vertex AI set it).

Exit codes: 0 when the chief reported the job done (`join()` then ends the
process itself, as for any ps program), or after a clean stop on SIGTERM (what
Kubernetes sends to stop a pod); 130 after a clean stop on SIGINT (Ctrl-C); 2 for
a bad cluster/task; 1 if the server cannot listen (port in use, address not of
this machine).

Example:
    $ tensorweave server --job ps --task 0 \\
          --cluster '{"ps": ["ps0:2222"], "worker": ["w0:2222", "w1:2222"]}' --bind-all
"""
from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from typing import Any

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.tf_config import parse_tf_config
from tensorweave.framework import errors

__all__ = ["load_cluster_json", "resolve_task", "serve"]

log = logging.getLogger("tensorweave.server")


def load_cluster_json(text: str) -> dict[str, Any]:
    """A --cluster value (`tensorweave server`'s, `tensorweave dashboard`'s): JSON text,
    or @FILE holding it.

    Raises:
        ValueError: the text is not JSON, or not a JSON object.
    """
    if text.startswith("@"):
        with open(text[1:]) as f:
            text = f.read()
    try:
        cluster = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"--cluster is not JSON ({e.msg}): {text[:200]!r}. Give a JSON "
                         "object such as '{\"ps\": [\"ps0:2222\"], \"worker\": "
                         "[\"w0:2222\"]}' or @FILE.") from None
    if not isinstance(cluster, dict):  # a bad flag value, reported like the others
        raise ValueError(  # noqa: TRY004
            f"--cluster must be a JSON object, got {cluster!r}: one mapping job names to "
            "address lists.")
    return cluster


def resolve_task(cluster: str | None, job: str | None, task: int | None
                 ) -> tuple[ClusterSpec, str, int]:
    """The cluster and this process's task, from the flags or else TF_CONFIG.

    Args:
        cluster: --cluster (JSON or @FILE); None reads TF_CONFIG's "cluster".
        job, task: --job and --task; None takes TF_CONFIG's "task".

    Returns:
        (cluster spec, job name, task index).

    Raises:
        ValueError: If neither the flags nor TF_CONFIG say it, or the task is not
            in the cluster.

    Example:
        >>> resolve_task('{"ps": ["localhost:2222"]}', "ps", 0)[1:]
        ('ps', 0)
    """
    config = parse_tf_config()
    spec = ClusterSpec(load_cluster_json(cluster)) if cluster is not None else config.cluster_spec
    if not spec:
        raise ValueError("No cluster: pass --cluster '{\"ps\": [...], \"worker\": [...]}' or "
                         "set TF_CONFIG with a \"cluster\".")
    job = job if job is not None else config.task_type
    if job is None:
        raise ValueError("No task: pass --job and --task, or set TF_CONFIG's \"task\" "
                         "({\"type\": \"ps\", \"index\": 0}).")
    index = task if task is not None else (
        config.task_index if config.task_type == job and config.task_index is not None else 0)
    spec.task_address(job, index)  # ValueError names the missing job or task
    return spec, job, index


def serve(cluster: ClusterSpec, job: str, index: int, bind_all: bool = False,
          exit_when_done: bool = True, done_grace: float = 60.0) -> int:
    """Runs the server for one task until the job is done or a signal stops it.

    Args:
        cluster: the whole cluster.
        job, index: this task.
        bind_all: listen on every interface (needed when the address's host name
            resolves to an address that is not bound here, e.g. behind NAT).
        exit_when_done: when the chief reports the job done, end the process with
            exit code 0 (from `Server.join()`; TF's ps never exits).
        done_grace: seconds to wait for open worker sessions after the job is done.

    Returns:
        The process exit code (see the module docstring).

    Example:
        >>> serve(ClusterSpec({"ps": ["localhost:2222"]}), "ps", 0)  # doctest: +SKIP
    """
    from tensorweave.distributed.server import Server  # grpc only when really serving

    got: list[int] = []
    servers: list[Any] = []

    def on_signal(signum: int, frame: object) -> None:
        got.append(signum)
        # stop() waits for gRPC to drain; do it off the signal handler's frame.
        for server in servers:
            threading.Thread(target=server.stop, daemon=True).start()

    # Installed before the port opens: whoever sees it listening may signal at once.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    try:
        server = Server(cluster, job_name=job, task_index=index, bind_all=bind_all,
                        exit_when_done=exit_when_done, done_grace_secs=done_grace)
    except (ValueError, errors.OpError) as e:  # bad cluster, port in use, bad address
        log.error("%s", e)
        return 1
    servers.append(server)
    if got:  # signalled while starting
        server.stop()
    where = "every interface" if bind_all else cluster.task_address(job, index)
    log.info("%s listening on %s (port %s); target %s", server.task, where,
             parse_host_port(cluster.task_address(job, index))[1], server.target)
    server.join()  # at the job's end it exits the process (code 0); returns after stop()
    server.stop()
    if got:
        log.info("%s stopped on %s", server.task, signal.Signals(got[0]).name)
        return 130 if got[0] == signal.SIGINT else 0
    log.info("%s: stopped; exiting", server.task)
    return 0


def configure_logging() -> None:
    """Timestamped INFO lines on stderr, flushed per line (logs of pods and launchers)."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")

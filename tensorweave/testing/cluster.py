"""A local cluster of real server processes on loopback, for tests and benchmarks.

Example:
    >>> with LocalCluster(ps=1, workers=2) as cluster:
    ...     with tf.Session(cluster.target("worker", 0)) as sess: ...

Each task is `python -m tensorweave.testing.cluster --job J --task I --cluster JSON`,
a bare server that serves until killed. Processes are always killed on exit.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from typing import Any

from tensorweave.base.address import parse_host_port
from tensorweave.base.waits import Backoff, Wait
from tensorweave.distributed.topology import free_ports
from tensorweave.distributed.transport import registry

# Processes start and exit in tens of milliseconds to seconds: poll briskly.
_PROCESS_POLL = Backoff(first=0.01, cap=0.05)


def cluster_dict(ps: int, workers: int, extra: dict[str, int] | None = None
                 ) -> dict[str, list[str]]:
    """{job: ["localhost:<free port>", ...]} with `ps` ps and `workers` worker tasks."""
    jobs = {"ps": ps, "worker": workers, **(extra or {})}
    ports = iter(free_ports(sum(jobs.values())))
    return {j: [f"localhost:{next(ports)}" for _ in range(n)] for j, n in jobs.items() if n}


def _tail(path: str, n: int = 2000) -> str:
    with open(path, errors="replace") as f:
        return f.read()[-n:]


def wait_listening(address: str, proc: subprocess.Popen, timeout: float,
                   log_path: str = "") -> None:
    """Waits until `proc` itself listens on `address`'s port: RuntimeError (with the tail
    of `log_path`) if it exits first, TimeoutError after `timeout` s."""
    port = parse_host_port(address)[1]
    wait = Wait(f"for the server of {address} to listen", timeout, error=TimeoutError,
                backoff=_PROCESS_POLL, hint=f"Its output: {log_path or 'not kept'}.")
    while True:
        if proc.poll() is not None:
            err = _tail(log_path) if log_path else ""
            raise RuntimeError(f"Server process for {address} exited with code "
                               f"{proc.returncode} before listening:\n{err}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            pass
        else:
            # Something listens; it must be this task, not another process that took the
            # port before the task could bind it (the task then fails: see above).
            if _listens(proc.pid, port) is not False:
                return
        wait.pause()


def _listens(pid: int, port: int) -> bool | None:
    """Whether process `pid` (or a child of it) holds the socket listening on TCP `port`;
    None where /proc cannot tell (not Linux)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            return None
        for row in rows:
            fields = row.split()  # sl local_address rem_address st ... uid timeout inode
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
    pids = [pid]
    while pids:
        p = pids.pop()
        try:
            fds = os.listdir(f"/proc/{p}/fd")
            with open(f"/proc/{p}/task/{p}/children") as f:
                pids += [int(c) for c in f.read().split()]
        except OSError:
            continue  # gone, or not ours to read
        for fd in fds:
            try:
                if os.readlink(f"/proc/{p}/fd/{fd}") in inodes:
                    return True
            except OSError:
                pass
    return False


class LocalCluster:
    """Starts one process per task of `spec` (or of ps/workers counts): a bare server,
    or for the jobs in `programs` that program with TF_CONFIG naming its task.

    Args:
        ps, workers: task counts when no `spec` is given.
        spec: a cluster dict {job: [addresses]}.
        in_process: tasks (job, index) NOT to start as processes (the test runs them).
        env: extra environment of the task processes (e.g. TENSORWEAVE_TRANSPORT).
        programs: {job: argv} run for every task of that job instead of a bare
            server, e.g. {"chief": [sys.executable, "-m", "my.trainer"]}; the
            program reads its cluster and task from TF_CONFIG.

    Each process writes stdout and stderr to a log file (`output(job, index)`
    reads every incarnation's). `kill` sends SIGKILL; `restart` starts a task
    again on the same port, as an orchestrator would; `wait` waits for all to exit.
    See `tensorweave.testing.faults` for killing at a step.

    Example:
        >>> lc = LocalCluster(spec=spec, programs={"chief": trainer, "worker": trainer})
        >>> with lc:
        ...     lc.kill("ps", 0); lc.restart("ps", 0)
        ...     codes = lc.wait(120)
    """

    def __init__(self, ps: int = 1, workers: int = 1, spec: dict[str, list[str]] | None = None,
                 in_process: tuple[tuple[str, int], ...] = (),
                 env: dict[str, str] | None = None,
                 programs: dict[str, list[str]] | None = None) -> None:
        self.spec = spec or cluster_dict(ps, workers)
        self.in_process = set(in_process)
        self.env = dict(env or {})
        self.programs = {job: list(argv) for job, argv in (programs or {}).items()}
        unknown = set(self.programs) - set(self.spec)
        if unknown:
            raise ValueError(f"programs names jobs {sorted(unknown)} that are not in the "
                             f"cluster {sorted(self.spec)}.")
        self.procs: dict[tuple[str, int], subprocess.Popen] = {}
        self.logs: dict[tuple[str, int], list[str]] = {}
        self._logdir = tempfile.TemporaryDirectory(prefix="tw-cluster-")  # gone with self

    def start(self) -> "LocalCluster":
        for job, addrs in self.spec.items():
            for i, _ in enumerate(addrs):
                if (job, i) not in self.in_process:
                    self.start_task(job, i)
        for (job, i) in list(self.procs):
            self.wait_task(job, i, 30)
        return self

    def command(self, job: str, index: int) -> list[str]:
        """The argv of (job, index)'s process (a subclass may wrap it, e.g. in a netns)."""
        if job in self.programs:
            return list(self.programs[job])
        return [sys.executable, "-m", "tensorweave.testing.cluster", "--job", job, "--task",
                str(index), "--cluster", json.dumps(self.spec)]

    def start_task(self, job: str, index: int) -> subprocess.Popen:
        """Starts (job, index)'s process; its output goes to a new log file."""
        env = dict(os.environ, PYTHONUNBUFFERED="1", **self.env)
        if job in self.programs:
            env["TF_CONFIG"] = json.dumps({"cluster": self.spec,
                                           "task": {"type": job, "index": index}})
        cmd = self.command(job, index)
        runs = self.logs.setdefault((job, index), [])
        path = os.path.join(self._logdir.name, f"{job}{index}-{len(runs)}.log")
        runs.append(path)
        with open(path, "wb") as out:
            p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.procs[(job, index)] = p
        return p

    def wait_task(self, job: str, index: int, timeout: float = 30) -> None:
        """Waits until (job, index) listens on its port (RuntimeError if it exits first)."""
        wait_listening(self.spec[job][index], self.procs[(job, index)], timeout,
                        self.logs[(job, index)][-1])

    def kill(self, job: str, index: int) -> None:
        """SIGKILL (kill -9) for (job, index)'s process, if it still runs."""
        p = self.procs.pop((job, index), None)
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait(10)

    def restart(self, job: str, index: int, timeout: float = 30) -> subprocess.Popen:
        """Kills (job, index) if alive and starts it again on the same port."""
        self.kill(job, index)
        p = self.start_task(job, index)
        self.wait_task(job, index, timeout)
        return p

    def output(self, job: str, index: int) -> str:
        """Everything (job, index) printed, over all its incarnations, oldest first."""
        return "".join(_tail(path, 1 << 30) for path in self.logs.get((job, index), []))

    def wait(self, timeout: float) -> dict[tuple[str, int], int | None]:
        """Waits for every task process to exit by itself; returns their exit codes.

        A task restarted meanwhile is waited for in its new process; one killed
        and not restarted is left out. One still running after `timeout` seconds
        is killed and gets None.
        """
        wait = Wait("for the task processes to exit", timeout, backoff=_PROCESS_POLL)
        while not wait.expired() and any(p.poll() is None for p in list(self.procs.values())):
            wait.sleep()
        codes: dict[tuple[str, int], int | None] = {}
        for key, p in list(self.procs.items()):
            codes[key] = p.poll()
            if codes[key] is None:
                self.kill(*key)
        return codes

    def target(self, job: str, index: int) -> str:
        return f"grpc://{self.spec[job][index]}"

    def alive(self) -> bool:
        """Whether every task this cluster starts runs (none was killed or exited)."""
        tasks = {(job, i) for job, addrs in self.spec.items() for i in range(len(addrs))}
        return (set(self.procs) == tasks - self.in_process
                and all(p.poll() is None for p in self.procs.values()))

    def stop(self) -> None:
        for key in list(self.procs):
            self.kill(*key)

    def __enter__(self) -> "LocalCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def transports() -> list[str]:
    """Every registered transport name ("grpc" first): what `cluster_over` accepts."""
    return registry.names()


class InProcessCluster:
    """Every task of `spec` as a Server in this process, reaching each other by
    `protocol` ("inprocess": directly, no RPC and no socket; None: the Server's
    default, as a TF program that names none gets).

    Example:
        >>> with InProcessCluster(ps=1, workers=2) as c:
        ...     tf.Session(c.servers[("worker", 0)].target)
    """

    def __init__(self, ps: int = 1, workers: int = 1,
                 spec: dict[str, list[str]] | None = None,
                 protocol: str | None = "inprocess") -> None:
        self.spec = spec or cluster_dict(ps, workers)
        self.protocol = protocol
        self.servers: dict[tuple[str, int], Any] = {}

    def start(self) -> "InProcessCluster":
        from tensorweave.distributed.server import Server
        for job, addrs in self.spec.items():
            for i, _ in enumerate(addrs):
                self.servers[(job, i)] = Server(self.spec, job_name=job, task_index=i,
                                                exit_when_done=False, protocol=self.protocol)
        return self

    def target(self, job: str, index: int) -> str:
        return f"grpc://{self.spec[job][index]}"

    def alive(self) -> bool:
        """Whether the servers are started and this object has not stopped them."""
        return bool(self.servers)

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.servers.clear()

    def __enter__(self) -> "InProcessCluster":
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def cluster_over(transport: str, ps: int = 1, workers: int = 1) -> Any:
    """A cluster whose tasks talk over `transport`, a registered name (`transports()`).

    A built-in socket protocol ("grpc", "tcp", "unix") starts server processes with
    TENSORWEAVE_TRANSPORT set, and the caller must set it in this process too (the
    client's own connection) while it uses the cluster. "inprocess", and a protocol
    registered by this process only (a test's), run every task in this process.

    Example:
        >>> with cluster_over("tcp", ps=1, workers=2) as c:
        ...     tf.Session(c.target("worker", 0))

    Raises:
        ValueError: a name that is not registered (listing those that are).
    """
    name = registry.resolve(transport, "transport ")
    if name in registry.BUILT_IN and registry.get(name).serves_sockets:
        return LocalCluster(ps, workers, env={registry.ENV: name})
    return InProcessCluster(ps, workers, protocol=name)


def _main() -> None:
    parser = argparse.ArgumentParser(description="Run one bare tensorweave server task.")
    parser.add_argument("--job", required=True)
    parser.add_argument("--task", type=int, required=True)
    parser.add_argument("--cluster", required=True, help="cluster JSON {job: [host:port]}")
    args = parser.parse_args()
    from tensorweave.distributed.server import Server
    server = Server(json.loads(args.cluster), job_name=args.job, task_index=args.task)
    server.join()


if __name__ == "__main__":
    _main()

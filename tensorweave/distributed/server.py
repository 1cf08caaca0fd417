"""`tf.train.Server`: one task of a cluster, hosting a master and a worker.

Example:
    >>> server = tf.train.Server.create_local_server()
    >>> with tf.Session(server.target) as sess:
    ...     sess.run(tf.constant("Hello, distributed TensorFlow!"))
    b'Hello, distributed TensorFlow!'
"""
from __future__ import annotations

import logging
import threading
from typing import Any

from tensorweave.base import knobs
from tensorweave.base.address import parse_host_port, same_host
from tensorweave.distributed import peers
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.job import JobEndWatch, at_normal_exit, notify_job_done
from tensorweave.distributed.master import MasterService
from tensorweave.distributed.metered_peer import MeteredPeer
from tensorweave.distributed.protocol.cluster_pb2 import ServerDef
from tensorweave.distributed.protocol.methods import MASTER_SERVICE, WORKER_SERVICE
from tensorweave.distributed import replica, replica_store
from tensorweave.distributed.run_config import TaskType
from tensorweave.distributed.transport import admission, registry
from tensorweave.distributed.transport import credentials as creds_mod
from tensorweave.distributed.worker import WorkerService
from tensorweave.framework import errors
from tensorweave.framework.device import parse_task_name, task_name
from tensorweave.framework.file_access import server_policy
from tensorweave.framework.proto.config_pb2 import ConfigProto
from tensorweave.runtime.threads import at_exit, exit_process

log = logging.getLogger("tensorweave.server")


def _server_def(cluster_or_def: Any, job_name: str | None, task_index: int | None,
                protocol: str | None, config: Any) -> ServerDef:
    if isinstance(cluster_or_def, ServerDef):
        sd = ServerDef()
        sd.CopyFrom(cluster_or_def)
    else:
        cluster = ClusterSpec(cluster_or_def)
        sd = ServerDef(cluster=cluster.as_cluster_def())
        cluster_dict = {j: cluster.task_indices(j) for j in cluster.jobs}
        if job_name is None:
            if len(cluster_dict) != 1:
                raise ValueError("Cannot infer the job: the cluster has jobs "
                                 f"{sorted(cluster_dict)}"
                                 "; pass job_name=...")
            job_name = next(iter(cluster_dict))
        if task_index is None:
            tasks = cluster_dict.get(job_name, [])
            if len(tasks) != 1:
                raise ValueError(f"Cannot infer the task index: job {job_name!r} has tasks "
                                 f"{tasks}; pass task_index=...")
            task_index = tasks[0]
        sd.job_name, sd.task_index = job_name, task_index
    if job_name is not None:
        sd.job_name = job_name
    if task_index is not None:
        sd.task_index = task_index
    # As TF: the argument, else the ServerDef's, else "grpc" (here: TENSORWEAVE_TRANSPORT's
    # name when set); any registered name (ValueError listing them otherwise).
    sd.protocol = registry.resolve(protocol or sd.protocol or None)
    if config is not None:
        sd.default_session_config.CopyFrom(config)
    return sd


def _own_address(cluster: ClusterSpec, job: str, index: int) -> tuple[str, str, int]:
    """(address, host, port) of this task, with TF's error classes: ValueError for a
    job the cluster lacks, InvalidArgumentError for a missing task or a bad address."""
    try:
        address = cluster.task_address(job, index)
    except ValueError as e:
        if job not in cluster.jobs:
            raise
        raise errors.InvalidArgumentError(None, None, str(e)) from None
    try:
        host, port = parse_host_port(address)
    except ValueError as e:
        raise errors.InvalidArgumentError(
            None, None, f"Could not parse port for local server: {e} (task "
            f"{task_name(job, index)}).") from None
    return address, host, port


class Server:
    """An in-process server for one task of a cluster.

    Args:
        server_or_cluster_def: a ClusterSpec, dict, ClusterDef or ServerDef.
        job_name, task_index: this task (inferred only when unambiguous).
        protocol: how this task reaches the others, by registered name
            (`tensorweave.distributed.transport.registry`): "grpc" (the default, as in
            TF: this process's servers directly, this machine's tasks over Unix
            sockets, other machines over gRPC on TCP), "tcp" (gRPC on TCP for every
            task), "unix" (this machine's tasks only), "inprocess" (this process's
            servers only; opens no port). None: the ServerDef's, else
            TENSORWEAVE_TRANSPORT's, else "grpc".
        config: default ConfigProto for sessions on this server.
        start: start serving right away.
        bind_all: listen on every interface instead of the cluster address's host
            (also with the environment variable TENSORWEAVE_BIND_ALL=1).
        exit_when_done: once the chief has reported the job done and no worker
            session is open here, `join()` stops the server and ends the process
            with exit code 0 (code after `join()`, which TF never ran, does not run
            either). False keeps TF's `join()`, which blocks until `stop()`.
        done_grace_secs: after the job is done, how long `join()` waits for open
            sessions before returning anyway. A worker that answers no health check
            is declared gone (its sessions closed) sooner, after
            TENSORWEAVE_JOB_END_SILENCE_SECS of silence (`distributed/job.py`); one
            cut off for less comes back and finishes.
        credentials: what every connection to and from this task must prove
            (`tensorweave.distributed.Credentials`: mutual TLS and/or a shared token);
            None: the TENSORWEAVE_TLS_* / TENSORWEAVE_AUTH_TOKEN_FILE variables, if set.
        allow_dirs: the only directories this task's file ops (Saver, TFRecordDataset,
            ...) may touch; None: TENSORWEAVE_ALLOW_DIRS if set, else the current and the
            system temp directory (`framework/file_access.py`).
        allow_from: without credentials, the task port admits connections only from
            the ClusterSpec's hosts (resolved at start; a loopback cluster: loopback
            only); these hosts, addresses or CIDRs ("10.0.0.0/8", or "any") may connect
            too. None: TENSORWEAVE_ALLOW_FROM (`transport/admission.py`).

    Raises:
        ValueError: ambiguous job/task, a job the cluster does not have (as TF), or
            a protocol that is not registered (the message lists those that are).
        tf.errors.InvalidArgumentError: the task is not in its job, or its address is
            not "host:port" (as TF: "Could not parse port ...").
        tf.errors.UnknownError: the port is in use or the host is not an address of
            this machine (as TF's "Could not start gRPC server").
    """

    def __init__(self, server_or_cluster_def: Any, job_name: str | None = None,
                 task_index: int | None = None, protocol: str | None = None,
                 config: ConfigProto | None = None, start: bool = True,
                 bind_all: bool = False, exit_when_done: bool = True,
                 done_grace_secs: float = 60.0, credentials: Any = None,
                 allow_dirs: Any = None, allow_from: Any = None) -> None:
        self._credentials = credentials
        self._allow_from = allow_from
        self._server_def = _server_def(server_or_cluster_def, job_name, task_index, protocol,
                                       config)
        self._cluster = ClusterSpec(self._server_def.cluster)
        # Standby tasks named by TENSORWEAVE_PS_STANDBY when the ClusterSpec has none: a
        # ps reaches the one holding its replica by address (replica.standby_tasks).
        self._standby = replica.standby_tasks(self._cluster) \
            if self._server_def.job_name == "ps" else {}
        job, index = self._server_def.job_name, self._server_def.task_index
        self.task = task_name(job, index)
        self._address, self._host, self._port = _own_address(self._cluster, job, index)
        # TENSORWEAVE_BIND_ALL=1 (set by `tensorweave manifest`) widens it without code changes.
        self._bind_all = bind_all or knobs.BIND_ALL.get()
        self._peers: dict[str, Any] = {}
        self._peers_lock = threading.Lock()
        self.file_policy = server_policy(allow_dirs)
        self.worker = WorkerService(self.task, peer=self.peer, file_policy=self.file_policy)
        tasks = {j: self._cluster.task_indices(j) for j in self._cluster.jobs}
        self.master = MasterService(tasks, job, index, self.peer,
                                    self._server_def.default_session_config, self.worker)
        self.metrics = self.worker.metrics  # GET /metrics on the task port (docs/metrics.md)
        self.metrics.watch(self.worker, self.master)
        # A ps serves workers that start late (a serving worker has no one to wait for);
        # not the chief, whose end is what ended the job.
        trainers: tuple[str, ...] = ()
        if job == "ps" and "worker" in self._cluster.jobs:
            has_chief = any(j in self._cluster.jobs for j in ("chief", "master"))
            trainers = tuple(task_name("worker", i) for i in self._cluster.task_indices("worker")
                             if i or has_chief)  # else worker 0 is the chief
        self._job_end = JobEndWatch(self.task, self.worker, self.peer, exit_when_done,
                                    done_grace_secs, trainers)
        self._listeners: list[Any] = []
        self._replica_sender: replica.ReplicaSender | None = None
        self._stopped = threading.Event()
        self._started = False
        if start:
            self.start()

    @staticmethod
    def create_local_server(config: ConfigProto | None = None, start: bool = True) -> "Server":
        """A one-task cluster (job "local", as TF) on a free loopback port."""
        from tensorweave.distributed.topology import free_ports
        return Server({"local": [f"localhost:{free_ports(1)[0]}"]}, job_name="local",
                      task_index=0, config=config, start=start)

    @property
    def target(self) -> str:
        return f"grpc://{self._address}"

    @property
    def protocol(self) -> str:
        """The registered transport name this task reaches the others by ("grpc")."""
        return self._server_def.protocol

    @property
    def server_def(self) -> ServerDef:
        return self._server_def

    @property
    def cluster(self) -> ClusterSpec:
        return self._cluster

    def service(self, name: str) -> Any:
        """This task's master or worker service object, by service name."""
        return {MASTER_SERVICE: self.master, WORKER_SERVICE: self.worker}[name]

    def start(self) -> None:
        """Starts serving; tf.errors.UnknownError if the port is taken."""
        if self._started:
            return
        host = "[::]" if self._bind_all else (
            "127.0.0.1" if self._host in ("localhost", "127.0.0.1") else self._host)
        holder = self._replica_holder()
        if holder:  # no graph runs here (to initialize or restore) until the replica is in
            self.worker.state_loaded.clear()
        try:
            self._listeners = peers.serve(self.protocol, host, self._host, self._port,
                                          self, self.task, self._credentials,
                                          self._peer_filter())
        except ValueError as e:
            # TF's class for a server that cannot start (its text is only "Could not
            # start gRPC server"); ours says which port, which task and what to do.
            raise errors.UnknownError(
                None, None, f"Could not start the server: {e} (task {self.task}). Free the "
                "port or change the task's address in the ClusterSpec.") from None
        self._started = True
        if self._port == 0:  # as TF: "host:0" listens on a free port, which target reports
            self._port = self._listeners[0].port
            self._address = f"{self._host}:{self._port}"
        self._limit_blas_threads()
        peers.register_local(self._address, self)
        if holder:
            self._load_replica(holder)
        at_exit(self.stop)  # registered before sessions close at exit, so it runs after them
        if self._server_def.job_name in (TaskType.CHIEF, TaskType.MASTER):
            at_normal_exit(self._chief_program_ended)  # runs before stop() (LIFO)

    def _load_replica(self, holder: str) -> None:
        """Loads this ps's replica from `holder` (serving already: a buddy ps starting at
        the same time asks this one too), then sends its state there from now on."""
        level, what = replica_store.restore(self.task, self.worker.device.resource_mgr,
                                            holder, self.peer,
                                            knobs.PS_REPLICA_WAIT_SECS.get())
        log.log(level, "%s: %s", self.task, what)
        self.worker.state_loaded.set()
        sender = self._replica_sender = replica.ReplicaSender(
            self.task, self.worker.incarnation, self.worker.device.resource_mgr, holder,
            self.peer, knobs.PS_REPLICA_SECS.get(), self.worker.job_done_event).start()
        self.worker.replica_status = lambda: (sender.holder, sender.lag_secs())
        if sender.interval == 0:
            self.worker.after_step = sender.after_step

    def _replica_holder(self) -> str | None:
        """The task holding this ps's replica when the job replicates ps state, else None."""
        if self._server_def.job_name != "ps" or not replica.enabled():
            return None
        holder = replica.holder_of(replica.with_standby(self._cluster, self._standby),
                                   self.task)
        if holder is None:
            log.warning("%s: TENSORWEAVE_PS_REPLICATION is set but the cluster has no other "
                        "task to hold this ps's replica; a restart restores the newest "
                        "checkpoint", self.task)
        return holder

    def _peer_filter(self) -> admission.PeerFilter | None:
        """Who may reach the task port: with no credentials, the ClusterSpec's hosts
        (and `allow_from`); with credentials, anyone who proves them."""
        if not registry.get(self.protocol).serves_sockets:
            return None
        addresses = [a for j in self._cluster.jobs for a in self._cluster.job_tasks(j) if a]
        return admission.for_server(addresses, self.task,
                                    self._credentials or creds_mod.default(), self._allow_from)

    def _chief_program_ended(self) -> None:
        """A chief's (or legacy master's) program that ends normally has finished the
        job, as Kubeflow's TFJob judges it: every task is told, so the servers blocked
        in `join()` (ps tasks, workers that only serve) exit 0. Not after `stop()`:
        a chief's bare server stopped by a signal ends nothing."""
        if not self._stopped.is_set():
            notify_job_done(self.target, jobs=tuple(self._cluster.jobs),
                            reason=f"the chief's program ({self.task}) ended")

    def _limit_blas_threads(self) -> None:
        from tensorweave.distributed.blas_threads import (limit_for_shared_machine,
                                                          ps_update_threads,
                                                          tasks_sharing_blas)
        local = [j for j in self._cluster.jobs for a in self._cluster.job_tasks(j)
                 if a and same_host(a)]
        configured = self._server_def.default_session_config.intra_op_parallelism_threads
        self.blas_threads = limit_for_shared_machine(
            tasks_sharing_blas(local, self._server_def.job_name), configured)
        ps_update_threads(local, self._server_def.job_name, configured)

    def peer(self, task: str) -> Any:
        """The worker service of `task` ("/job:ps/replica:0/task:0"), however reached."""
        with self._peers_lock:
            client = self._peers.get(task)
            if client is None:
                if task == self.task:
                    client = peers.InProcessPeer(self.worker, task)
                else:
                    address = self._standby.get(task) or \
                        self._cluster.task_address(*parse_task_name(task))
                    client = MeteredPeer(peers.connect(address, task, WORKER_SERVICE,
                                                       self._credentials,
                                                       protocol=self.protocol),
                                         task, self.metrics)
                self._peers[task] = client
            return client

    def join(self) -> None:
        """Blocks until the job ends (then exits the process) or the server is stopped.

        As in TF, `join()` does not return into the program: TF 1.x programs put
        nothing after a ps's `server.join()` (or the worker's code, which must not
        run on a ps). With `exit_when_done` (the default), the job ends when the
        chief's MonitoredTrainingSession or Supervisor finishes normally (it tells
        the ps tasks) and no worker session remains open on this task; then the
        server stops, the exit cleanup and log flushing run, and the process exits
        with code 0. It returns only after `stop()` (beyond TF, which cannot stop).

        Example:
            >>> server = tf.train.Server(cluster, job_name="ps", task_index=0)
            >>> server.join()  # the process ends here with exit 0 once training is done
        """
        while not self._stopped.wait(0.2):
            if self._job_end.finished():
                log.info("%s: job done, no open sessions: stopping the server and "
                         "exiting (code 0)", self.task)
                self.stop()
                exit_process(0)

    def stop(self, grace: float | None = 0.5) -> None:
        """Stops serving and releases the port (beyond TF, which cannot)."""
        if self._stopped.is_set():
            return
        self._stopped.set()
        if self._replica_sender is not None:
            self._replica_sender.stop()
        peers.unregister_local(self._address, self)
        self.master.shutdown()
        for listener in self._listeners:
            listener.stop()
        with self._peers_lock:
            for p in self._peers.values():
                p.close()
            self._peers.clear()

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

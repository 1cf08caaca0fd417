"""A `LocalCluster` whose tasks each run on their own host of a `NetnsBed`.

Every task is a process inside its host's network namespace, at that host's
address, so tasks reach each other as separate machines do: over TCP (gRPC and
the bulk channel on the task port), never over loopback or the same-host Unix
links. With `via_proxy`, the ClusterSpec names a `FaultProxy`'s address for each
task (the proxy runs in the bed's proxy host and forwards to the task's own
address; the tasks listen on every interface), so a test can delay, cut and
heal the links between tasks.

Example:
    >>> with NetnsBed(["ps0", "worker0", "worker1", "proxy"]) as bed:  # doctest: +SKIP
    ...     hosts = {"ps": ["ps0"], "worker": ["worker0", "worker1"]}
    ...     with NetnsCluster(bed, hosts, programs=programs, via_proxy=True) as c:
    ...         c.proxy.cut("worker1", "ps0"); time.sleep(10); c.proxy.heal()
    ...         codes = c.wait(60)
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

from tensorweave.base import knobs
from tensorweave.testing.cluster import LocalCluster
from tensorweave.testing.faultproxy import FaultProxy
from tensorweave.testing.netns import NetnsBed

__all__ = ["NetnsCluster"]

# Each cluster on a bed takes fresh ports, so a port an earlier cluster left in
# TIME_WAIT is never asked for again.
_PORT_BASE = 20000
_PORTS_PER_CLUSTER = 32
_clusters = itertools.count()
_clusters_lock = threading.Lock()


class NetnsCluster(LocalCluster):
    """Tasks on the hosts of `bed`, one host per task.

    Args:
        bed: a started `NetnsBed` with every host named in `hosts`.
        hosts: {job: [host of task 0, host of task 1, ...]}.
        via_proxy: put a `FaultProxy` (as `self.proxy`) between all tasks.
        proxy_host: the bed host the proxy runs in.
        **kwargs: `LocalCluster`'s `env` and `programs`.

    Attributes:
        real: {(job, index): (host address, port)} where each task listens.
        proxy: the `FaultProxy` (None without `via_proxy`); its hosts are the bed's
            host names.
    """

    def __init__(self, bed: NetnsBed, hosts: dict[str, list[str]], via_proxy: bool = False,
                 proxy_host: str = "proxy", **kwargs: Any) -> None:
        with _clusters_lock:
            n = next(_clusters) % ((65000 - _PORT_BASE) // _PORTS_PER_CLUSTER)
        ports = itertools.count(_PORT_BASE + n * _PORTS_PER_CLUSTER)
        self.bed, self.hosts = bed, {job: list(h) for job, h in hosts.items()}
        self.real = {(job, i): (bed.ips[h], next(ports))
                     for job, hs in self.hosts.items() for i, h in enumerate(hs)}
        self.proxy: FaultProxy | None = None
        front = {key: addr for key, addr in self.real.items()}
        env = dict(kwargs.pop("env", None) or {})
        if via_proxy:
            self.proxy = FaultProxy(names={ip: h for h, ip in bed.ips.items()},
                                    netns=bed.netns(proxy_host))
            front = {key: (bed.ips[proxy_host], port) for key, (_, port) in self.real.items()}
            # The ClusterSpec names the proxy's address: each task listens on every
            # interface, since that address is not its own.
            env.update(knobs.BIND_ALL.setting(True))
        self._front = front
        self._routed: set[tuple[str, int]] = set()
        spec = {job: [f"{front[(job, i)][0]}:{front[(job, i)][1]}" for i in range(len(hs))]
                for job, hs in self.hosts.items()}
        super().__init__(spec=spec, env=env, **kwargs)

    def host(self, job: str, index: int) -> str:
        """The bed host (job, index) runs on."""
        return self.hosts[job][index]

    def command(self, job: str, index: int) -> list[str]:
        return self.bed.command(self.host(job, index), super().command(job, index))

    def wait_task(self, job: str, index: int, timeout: float = 30) -> None:
        """Waits until (job, index) listens on its own address (seen from its host)."""
        self.bed.wait_listening(self.host(job, index), self.real[(job, index)], timeout,
                                proc=self.procs[(job, index)])
        if self.proxy is not None and (job, index) not in self._routed:
            # The proxy listens for a task once the task listens: until then its address
            # refuses connections, as a host's would (a proxy that accepts and then resets
            # is another fault: see `FaultProxy.reset`).
            self.proxy.add_route(self._front[(job, index)], self.real[(job, index)],
                                 name=self.host(job, index))
            self._routed.add((job, index))

    def start(self) -> "NetnsCluster":
        if self.proxy is not None:
            self.proxy.start()
        super().start()
        return self

    def stop(self) -> None:
        super().stop()
        if self.proxy is not None:
            self.proxy.close()

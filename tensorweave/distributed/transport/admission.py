"""Who may connect to a task port that has no credentials: its cluster's hosts.

A server without credentials (no TLS, no token) admits a TCP connection only from
an address of a host its ClusterSpec names (all of a name's addresses, resolved at
start and again when an unknown address knocks, so a pod that came back with a new
address is let in), from the address the connection reached (this machine talking
to itself), or from what `--allow-from` / TENSORWEAVE_ALLOW_FROM (hosts, addresses,
CIDRs, `any`) adds. A loopback cluster ("localhost:2222") thus admits 127.0.0.1 and
::1 only. Anyone else is closed at once, before a byte is read, and logged
(`sidechannel.log_refused`: the address and why). With credentials the handshakes
decide instead (credentials.py): this filter is not built.

Listeners call `admit(filter, conn, peer_address)` right after `accept()`: the one
accept-time check. Tasks added later (elastic jobs) join with `add_hosts`.

Example:
    >>> f = PeerFilter(["localhost:2222", "10.0.0.5:2222"], task="/job:ps/task:0")
    >>> f.refusal("10.0.0.5") is None, f.refusal("::ffff:127.0.0.1") is None
    (True, True)
    >>> f.refusal("10.0.0.9").split(" (")[0]
    '10.0.0.9 is not a host of the cluster'
"""
from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections.abc import Iterable
from typing import Any, Union

from tensorweave.base import knobs
from tensorweave.base.address import LOOPBACK_NAMES, Network, parse_host_port, parse_network
from tensorweave.distributed.transport import sidechannel

__all__ = ["ALLOW_ANY", "PeerFilter", "admit", "for_server"]

log = logging.getLogger("tensorweave.security")
IP = Union[ipaddress.IPv4Address, ipaddress.IPv6Address]
ALLOW_ANY = "any"  # `--allow-from any`: every address (as `0.0.0.0/0` and `::/0`)
_LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))
_START_WAIT_SECS = 2.0  # the longest a server's start waits for the cluster's names
_REFRESH_SECS = 2.0  # the fewest seconds between two re-resolutions of the cluster's names
_HINT = (f"to admit it, start the task with --allow-from HOST|CIDR or set "
         f"{knobs.ALLOW_FROM.name} (or give the cluster credentials: docs/security.md)")


def _ip(text: str) -> IP | None:
    """The address of `text` ("10.0.0.1", "::ffff:10.0.0.1" as IPv4, "fe80::1%eth0"), or None."""
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped  # a dual-stack socket reports IPv4 peers this way
    return ip


def _resolve(name: str) -> set[IP]:
    """Every address of host `name` (loopback names: 127.0.0.1 and ::1); empty when it
    does not resolve (yet)."""
    found: set[IP] = set(_LOOPBACK) if name in LOOPBACK_NAMES else set()
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return found
    for info in infos:
        ip = _ip(str(info[4][0]))
        if ip is not None:
            found.add(ip)
    return found


class PeerFilter:
    """The addresses that may connect to a task port without credentials.

    Args:
        cluster: the task addresses ("host:port") of the ClusterSpec.
        allow_from: more hosts, addresses or CIDRs (`parse_network`), or "any".
        task: the task's name, for the log.

    Raises:
        ValueError: a malformed address or allow-from entry (the message names it).
    """

    def __init__(self, cluster: Iterable[str], allow_from: Iterable[str] = (),
                 task: str = "") -> None:
        self.task = task
        self._networks: list[Network] = []
        self._names: set[str] = set()
        self._ips: frozenset[IP] = frozenset()
        self._lock = threading.Lock()
        self._resolving: threading.Thread | None = None
        self._resolved_at: float | None = None  # monotonic time of the last resolution
        for entry in allow_from:
            if entry.strip().lower() == ALLOW_ANY:
                self._networks += [ipaddress.ip_network("0.0.0.0/0"),
                                   ipaddress.ip_network("::/0")]
                continue
            net = parse_network(entry)
            if isinstance(net, str):
                self._names.add(net)
            else:
                self._networks.append(net)
        self.add_hosts(cluster)

    def add_hosts(self, addresses: Iterable[str]) -> None:
        """Admits the hosts of these task addresses too (tasks that joined the cluster)."""
        literal: set[IP] = set()
        names: set[str] = set()
        for address in addresses:
            if not address:
                continue
            host = parse_host_port(address)[0]
            ip = _ip(host)
            if ip is not None:
                literal.add(ip)
            else:
                names.add(host)
                literal.update(_LOOPBACK if host in LOOPBACK_NAMES else ())
        with self._lock:
            self._ips = self._ips | literal
            self._names |= names
        self._refresh(force=True)

    def wait_resolved(self, timeout: float) -> None:
        """Waits at most `timeout` seconds for the host names' resolution in progress."""
        thread = self._resolving
        if thread is not None:
            thread.join(timeout)

    @property
    def admits_any(self) -> bool:
        """Whether every address may connect (`--allow-from any`)."""
        return any(net.prefixlen == 0 for net in self._networks)

    def refusal(self, peer: str, local: str = "") -> str | None:
        """None when `peer` (an IP address) may connect, else why not (for the log).

        `local` is the address the connection reached: a peer with that same address
        is this machine.
        """
        ip = _ip(peer)
        if ip is None:
            return None  # not an IP connection (a Unix socket): this machine
        if ip in self._ips or (local and ip == _ip(local)) or \
                any(ip in net for net in self._networks):
            return None
        self._refresh()  # a task that moved may be admitted on its next try
        known = sorted(str(a) for a in self._ips)
        shown = ", ".join(known[:6]) + (", ..." if len(known) > 6 else "")
        pending = " (some of its host names do not resolve yet)" if self._unresolved() else ""
        return (f"{ip} is not a host of the cluster (its ClusterSpec's hosts are "
                f"{shown or 'none resolved yet'}{pending}); {_HINT}")

    def _unresolved(self) -> bool:
        return bool(self._names) and (self._resolved_at is None or self._resolving is not None)

    def _refresh(self, force: bool = False) -> None:
        """Resolves the host names again, in the background (at most every 2 s), so an
        accept loop never waits for DNS."""
        with self._lock:
            last = self._resolved_at
            due = force or last is None or time.monotonic() - last >= _REFRESH_SECS
            if not self._names or self._resolving is not None or not due:
                return
            names = sorted(self._names)
            self._resolving = threading.Thread(target=self._resolve, args=(names,),
                                               daemon=True, name=f"tw-resolve-{self.task}")
            self._resolving.start()

    def _resolve(self, names: list[str]) -> None:
        found: set[IP] = set()
        for name in names:
            found |= _resolve(name)
        with self._lock:
            self._ips = self._ips | found
            self._resolved_at = time.monotonic()
            self._resolving = None
            missed = self._names != set(names)  # hosts added meanwhile
        if missed:
            self._refresh(force=True)
        log.debug("%s: the cluster's host names %s resolve to %s", self.task, names,
                  sorted(map(str, found)))


def for_server(cluster: Iterable[str], task: str, credentials: Any,
               allow_from: Iterable[str] | None = None) -> PeerFilter | None:
    """The filter a server's task port applies: None when it has credentials (they
    decide) or allows any address; `allow_from` None reads TENSORWEAVE_ALLOW_FROM."""
    if credentials is not None and credentials.enabled:
        return None
    extra = knobs.ALLOW_FROM.get() if allow_from is None else tuple(allow_from)
    peer_filter = PeerFilter(cluster, extra, task)
    if peer_filter.admits_any:
        return None
    peer_filter.wait_resolved(_START_WAIT_SECS)  # resolved at start, unless DNS is slow
    return peer_filter


def admit(peer_filter: PeerFilter | None, conn: socket.socket, peer: Any) -> bool:
    """The accept-time check: True to serve `conn`; False when `peer` (the address
    `accept()` returned) may not connect, then logged and `conn` closed."""
    if peer_filter is None or not isinstance(peer, tuple):
        return True
    try:
        local = str(conn.getsockname()[0])
    except OSError:
        local = ""
    why = peer_filter.refusal(str(peer[0]), local)
    if why is None:
        return True
    sidechannel.log_refused(peer_filter.task, f"{peer[0]}:{peer[1]}", why)
    conn.close()
    return False

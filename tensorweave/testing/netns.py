"""A multi-host test bed on one machine: each host a Linux network namespace.

A `NetnsBed` makes a bridge in a namespace of its own and, per host, a namespace
joined to it by a veth pair, with its own address in a private /24
(10.213.<n>.0/24, checked free on this machine). Nothing touches the root
namespace's interfaces, so the bed cannot disturb the machine's network, and
tasks on distinct hosts talk as machines do: TCP over an interface, no loopback,
no shared abstract Unix socket namespace (Linux keeps abstract sockets per
network namespace).

Namespaces are named `tw-nb-<pid>-<bed>-<host>`; `close()` removes every one the
bed made (and kills the processes it started), and `sweep_stale()`, run by every
new bed, removes those of processes that no longer run (a test killed hard).

Needs root and `ip netns`: `unavailable_reason()` says why a bed cannot be made
(the tests skip with it).

Example:
    >>> with NetnsBed(["ps0", "worker0"]) as bed:  # doctest: +SKIP
    ...     p = bed.popen("ps0", [sys.executable, "-m", "http.server", "8000"])
    ...     bed.wait_listening("ps0", 8000)
"""
from __future__ import annotations

import ctypes
import ipaddress
import itertools
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
from typing import Any, Callable, Iterable, TypeVar

from tensorweave.base.waits import Backoff, Wait

__all__ = ["NetnsBed", "in_netns", "sweep_stale", "unavailable_reason"]

PREFIX = "tw-nb-"
_CLONE_NEWNET = 0x40000000
_NETNS_DIR = "/run/netns"
_beds = itertools.count()
_T = TypeVar("_T")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and proc.returncode != 0:
        raise RuntimeError(f"`ip {' '.join(args)}` failed ({proc.returncode}): "
                           f"{proc.stderr.strip()}")
    return proc


def unavailable_reason() -> str | None:
    """Why a bed cannot be made here (not root, no `ip`, `ip netns` refused), or None."""
    if os.geteuid() != 0:
        return "the network-namespace test bed needs root (ip netns add)"
    if shutil.which("ip") is None:
        return "the network-namespace test bed needs iproute2's `ip` command"
    name = f"{PREFIX}{os.getpid()}-probe"
    try:
        made = _ip("netns", "add", name, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"`ip netns add` failed: {e}"
    if made.returncode != 0:
        return f"`ip netns add` is not allowed here: {made.stderr.strip()}"
    _ip("netns", "del", name, check=False)
    return None


def _ours(name: str) -> int | None:
    """The pid that made namespace `name`, when it is one of ours."""
    m = re.match(rf"^{re.escape(PREFIX)}(\d+)-", name)
    return int(m.group(1)) if m else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def sweep_stale() -> list[str]:
    """Deletes our namespaces whose creating process is gone; returns their names."""
    stale = [n for n in _namespaces() if (pid := _ours(n)) is not None and not _alive(pid)]
    for name in stale:
        _ip("netns", "del", name, check=False)
    return stale


def _used_networks() -> list[ipaddress.IPv4Network]:
    nets = []
    for args in (("-4", "-o", "addr", "show"), ("-4", "route", "show", "table", "all")):
        for word in _ip(*args, check=False).stdout.split():
            if re.fullmatch(r"\d+\.\d+\.\d+\.\d+(/\d+)?", word):
                nets.append(ipaddress.IPv4Network(word, strict=False))
    return nets


def _free_subnet(rng: random.Random) -> ipaddress.IPv4Network:
    used = _used_networks()
    for third in rng.sample(range(256), 256):
        net = ipaddress.IPv4Network(f"10.213.{third}.0/24")
        if not any(net.overlaps(u) for u in used if u.prefixlen > 0):
            return net
    raise RuntimeError("No free /24 in 10.213.0.0/16 on this machine for the test bed.")


def in_netns(netns: str, fn: Callable[[], _T]) -> _T:
    """Runs `fn()` on a thread that has entered network namespace `netns`; returns its
    result. Sockets made there stay in that namespace, whatever thread uses them later.

    Example:
        >>> sock = in_netns(bed.netns("ps0"), socket.socket)  # doctest: +SKIP
    """
    result: list[Any] = []

    def run() -> None:
        try:
            enter_netns(netns)
            result.append((True, fn()))
        except BaseException as e:  # noqa: BLE001 - handed to the caller
            result.append((False, e))
    t = threading.Thread(target=run, name=f"in-netns-{netns}", daemon=True)
    t.start()
    t.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def enter_netns(netns: str) -> None:
    """Moves the calling thread (only it) into network namespace `netns`."""
    fd = os.open(os.path.join(_NETNS_DIR, netns), os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {netns}: {os.strerror(err)}")
    finally:
        os.close(fd)


class NetnsBed:
    """Hosts in network namespaces on one bridge, each with its own 10.213.n.x address.

    Args:
        hosts: the host names (the bed's own labels, e.g. "ps0", "proxy").
        seed: picks the subnet (a random free one by default).

    Attributes:
        subnet: the bed's /24.
        ips: host -> its address (".2" onwards, in `hosts` order).
    """

    def __init__(self, hosts: Iterable[str], seed: int | None = None) -> None:
        self.hosts = list(hosts)
        if len(set(self.hosts)) != len(self.hosts) or not self.hosts:
            raise ValueError(f"A bed needs distinct host names, got {self.hosts}.")
        if len(self.hosts) > 250:
            raise ValueError(f"A bed's /24 holds at most 250 hosts, got {len(self.hosts)}.")
        self.name = f"{PREFIX}{os.getpid()}-{next(_beds)}"
        self.subnet = ipaddress.IPv4Network("0.0.0.0/32")
        self.ips: dict[str, str] = {}
        self._made: list[str] = []
        self._procs: list[subprocess.Popen] = []
        self._seed = seed

    def netns(self, host: str) -> str:
        """The namespace name of `host`."""
        if host not in self.ips:
            raise KeyError(f"{host!r} is not a host of this bed ({sorted(self.ips)}).")
        return f"{self.name}-{host}"

    def start(self) -> "NetnsBed":
        reason = unavailable_reason()
        if reason:
            raise RuntimeError(reason)
        sweep_stale()
        self.subnet = _free_subnet(random.Random(self._seed))
        bridge = self._add_ns(f"{self.name}-br")
        _ip("-n", bridge, "link", "add", "br0", "type", "bridge")
        _ip("-n", bridge, "link", "set", "br0", "up")
        for i, host in enumerate(self.hosts):
            ns = self._add_ns(f"{self.name}-{host}")
            ip = str(self.subnet.network_address + 2 + i)
            _ip("-n", bridge, "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("-n", bridge, "link", "set", f"v{i}", "master", "br0", "up")
            _ip("-n", ns, "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            self.ips[host] = ip
        return self

    def unplug(self, host: str) -> None:
        """Takes `host`'s cable out of the bridge: a real, silent partition (the kernel drops
        its packets both ways, no error, no RST; TCP retransmits and backs off as across
        a cut link). `plug` puts it back."""
        port = f"v{self.hosts.index(host)}"
        self.netns(host)  # a KeyError naming the hosts for an unknown one
        _ip("-n", f"{self.name}-br", "link", "set", port, "nomaster")

    def plug(self, host: str) -> None:
        """Puts `host`'s cable back into the bridge (after `unplug`)."""
        port = f"v{self.hosts.index(host)}"
        _ip("-n", f"{self.name}-br", "link", "set", port, "master", "br0")

    def _add_ns(self, name: str) -> str:
        _ip("netns", "add", name)
        self._made.append(name)
        return name

    def command(self, host: str, argv: list[str]) -> list[str]:
        """`argv` run inside `host`'s namespace (`ip netns exec`, which execs it: the
        process's pid is argv's)."""
        return ["ip", "netns", "exec", self.netns(host), *argv]

    def popen(self, host: str, argv: list[str], **kwargs: Any) -> subprocess.Popen:
        """Starts `argv` inside `host`; killed by `close()` if still running."""
        p = subprocess.Popen(self.command(host, argv), **kwargs)
        self._procs.append(p)
        return p

    def connect(self, host: str, address: tuple[str, int], timeout: float = 2.0
                ) -> socket.socket:
        """A TCP connection made from inside `host` to `address` (OSError if refused)."""
        return in_netns(self.netns(host),
                        lambda: socket.create_connection(address, timeout=timeout))

    def wait_listening(self, host: str, address: tuple[str, int], timeout: float = 30,
                       proc: subprocess.Popen | None = None) -> None:
        """Waits until `address` accepts a TCP connection made from `host`.

        Raises:
            RuntimeError: `proc` exited first. TimeoutError: nothing listened in time.
        """
        wait = Wait(f"for {address[0]}:{address[1]} to listen (seen from {host})", timeout,
                    error=TimeoutError, backoff=Backoff(first=0.02, cap=0.2))
        while True:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"The process for {address} exited with code "
                                   f"{proc.returncode} before listening.")
            try:
                self.connect(host, address, timeout=0.5).close()
                return
            except OSError:
                wait.pause()

    def close(self) -> None:
        """Kills the bed's processes and deletes every namespace it made."""
        for p in self._procs:
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    pass
        self._procs.clear()
        for name in self._made:  # anything else still running inside (a task's child)
            for pid in _ip("netns", "pids", name, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
        for name in reversed(self._made):
            _ip("netns", "del", name, check=False)
        self._made.clear()

    def __enter__(self) -> "NetnsBed":
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc: Any) -> None:
        self.close()

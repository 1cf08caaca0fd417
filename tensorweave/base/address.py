"""Task addresses: the one "host:port" parser, loopback set and same-host test.

Every layer that reads a task address ("ps0:2222", "[::1]:2222", "10.0.0.1:2222",
optionally "grpc://"-prefixed) splits it here, so an address is accepted or refused
the same way by the ClusterSpec, the server, the transports and the local registry.

Example:
    >>> parse_host_port("ps0.example.com:2222")
    ('ps0.example.com', 2222)
    >>> address_key("127.0.0.1:2222")
    ('localhost', 2222)
    >>> same_host("localhost:2222")
    True
"""
from __future__ import annotations

import functools
import ipaddress
import re
import socket
from typing import Union

__all__ = ["LOOPBACK_NAMES", "Network", "address_key", "is_loopback", "parse_host_port",
           "parse_network", "same_host"]

Network = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]
_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?$")

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "ip6-localhost"})
"""Host names that all mean "this machine's loopback interface" (one key: "localhost")."""

_FORM = "write it as 'host:port', e.g. 'localhost:2222' (an IPv6 host in brackets: '[::1]:2222')"


def parse_host_port(address: str) -> tuple[str, int]:
    """Splits "host:port" (or "[ipv6]:port", optionally "grpc://"-prefixed).

    Args:
        address: A task address as found in a ClusterSpec.

    Returns:
        (host, port) with port an int in [0, 65535]; IPv6 hosts lose their brackets.

    Raises:
        TypeError: If `address` is not a string.
        ValueError: If the host or port is missing, the port is not a number in range,
            or an IPv6 host is not in brackets; the message names the address.

    Example:
        >>> parse_host_port("[::1]:2222")
        ('::1', 2222)
        >>> parse_host_port("grpc://w0:2223")
        ('w0', 2223)
    """
    if not isinstance(address, str):
        raise TypeError(f"An address must be a string 'host:port', got "
                        f"{type(address).__name__}: {address!r}.")
    rest = address.split("://", 1)[1] if "://" in address else address
    if rest.startswith("["):
        host, sep, tail = rest[1:].partition("]")
        if not sep or (tail and not tail.startswith(":")):
            raise ValueError(f"Address {address!r} has a malformed IPv6 host; write it as "
                             "'[::1]:2222'.")
        port = tail[1:]
    else:
        host, sep, port = rest.rpartition(":")
        if not sep:
            host, port = rest, ""
        elif ":" in host:
            raise ValueError(f"Address {address!r} looks like a bare IPv6 address; put the "
                             "host in brackets: '[::1]:2222'.")
    if not port:
        raise ValueError(f"Address {address!r} has no port; {_FORM}.")
    if not host:
        raise ValueError(f"Address {address!r} has no host; {_FORM}.")
    if not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535:
        raise ValueError(f"Address {address!r} has port {port!r}, which is not a number in "
                         f"[0, 65535]; {_FORM}.")
    return host, int(port)


def parse_network(entry: str) -> Network | str:
    """A host allowed to connect, as `--allow-from` names it: a network, or a name to resolve.

    Args:
        entry: a CIDR ("10.0.0.0/8", "fd00::/8"), one address ("10.0.0.7", "::1" or
            "[::1]"), or a host name ("ps0.example.com"); no port.

    Returns:
        An `ipaddress` network (an address is a network of one), or the host name as given.

    Raises:
        ValueError: a malformed entry (a port, a bad CIDR, a name that is not a host
            name); the message names it.

    Example:
        >>> parse_network("10.1.0.0/16"), parse_network("[::1]"), parse_network("w0")
        (IPv4Network('10.1.0.0/16'), IPv6Network('::1/128'), 'w0')
    """
    text = entry.strip() if isinstance(entry, str) else entry
    if not isinstance(text, str) or not text:
        raise ValueError(f"Allowed host {entry!r} is empty; name a host, an address or a "
                         "CIDR such as '10.0.0.0/8'.")
    bare = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    try:
        return ipaddress.ip_network(bare, strict=False)
    except ValueError as e:
        if "/" in bare or bare.count(":") > 1 or bare.replace(".", "").isdigit():
            raise ValueError(f"Allowed host {entry!r} is not a valid address or CIDR ({e}); "
                             "write e.g. '10.0.0.7' or '10.0.0.0/8'.") from None
    if ":" in bare:
        raise ValueError(f"Allowed host {entry!r} has a port; name the host only (any port "
                         f"of it may connect), e.g. {bare.rpartition(':')[0]!r}.")
    if not _HOST_NAME.match(bare):
        raise ValueError(f"Allowed host {entry!r} is not a host name, an address or a CIDR; "
                         "write e.g. 'ps0.example.com', '10.0.0.7' or '10.0.0.0/8'.")
    return bare


def is_loopback(host: str) -> bool:
    """Whether `host` (no port) names the loopback interface: a loopback name or 127.x.

    Example:
        >>> is_loopback("127.0.0.5"), is_loopback("ps0")
        (True, False)
    """
    return host in LOOPBACK_NAMES or host.startswith("127.")


def address_key(address: str) -> tuple[str, int]:
    """(host, port) with every loopback name spelled "localhost": one key per listener.

    "127.0.0.1:2222", "[::1]:2222" and "localhost:2222" give the same key, so a
    process finds its own server (or same-host socket) whichever spelling a
    ClusterSpec uses.

    Raises:
        ValueError: As `parse_host_port`.

    Example:
        >>> address_key("[::1]:2222")
        ('localhost', 2222)
    """
    host, port = parse_host_port(address)
    return ("localhost" if host in LOOPBACK_NAMES else host), port


def same_host(address: str) -> bool:
    """Whether "host:port" names this machine (loopback, or one of its own host names).

    Raises:
        ValueError: As `parse_host_port`.

    Example:
        >>> same_host("127.0.0.1:2222"), same_host("ps0.example.invalid:2222")
        (True, False)
    """
    host = parse_host_port(address)[0]
    return is_loopback(host) or host in _own_names()


@functools.lru_cache(maxsize=1)
def _own_names() -> frozenset[str]:
    # Cached: getfqdn may ask the resolver, and a host's names do not change while it runs.
    name = socket.gethostname()
    return frozenset({name, name.split(".")[0], socket.getfqdn()})

"""tensorweave.base.address: the one host:port parser, loopback set and same-host test.

The transports, the server and the local-server registry all read addresses through
it, so the cases below are what every one of them accepts or refuses.
"""
from __future__ import annotations

import doctest
import socket

import pytest

from tensorweave.base import address as address_module
from tensorweave.base.address import (LOOPBACK_NAMES, address_key, is_loopback,
                                      parse_host_port, same_host)
from tensorweave.distributed import peers
from tensorweave.distributed.transport.unix import socket_name


@pytest.mark.parametrize("address, expected", [
    ("localhost:2222", ("localhost", 2222)),
    ("ps0.example.com:0", ("ps0.example.com", 0)),
    ("10.0.0.1:65535", ("10.0.0.1", 65535)),
    ("[::1]:2222", ("::1", 2222)),
    ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
    ("grpc://w0:2223", ("w0", 2223)),
    ("grpc://[::]:7", ("::", 7)),
])
def test_parse_host_port(address, expected):
    assert parse_host_port(address) == expected


@pytest.mark.parametrize("address, message", [
    ("localhost", "has no port"),
    ("localhost:", "has no port"),
    ("[::1]", "has no port"),
    ("[::1]:", "has no port"),
    (":2222", "has no host"),
    ("host:http", "port 'http', which is not a number"),
    ("host:-1", "port '-1', which is not a number"),
    ("host:70000", "port '70000', which is not a number"),
    ("host:２２", "port '２２', which is not a number"),  # full-width digits are not a port
    ("::1:2222", "put the host in brackets"),
    ("[::1:2222", "malformed IPv6"),
    ("[::1]x:2222", "malformed IPv6"),
])
def test_parse_host_port_errors(address, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_host_port(address)
    assert repr(address) in str(info.value)
    assert "host:port" in str(info.value) or "[::1]:2222" in str(info.value)


def test_parse_host_port_type_error():
    with pytest.raises(TypeError, match="int"):
        parse_host_port(2222)


@pytest.mark.parametrize("spelling", ["localhost:2222", "127.0.0.1:2222", "[::1]:2222",
                                      "ip6-localhost:2222", "grpc://localhost:2222"])
def test_every_loopback_spelling_has_one_key(spelling):
    assert address_key(spelling) == ("localhost", 2222)


def test_other_hosts_keep_their_name_and_ports_differ():
    assert address_key("ps0:2222") == ("ps0", 2222)
    assert address_key("localhost:2222") != address_key("localhost:2223")
    assert address_key("10.0.0.1:2222") != address_key("localhost:2222")


def test_address_key_refuses_what_the_parser_refuses():
    with pytest.raises(ValueError, match="'ps0' has no port"):
        address_key("ps0")


def test_loopback_set_and_127_network():
    assert {"localhost", "127.0.0.1", "::1"} <= LOOPBACK_NAMES
    assert is_loopback("127.3.4.5") and is_loopback("::1")
    assert not is_loopback("10.0.0.1") and not is_loopback("ps0")


def test_same_host_knows_loopback_and_this_machine_s_names():
    assert same_host("127.0.0.1:1") and same_host("[::1]:1") and same_host("localhost:1")
    assert same_host(f"{socket.gethostname()}:2222")
    assert same_host(f"{socket.gethostname().split('.')[0]}:2222")
    assert not same_host("ps0.example.invalid:2222")


def test_transports_and_registry_use_the_same_key():
    # The unix socket and the in-process registry find a task whichever spelling is used.
    assert socket_name("127.0.0.1:2222") == socket_name("localhost:2222") \
        == socket_name("[::1]:2222") == "\0tensorweave:localhost:2222"
    marker = object()
    peers.register_local("127.0.0.1:45999", marker)
    try:
        assert peers.local_server("localhost:45999") is marker
        assert peers.local_server("[::1]:45999") is marker
        assert peers.local_server("localhost:46000") is None
    finally:
        peers.unregister_local("localhost:45999", marker)
    assert peers.local_server("127.0.0.1:45999") is None


def test_doctests():
    result = doctest.testmod(address_module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("entry, expected", [
    ("10.1.0.0/16", "10.1.0.0/16"), ("10.1.2.3/16", "10.1.0.0/16"), ("10.0.0.7", "10.0.0.7/32"),
    ("::1", "::1/128"), ("[fd00::]", "fd00::/128"), ("ps0.example.com", "ps0.example.com"),
])
def test_parse_network(entry, expected):
    from tensorweave.base.address import parse_network
    assert str(parse_network(entry)) == expected


@pytest.mark.parametrize("entry, message", [
    ("ps0:2222", "has a port"), ("10.0.0.1:80", "has a port"), ("1.2.3.4.5", "not a valid"),
    ("fd00::/200", "not a valid"), ("a b", "not a host name"), ("  ", "is empty")])
def test_parse_network_names_bad_entries(entry, message):
    from tensorweave.base.address import parse_network
    with pytest.raises(ValueError, match=message):
        parse_network(entry)

"""Credentials on the gRPC path: channels, the servers' check, the refusal server.

A task's port terminates TLS itself (shared_port.py, sidechannel.py) and relays
the decrypted HTTP/2 to the task's gRPC server on a private abstract socket,
from a socket bound to a name registered with the peer's real address. The
server's `Guard` runs first in every handler: with TLS it accepts only calls
that came through such a verified relay (a process of this host cannot skip
TLS by dialling the private socket); with a token it compares the call's
`AUTH_METADATA` digest in constant time. A client that speaks plain gRPC to a
TLS task is relayed to a `RefusalServer` that answers every call with
UNAUTHENTICATED, so it learns what to set instead of seeing a reset.

Example:
    >>> channel = secure_channel("ps0:2222", creds, GRPC_OPTIONS)  # doctest: +SKIP
"""
from __future__ import annotations

import socket
import ssl
import threading
from concurrent import futures
from typing import Any

import grpc

from tensorweave.base.address import parse_host_port
from tensorweave.distributed.transport.tcp import bulk, bulk_auth, outbound
from tensorweave.distributed.transport import limits, sidechannel
from tensorweave.distributed.transport.credentials import (
    SERVER_NAME_ENV, TLS_HINT, TOKEN_HINT, Credentials, refused)
from tensorweave.framework import errors

__all__ = ["AUTH_METADATA", "Guard", "RefusalServer", "call_metadata", "diagnose",
           "register_relay", "secure_channel", "unregister_relay"]

AUTH_METADATA = "tensorweave-auth"  # the token's digest, hex
_relays: dict[str, tuple[str, bool]] = {}  # relay socket name -> (real peer, TLS-verified)
_relays_lock = threading.Lock()


def register_relay(name: str, peer: str, verified: bool) -> None:
    """Records that the relay socket `name` carries `peer`'s connection."""
    with _relays_lock:
        _relays[name] = (peer, verified)


def unregister_relay(name: str) -> None:
    with _relays_lock:
        _relays.pop(name, None)


def _relay_of(context: grpc.ServicerContext) -> tuple[str, bool]:
    name = context.peer().partition(":")[2]
    with _relays_lock:
        return _relays.get(name, (context.peer() or "an unknown peer", False))


def secure_channel(address: str, creds: Credentials, options: list) -> grpc.Channel:
    """A channel to `address` with this process's credentials (plain when none or token).

    A host:port is dialled through this process's `outbound.Dialer` where it tunes the
    TCP connections (outbound.grpc_target); the channel still names `address` (its
    authority; with TLS, the host its certificate is checked against, or
    TENSORWEAVE_TLS_SERVER_NAME, which gRPC then also sends as the authority)."""
    target, name = address, creds.server_name
    try:
        host, port = parse_host_port(address)
    except ValueError:
        pass  # a gRPC target of its own ("unix-abstract:..."): dialled as it is
    else:
        target, name = outbound.grpc_target(host, port), name or host
    if not creds.tls:
        if target != address:
            options = [*options, ("grpc.default_authority", address)]
        return grpc.insecure_channel(target, options=options)
    tls = grpc.ssl_channel_credentials(root_certificates=creds.ca, private_key=creds.key,
                                       certificate_chain=creds.cert)
    if name:
        options = [*options, ("grpc.ssl_target_name_override", name)]
    return grpc.secure_channel(target, tls, options=options)


def call_metadata(creds: Credentials) -> tuple[tuple[str, str], ...] | None:
    """What every call sends: the token's digest (None without a token)."""
    return ((AUTH_METADATA, creds.digest.hex()),) if creds.token else None


class Guard:
    """Checks each call's credentials before its handler runs; aborts it otherwise.

    Args:
        creds: the serving task's credentials.
        task: its name, in the refusal text and the log.
    """

    def __init__(self, creds: Credentials, task: str) -> None:
        self._creds, self._task = creds, task

    def __call__(self, context: grpc.ServicerContext, method: str = "") -> None:
        """Aborts the call of `method` (its gRPC name, "JobDone", for the messages)
        unless its credentials hold."""
        creds = self._creds
        if not creds.enabled:
            return
        peer, verified = _relay_of(context)
        if creds.tls and not verified:
            self._refuse(context, peer, method, grpc.StatusCode.UNAUTHENTICATED,
                         "the call did not come through the task port's TLS", TLS_HINT)
        if creds.token:
            sent = dict(context.invocation_metadata()).get(AUTH_METADATA)
            if sent is None:
                self._refuse(context, peer, method, grpc.StatusCode.UNAUTHENTICATED,
                             "it requires an auth token", TOKEN_HINT)
            try:
                digest = bytes.fromhex(str(sent))
            except ValueError:
                digest = b""
            if not creds.token_matches(digest):
                self._refuse(context, peer, method, grpc.StatusCode.PERMISSION_DENIED,
                             "wrong auth token", TOKEN_HINT)

    def _refuse(self, context: grpc.ServicerContext, peer: str, method: str,
                code: grpc.StatusCode, reason: str, hint: str) -> None:
        sidechannel.log_refused(self._task, peer, f"gRPC call {method or '?'}: {reason}")
        context.abort(code, refused(code.value[0], self._task, reason, hint,
                                    method=method).message)


class _RefuseAll(grpc.GenericRpcHandler):
    def __init__(self, task: str) -> None:
        self._task = task

    def service(self, handler_call_details: Any) -> grpc.RpcMethodHandler:
        task = self._task

        def refuse(request: Any, context: grpc.ServicerContext) -> bytes:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, refused(
                errors.UNAUTHENTICATED, task, "it requires TLS", TLS_HINT).message)
            return b""
        return grpc.unary_unary_rpc_method_handler(refuse)


class RefusalServer:
    """A plain gRPC server on a private abstract socket that refuses every call.

    Args:
        socket_name: its abstract socket name (without the leading NUL).
        task: the task named in the refusal.
    """

    def __init__(self, socket_name: str, task: str) -> None:
        self._server = grpc.server(futures.ThreadPoolExecutor(2, f"tw-refuse-{task}"))
        self._server.add_generic_rpc_handlers((_RefuseAll(task),))
        if not self._server.add_insecure_port(f"unix-abstract:{socket_name}"):
            raise ValueError(f"Cannot listen on the private socket {socket_name!r}.")
        self._server.start()

    def stop(self) -> None:
        self._server.stop(None)


def diagnose(host: str, port: int, creds: Credentials, who: str) -> errors.OpError | None:
    """Why a TLS call to `who` at host:port failed, when the credentials are the cause
    (a probe connection: TLS, then a bulk request for a token that does not exist)."""
    try:
        raw = socket.create_connection((host, port),
                                       timeout=limits.handshake_timeout_secs())
    except OSError:
        return None  # nothing listens: the task is down, not refusing
    try:
        try:
            sock = creds.client_context().wrap_socket(
                raw, server_hostname=creds.server_name or host)
        except ssl.SSLCertVerificationError as e:
            why = sidechannel.reason(e)
            if "hostname" in why.lower():
                why += f"; {SERVER_NAME_ENV} sets the name its certificate must have"
            return refused(errors.PERMISSION_DENIED, who, "its certificate does not verify "
                           f"against this process's CA ({why})", TLS_HINT)
        except (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError) as e:
            return _closed_in_handshake(who, host, port, e)
        except (ssl.SSLError, OSError) as e:
            if "ALERT" in str(getattr(e, "reason", "")):
                return _not_accepted(who, e)
            return refused(errors.UNAUTHENTICATED, who, f"it does not answer TLS at "
                           f"{host}:{port} ({sidechannel.reason(e)})", "give every task the "
                           "same TLS credentials")
        with sock:
            sock.sendall(bulk_auth.BULK_TOKEN_MAGIC + creds.digest if creds.token
                         else bulk.MAGIC)
            sock.sendall(bytes(bulk.TOKEN_BYTES))
            answer = sock.recv(8)
    except ssl.SSLError as e:  # TLS 1.3: the server's verdict on our certificate comes now
        return _not_accepted(who, e)
    except OSError:
        return None
    finally:
        raw.close()
    if not answer and creds.token:
        return refused(errors.PERMISSION_DENIED, who, "wrong auth token", TOKEN_HINT)
    return None


def _closed_in_handshake(who: str, host: str, port: int, e: BaseException
                         ) -> errors.OpError:
    """A task that closed (or reset) the connection mid-handshake. A task without TLS
    does that to a TLS client when it has a token; one that admits only its
    ClusterSpec's hosts, or is at its connection limit, does it to any client. A plain
    connection tells them apart: the first answers it, the others close it too."""
    why = sidechannel.reason(e)
    answer = _plain_answer(host, port)
    if answer:
        return refused(errors.UNAUTHENTICATED, who, f"it does not answer TLS at {host}:{port} "
                       f"(it closed the TLS handshake, {why}, and answers a plain "
                       "connection)", "give every task the same TLS credentials")
    causes = ("it does not admit this host (without credentials a task admits only its "
              "ClusterSpec's hosts; --allow-from adds others), or it has "
              f"{limits.ENV_MAX_CONNECTIONS} connections open")
    if answer is None:  # no plain connection either, or no answer to it in time
        causes = f"it may not use TLS (give every task the same credentials), {causes}"
    return errors.UnavailableError(
        None, None, f"Task {who} closed the connection during the TLS handshake at "
        f"{host}:{port} ({why}): {causes}; its log names the reason.")


# HTTP/2's client preface and an empty SETTINGS frame: a gRPC server answers with its own.
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_PLAIN_ANSWER_SECS = 2.0


def _plain_answer(host: str, port: int) -> bytes | None:
    """What the task at host:port answers a plain gRPC client's first bytes: some bytes,
    b"" when it closes the connection at once, None when there is no connection or no
    answer within _PLAIN_ANSWER_SECS."""
    try:
        with socket.create_connection((host, port), timeout=_PLAIN_ANSWER_SECS) as sock:
            sock.sendall(_H2_HELLO)
            return sock.recv(64)
    except ConnectionRefusedError:
        return None  # nothing listens now: it says nothing of the task that closed
    except ConnectionError:
        return b""
    except OSError:
        return None


def _not_accepted(who: str, e: BaseException) -> errors.OpError:
    return refused(errors.PERMISSION_DENIED, who, "it did not accept this process's "
                   f"certificate ({sidechannel.reason(e)})", TLS_HINT)

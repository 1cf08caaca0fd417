"""Master/worker calls over gRPC: a message plus raw tensors, no size ceiling.

A call carries one frame: a 4-byte length, an Envelope (the call's protobuf
message and its tensors' headers), then the raw bytes of the small tensors.
A big tensor is never in a frame: the sender offers it under a one-time token
and the receiver pulls it over a raw connection to the same task port (bulk.py,
shared_port.py), or, if that fails or TENSORWEAVE_BULK=0, over the gRPC
`FetchPayload` stream. Requests
with big tensors go as a gRPC stream of the frame and chunk messages instead.
Nothing is pickled; tf.errors travel as gRPC status codes (TF's codes are
gRPC's codes). Unary calls because gRPC Python's streaming calls cost about
three times as much per call, and steps make several calls.
"""
from __future__ import annotations

import functools
import struct
from typing import Any, Callable, Iterator

import grpc
import numpy as np
from google.protobuf.message import DecodeError

from tensorweave.base.address import parse_host_port
from tensorweave.base import knobs
from tensorweave.distributed.protocol.methods import Method
from tensorweave.distributed.protocol.rpc_pb2 import Envelope
from tensorweave.distributed.protocol.tensor_wire_pb2 import TensorRequest
from tensorweave.distributed.transport.tcp import bulk as bulk_mod
from tensorweave.distributed.transport import codec, limits
from tensorweave.distributed.transport.tcp import bulk_auth, grpc_auth, outbound
from tensorweave.distributed.transport.credentials import NONE, Credentials
from tensorweave.distributed.transport.tcp.stream import GRPC_OPTIONS
from tensorweave.framework import errors

Tensors = list[np.ndarray]
INLINE_MAX = 1 << 20        # tensors up to this size travel inside the frame
_LEN = struct.Struct("<I")
FETCH_METHOD = "FetchPayload"


def bulk_enabled() -> bool:
    """Big tensors move over raw connections to the task port unless TENSORWEAVE_BULK=0."""
    return knobs.BULK.get()


def _identity(b: bytes) -> bytes:
    return b


def pack(message: Any, tensors: Tensors, offer: Callable[[list, int], tuple[bytes, int]]
         | None = None) -> tuple[bytes, list[memoryview]]:
    """A frame with small tensors inline; big ones offered (or returned as chunks)."""
    env = Envelope(message=message.SerializeToString())
    inline: list[memoryview] = []
    streamed: list[memoryview] = []
    for t in tensors:
        header, chunks = codec.encode(t)
        if header.nbytes <= INLINE_MAX:
            header.num_chunks = 0
            inline.extend(chunks)
        elif offer is not None:
            header.num_chunks = 0
            header.bulk_token, header.bulk_port = offer(chunks, header.nbytes)
        else:
            streamed.extend(chunks)
        env.tensors.append(header)
    body = env.SerializeToString()
    return b"".join([_LEN.pack(len(body)), body, *inline]), streamed


def unpack(frame: bytes, message_type: Any, chunks: Iterator[bytes] | None = None,
           fetch: Callable[[Any], np.ndarray] | None = None) -> tuple[Any, Tensors]:
    """Inverse of `pack`: inline tensors from the frame, chunked ones from `chunks`,
    offered ones through `fetch(header)`.

    Raises:
        tf.errors.InvalidArgumentError: a frame that is not one (short, a length past
            its end, an Envelope that does not parse, inline tensors past its end, a
            tensor larger than TENSORWEAVE_MAX_TENSOR_BYTES): nothing is allocated.
    """
    env, pos = _envelope(frame)
    view = memoryview(frame)
    tensors = []
    for header in env.tensors:
        if header.bulk_token:
            if fetch is None:
                raise errors.InternalError(None, None, "Offered tensor without a way to pull")
            tensors.append(fetch(header))
            continue
        asm = codec.TensorAssembler(header)
        if header.num_chunks:
            for _ in range(header.num_chunks):
                asm.write(next(chunks))  # type: ignore[arg-type]
        else:
            asm.write(view[pos:pos + header.nbytes])
            pos += header.nbytes
        tensors.append(asm.finish())
    try:
        return message_type.FromString(env.message), tensors
    except DecodeError as e:
        raise _bad_frame(f"its {message_type.__name__} does not parse ({e})") from None


def _bad_frame(why: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, f"Malformed call frame: {why}. The caller "
                                       "does not speak tensorweave's protocol (or a different "
                                       "version of it).")


def _envelope(frame: bytes) -> tuple[Any, int]:
    """The frame's Envelope and where its inline bytes start, every size checked."""
    if len(frame) < _LEN.size:
        raise _bad_frame(f"{len(frame)} bytes, shorter than its length prefix")
    (n,) = _LEN.unpack_from(frame)
    if n > len(frame) - _LEN.size:
        raise _bad_frame(f"its envelope claims {n} bytes, only {len(frame) - _LEN.size} came")
    try:
        env = Envelope.FromString(frame[4:4 + n])
    except DecodeError as e:
        raise _bad_frame(f"the envelope does not parse ({e})") from None
    limit, inline = limits.max_tensor_bytes(), 0
    for h in env.tensors:
        if h.nbytes > limit:
            raise _bad_frame(f"a tensor of {h.nbytes} bytes is announced, more than "
                             f"{limits.ENV_MAX_TENSOR_BYTES}={limit}")
        if not h.bulk_token and not h.num_chunks:
            inline += h.nbytes
    if inline > len(frame) - 4 - n:
        raise _bad_frame(f"its inline tensors need {inline} bytes, only "
                         f"{len(frame) - 4 - n} came")
    return env, 4 + n


def _abort_bad(context: grpc.ServicerContext, e: errors.OpError) -> None:
    context.abort(_status(e.error_code), e.message)


def error_from_rpc(e: grpc.RpcError, peer: str, connect_error: str = "") -> errors.OpError:
    """A tf.errors instance for a failed call to `peer` (`connect_error`: why this
    process's newest TCP connection to it failed, outbound.connect_error)."""
    code = e.code()
    value = code.value[0] if code is not None else errors.UNKNOWN
    details = e.details() or str(code)
    if value == errors.UNAVAILABLE:
        details = f"Task {peer} is unavailable: {details}"
        if connect_error:  # the dialer's own connect failed: its cause, not gRPC's echo
            details = f"Task {peer} is unavailable: {connect_error}"
        elif "failed to connect" in details and ("Socket closed" in details
                                                  or "reset by peer" in details):
            # accepted, then closed before a byte was answered: refused by the task
            details += (" (the task closed the connection at once: without credentials it "
                        "admits only its ClusterSpec's hosts, --allow-from adds others; or "
                        "it has TENSORWEAVE_MAX_CONNECTIONS open; its log names the reason)")
    elif value == errors.DEADLINE_EXCEEDED and "Deadline" in details:
        details = f"Call to task {peer} timed out: {details}"
    return errors.make_error(value or errors.UNKNOWN, details)


def _status(code: int) -> grpc.StatusCode:
    for s in grpc.StatusCode:
        if s.value[0] == code:
            return s
    return grpc.StatusCode.UNKNOWN


class ServiceEndpoint:
    """Serves `impl.<snake_name>(request, tensors) -> (response, tensors)` for each method.

    Args:
        service_name: e.g. "tensorweave.Worker".
        methods: the method table.
        impl: the plain service object.
        bulk: where big response tensors are offered (`bulk.BulkOffers`; None: offers
            with no port, fetched over gRPC).
        guard: `guard(context, method name)` runs first in every handler and aborts
            calls whose credentials fail (`grpc_auth.Guard`; None: every call is served).
    """

    def __init__(self, service_name: str, methods: list[Method], impl: Any,
                 bulk: Any, guard: Callable[[grpc.ServicerContext, str], None] | None = None
                 ) -> None:
        self.service_name, self.methods, self.impl = service_name, methods, impl
        self.bulk: Any = bulk or bulk_mod.BulkOffers()
        self._guard = guard or (lambda context, method: None)

    def _offer(self, chunks: list, nbytes: int) -> tuple[bytes, int]:
        token = self.bulk.offer(chunks, nbytes)
        return token, self.bulk.port

    def _call(self, m: Method, req: Any, tensors: Tensors, context: grpc.ServicerContext
              ) -> bytes:
        try:
            resp, out = getattr(self.impl, m.py_name)(req, tensors)
        except errors.OpError as e:
            context.abort(_status(e.error_code), e.message)
        except Exception as e:  # noqa: BLE001 - reported to the caller, not swallowed
            context.abort(grpc.StatusCode.INTERNAL, f"{type(e).__name__}: {e}")
        frame, _ = pack(resp, out, self._offer)
        return frame

    def handler(self) -> grpc.GenericRpcHandler:
        table: dict[str, grpc.RpcMethodHandler] = {}
        for m in self.methods:
            table[m.name] = grpc.unary_unary_rpc_method_handler(
                self._unary(m), request_deserializer=_identity, response_serializer=_identity)
            table[m.name + "Stream"] = grpc.stream_unary_rpc_method_handler(
                self._streaming(m), request_deserializer=_identity,
                response_serializer=_identity)
        table[FETCH_METHOD] = grpc.unary_stream_rpc_method_handler(
            self._fetch, request_deserializer=_identity, response_serializer=_identity)
        return grpc.method_handlers_generic_handler(self.service_name, table)

    def _unary(self, m: Method) -> Callable[..., bytes]:
        def handle(frame: bytes, context: grpc.ServicerContext) -> bytes:
            self._guard(context, m.name)
            try:
                req, tensors = unpack(frame, m.request)
            except (errors.OpError, ValueError, StopIteration) as e:
                _abort_bad(context, _as_invalid(e))
            return self._call(m, req, tensors, context)
        return handle

    def _streaming(self, m: Method) -> Callable[..., bytes]:
        def handle(stream: Iterator[bytes], context: grpc.ServicerContext) -> bytes:
            self._guard(context, m.name)
            try:
                req, tensors = unpack(next(stream), m.request, chunks=stream)
            except (errors.OpError, ValueError, StopIteration, TypeError) as e:
                _abort_bad(context, _as_invalid(e))
            return self._call(m, req, tensors, context)
        return handle

    def _fetch(self, request: bytes, context: grpc.ServicerContext) -> Iterator[bytes]:
        """Serves an offered payload over gRPC (TENSORWEAVE_BULK=0, or a failed pull)."""
        self._guard(context, FETCH_METHOD)
        try:
            key = TensorRequest.FromString(request).key.encode("latin-1")
        except (DecodeError, UnicodeEncodeError) as e:
            _abort_bad(context, _bad_frame(f"FetchPayload request does not parse ({e})"))
        offer = self.bulk.take(key)
        if offer is None:
            context.abort(grpc.StatusCode.NOT_FOUND, "Offered tensor expired or already taken")
        for c in offer[0]:
            yield c.tobytes()


def _as_invalid(e: BaseException) -> errors.OpError:
    """A request that could not be unpacked, as the caller's error (a DecodeError of
    the message, a tensor header that contradicts itself, a stream that ends early)."""
    if isinstance(e, errors.OpError):
        return e
    return _bad_frame(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)


def grpc_options() -> list[tuple[str, Any]]:
    """GRPC_OPTIONS with the receive limit of TENSORWEAVE_MAX_MESSAGE_BYTES."""
    return [(k, limits.max_message_bytes() if k == "grpc.max_receive_message_length" else v)
            for k, v in GRPC_OPTIONS]


def keepalive_options() -> list[tuple[str, Any]]:
    """A client channel's health checks: while calls are in flight it pings the peer
    every third of TENSORWEAVE_PEER_SILENCE_SECS, and a ping unanswered for the other
    two thirds closes the connection, failing its calls with UNAVAILABLE (a frozen or
    cut-off task is noticed within that bound, not after TCP's retransmission back-off).

    Example:
        >>> dict(keepalive_options())["grpc.keepalive_time_ms"]  # default 30 s bound
        10000
    """
    silence_ms = knobs.PEER_SILENCE_SECS.get() * 1000
    return [("grpc.keepalive_time_ms", max(100, int(silence_ms / 3))),
            ("grpc.keepalive_timeout_ms", max(100, int(silence_ms * 2 / 3))),
            ("grpc.keepalive_permit_without_calls", 0),
            ("grpc.http2.max_pings_without_data", 0),
            ("grpc.http2.min_time_between_pings_ms", max(100, int(silence_ms / 3))),
            ("grpc.http2.ping_timeout_ms", max(100, int(silence_ms * 2 / 3)))]


# A server accepts its clients' keepalive pings however often they come (gRPC's default
# answers pings more frequent than every 5 minutes with GOAWAY).
SERVER_KEEPALIVE = [("grpc.http2.max_ping_strikes", 0),
                    ("grpc.http2.min_recv_ping_interval_without_data_ms", 100)]


class Client:
    """Calls a service's methods on one peer; attribute names are snake_case.

    Example:
        >>> resp, tensors = Client("localhost:2222", "tensorweave.Worker", METHODS
        ...                        ).get_status(GetStatusRequest(), [], timeout=1.0)
    """

    _bulk_client = bulk_mod.BulkClient()

    def __init__(self, address: str, service_name: str, methods: list[Method],
                 peer_name: str | None = None, credentials: Credentials = NONE) -> None:
        self.address = address
        try:
            self.host, self._port = parse_host_port(address)
        except ValueError:  # a gRPC target that is no host:port ("unix-abstract:...")
            self.host, self._port = address, 0
        self.peer = peer_name or address
        self._creds = credentials
        self._metadata = grpc_auth.call_metadata(credentials)
        self._bulk_hello = (functools.partial(bulk_auth.open_bulk, creds=credentials,
                                              host=self.host)
                            if credentials.enabled else None)
        self._channel = grpc_auth.secure_channel(address, credentials,
                                                 grpc_options() + keepalive_options())
        self._methods = {m.py_name: m for m in methods}
        self._unary = {m.py_name: self._channel.unary_unary(
            f"/{service_name}/{m.name}", request_serializer=_identity,
            response_deserializer=_identity) for m in methods}
        self._stream = {m.py_name: self._channel.stream_unary(
            f"/{service_name}/{m.name}Stream", request_serializer=_identity,
            response_deserializer=_identity) for m in methods}
        self._fetch_stub = self._channel.unary_stream(
            f"/{service_name}/{FETCH_METHOD}", request_serializer=_identity,
            response_deserializer=_identity)

    def call(self, py_name: str, request: Any, tensors: Tensors,
             timeout: float | None = None) -> tuple[Any, Tensors]:
        m = self._methods[py_name]
        frame, streamed = pack(request, list(tensors))
        try:
            if streamed:  # big request tensors: the frame, then their chunks
                messages = iter([frame, *(c.tobytes() for c in streamed)])
                response = self._stream[py_name](messages, timeout=timeout,
                                                 metadata=self._metadata)
            else:
                response = self._unary[py_name](frame, timeout=timeout,
                                                metadata=self._metadata)
            return unpack(response, m.response, fetch=lambda h: self._pull(h, timeout))
        except grpc.RpcError as e:
            raise self._error(e) from None

    def _error(self, e: grpc.RpcError) -> errors.OpError:
        """The call's error; a TLS connection that failed is probed for a refusal."""
        if self._creds.tls and self._port and e.code() == grpc.StatusCode.UNAVAILABLE:
            why = grpc_auth.diagnose(self.host, self._port, self._creds, self.peer)
            if why is not None:
                return why
        return error_from_rpc(e, self.peer, outbound.connect_error(self.host, self._port))

    def _pull(self, header: Any, timeout: float | None) -> np.ndarray:
        asm = codec.TensorAssembler(header)
        if header.bulk_port and bulk_enabled() and self._bulk_client.usable(self.host):
            try:
                self._bulk_client.pull(self.host, header.bulk_port, header.bulk_token, asm,
                                       self._bulk_hello)
                return asm.finish()
            except bulk_mod.BulkUnavailable:
                asm = codec.TensorAssembler(header)  # start over on the gRPC path
        req = TensorRequest(key=header.bulk_token.decode("latin-1"))
        for chunk in self._fetch_stub(req.SerializeToString(), timeout=timeout,
                                      metadata=self._metadata):
            asm.write(chunk)
        return asm.finish()

    def __getattr__(self, name: str) -> Callable[..., tuple[Any, Tensors]]:
        if name.startswith("_") or name not in self._methods:
            raise AttributeError(name)
        return lambda req, tensors=(), timeout=None: self.call(name, req, tensors, timeout)

    def close(self) -> None:
        self._channel.close()


class RpcServer:
    """A started gRPC server on one address serving the given endpoints.

    Args:
        address: "host:port" to listen on.
        endpoints: the ServiceEndpoints to serve.
        pool: the executor running handlers (daemon threads: see runtime.threads).

    Raises:
        ValueError: when the address cannot be bound (port in use, foreign host).
    """

    def __init__(self, address: str, endpoints: list[ServiceEndpoint], pool: Any) -> None:
        # so_reuseport off: a second server on a taken port must fail, not share it.
        self._server = grpc.server(pool, options=grpc_options() + SERVER_KEEPALIVE +
                                   [("grpc.so_reuseport", 0)])
        self._server.add_generic_rpc_handlers(tuple(e.handler() for e in endpoints))
        try:
            bound = self._server.add_insecure_port(address)
        except RuntimeError:
            bound = 0
        if not bound:
            raise ValueError(f"Cannot listen on {address}: the port is in use or the host is "
                             "not an address of this machine.")
        self.port = bound  # the port picked by the system when the address asked for 0
        self._server.start()

    def stop(self, grace: float | None) -> None:
        self._server.stop(grace).wait()

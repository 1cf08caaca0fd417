"""Same-host tasks: one Unix-domain stream socket per task pair, push and calls.

Why not gRPC between tasks of one machine: a gRPC Python unary call costs
~150-300 us of thread hand-offs and HTTP/2 framing, a stream set-up more, and
every tensor is copied into and out of `bytes`. Here a task opens one
long-lived connection to each peer it talks to; everything one task sends the
other (the master's calls, every Send's tensor) travels on it as frames:

    head   <BBHqI>: kind, service, method (or error code), call or step id,
                    envelope length
    envelope       rpc_pb2.Envelope: the request/response message (or push key)
                   and one TensorHeader per tensor
    payloads       each tensor's raw bytes, sent straight from the array's memory
                   (`sendall(memoryview)`) and received straight into the result
                   (`readinto`), whatever their size: no side channel.

Kinds: REQUEST (answered by REPLY or ERROR with the same id) and PUSH (a
tensor for the peer's rendezvous, never answered). A reader thread per
connection handles what arrives: pushes and quick calls inline; a blocking
call (RunGraph, RunStep, ...) runs on the thread that read it, once a
long-lived runner thread has taken over the reading, so no thread is created
per step and no hand-off delays the call. The socket lives in Linux's abstract
namespace, named after the
task's "host:port", so it needs no file and no second port.

Modules: link.py (the client side: `UNIX`, `UnixPeer`), listener.py (the serving
side), framing.py (frames), shm.py (shared-memory rings for big tensors),
handshake.py (credentials on a link).

Example:
    >>> listener = UnixListener("localhost:2222", server)   # serving side
    >>> peer = UNIX.connect("localhost:2222", "/job:ps/replica:0/task:0",
    ...                     "tensorweave.Worker")
    >>> peer.call("get_status", GetStatusRequest())
"""
from tensorweave.distributed.transport.unix.framing import STATS
from tensorweave.distributed.transport.unix.link import UNIX, UnixPeer, UnixTransport, socket_name
from tensorweave.distributed.transport.unix.listener import UnixListener

__all__ = ["STATS", "UNIX", "UnixListener", "UnixPeer", "UnixTransport", "socket_name"]

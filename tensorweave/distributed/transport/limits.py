"""How much a peer may make a task hold: message, tensor and connection limits, and
how long a connection may take to say who it is. Each value is a knob of
`tensorweave/base/knobs.py` (docs/configuration.md), read at each use, so a test or
a launcher can change it per process:

- TENSORWEAVE_MAX_MESSAGE_BYTES (default 1 GiB): the largest gRPC message a task
  receives (gRPC's max_receive_message_length); big tensors travel in chunks or
  over the bulk side channel, never in one message.
- TENSORWEAVE_MAX_TENSOR_BYTES (default 16 GiB): the largest tensor a frame's header
  may announce, checked before any buffer is allocated.
- TENSORWEAVE_MAX_CONNECTIONS (default 1024): open connections on a listener (the task
  port: gRPC relays and bulk side channels together; the same-host socket: links);
  more are closed at once.
- TENSORWEAVE_MAX_HALF_OPEN (default 256): connections a listener holds before they
  have said who they are; more are closed at once. None of them costs a thread
  (transport/reactor.py).
- TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS (default 10; formerly `_S`): seconds a new
  connection may take to send its first bytes; then it is closed.
- TENSORWEAVE_SHM_RING_BYTES (default 16 MiB; 0: none; formerly `_MB`): the
  shared-memory ring each side of a same-host link writes its big tensors into (shm.py).

Example:
    >>> max_message_bytes()
    1073741824
"""
from __future__ import annotations

from tensorweave.base import knobs

__all__ = ["ENV_HANDSHAKE_TIMEOUT_SECS", "ENV_MAX_CONNECTIONS", "ENV_MAX_HALF_OPEN",
           "ENV_MAX_MESSAGE_BYTES", "ENV_MAX_TENSOR_BYTES", "ENV_SHM_RING_BYTES",
           "handshake_timeout_secs", "max_connections", "max_half_open", "max_message_bytes",
           "max_tensor_bytes", "shm_ring_bytes"]

# The names, for messages that tell the user which variable to raise.
ENV_MAX_MESSAGE_BYTES = knobs.MAX_MESSAGE_BYTES.name
ENV_MAX_TENSOR_BYTES = knobs.MAX_TENSOR_BYTES.name
ENV_MAX_CONNECTIONS = knobs.MAX_CONNECTIONS.name
ENV_MAX_HALF_OPEN = knobs.MAX_HALF_OPEN.name
ENV_HANDSHAKE_TIMEOUT_SECS = knobs.HANDSHAKE_TIMEOUT_SECS.name
ENV_SHM_RING_BYTES = knobs.SHM_RING_BYTES.name
_GRPC_MAX = (1 << 31) - 1  # gRPC's message lengths are int32


def max_message_bytes() -> int:
    """TENSORWEAVE_MAX_MESSAGE_BYTES (default 1 GiB, at most gRPC's 2 GiB - 1)."""
    return min(knobs.MAX_MESSAGE_BYTES.get(), _GRPC_MAX)


def max_tensor_bytes() -> int:
    """TENSORWEAVE_MAX_TENSOR_BYTES (default 16 GiB)."""
    return knobs.MAX_TENSOR_BYTES.get()


def max_connections() -> int:
    """TENSORWEAVE_MAX_CONNECTIONS (default 1024)."""
    return knobs.MAX_CONNECTIONS.get()


def max_half_open() -> int:
    """TENSORWEAVE_MAX_HALF_OPEN (default 256)."""
    return knobs.MAX_HALF_OPEN.get()


def handshake_timeout_secs() -> float:
    """TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS (default 10 seconds)."""
    return knobs.HANDSHAKE_TIMEOUT_SECS.get()


def shm_ring_bytes() -> int:
    """TENSORWEAVE_SHM_RING_BYTES (default 16 MiB; 0: same-host links use no rings)."""
    return knobs.SHM_RING_BYTES.get()

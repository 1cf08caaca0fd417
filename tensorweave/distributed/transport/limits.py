"""How much a peer may make a task hold: message, tensor and connection limits, and
how long a connection may take to say who it is. Read from the environment each
time (cheap), so a test or a launcher can change them per process.

- TENSORWEAVE_MAX_MESSAGE_BYTES (default 1 GiB): the largest gRPC message a task
  receives (gRPC's max_receive_message_length); big tensors travel in chunks or
  over the bulk side channel, never in one message.
- TENSORWEAVE_MAX_TENSOR_BYTES (default 16 GiB): the largest tensor a frame's header
  may announce, checked before any buffer is allocated.
- TENSORWEAVE_MAX_CONNECTIONS (default 1024): open connections on a task port (gRPC
  relays and bulk side channels together); more are closed at once.
- TENSORWEAVE_HANDSHAKE_TIMEOUT_S (default 10): seconds a new connection may take to
  send its first bytes; then it is closed.
- TENSORWEAVE_SHM_RING_MB (default 16; 0: none): the shared-memory ring each side of a
  same-host link writes its big tensors into (shm.py).

Example:
    >>> max_message_bytes()
    1073741824
"""
from __future__ import annotations

import os

__all__ = ["ENV_HANDSHAKE_TIMEOUT_S", "ENV_MAX_CONNECTIONS", "ENV_MAX_MESSAGE_BYTES",
           "ENV_MAX_TENSOR_BYTES", "ENV_SHM_RING_MB", "handshake_timeout_s",
           "max_connections", "max_message_bytes", "max_tensor_bytes", "shm_ring_bytes"]

ENV_MAX_MESSAGE_BYTES = "TENSORWEAVE_MAX_MESSAGE_BYTES"
ENV_MAX_TENSOR_BYTES = "TENSORWEAVE_MAX_TENSOR_BYTES"
ENV_MAX_CONNECTIONS = "TENSORWEAVE_MAX_CONNECTIONS"
ENV_HANDSHAKE_TIMEOUT_S = "TENSORWEAVE_HANDSHAKE_TIMEOUT_S"
ENV_SHM_RING_MB = "TENSORWEAVE_SHM_RING_MB"
_GRPC_MAX = (1 << 31) - 1  # gRPC's message lengths are int32


def _number(name: str, default: float, low: float) -> float:
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number; unset it or give e.g. "
                         f"{name}={default:g}.") from None
    if value < low:
        raise ValueError(f"{name}={text!r} must be at least {low:g}.")
    return value


def max_message_bytes() -> int:
    """TENSORWEAVE_MAX_MESSAGE_BYTES (default 1 GiB, at most gRPC's 2 GiB - 1)."""
    return int(min(_number(ENV_MAX_MESSAGE_BYTES, 1 << 30, 1024), _GRPC_MAX))


def max_tensor_bytes() -> int:
    """TENSORWEAVE_MAX_TENSOR_BYTES (default 16 GiB)."""
    return int(_number(ENV_MAX_TENSOR_BYTES, 16 << 30, 1))


def max_connections() -> int:
    """TENSORWEAVE_MAX_CONNECTIONS (default 1024)."""
    return int(_number(ENV_MAX_CONNECTIONS, 1024, 1))


def handshake_timeout_s() -> float:
    """TENSORWEAVE_HANDSHAKE_TIMEOUT_S (default 10 seconds)."""
    return _number(ENV_HANDSHAKE_TIMEOUT_S, 10.0, 0.1)


def shm_ring_bytes() -> int:
    """TENSORWEAVE_SHM_RING_MB as bytes (default 16 MiB; 0: same-host links use no rings)."""
    return int(_number(ENV_SHM_RING_MB, 16, 0) * (1 << 20))

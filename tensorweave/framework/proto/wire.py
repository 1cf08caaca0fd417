"""Protobuf wire-format pieces written by hand where building a message costs more
than the bytes: the transport's Envelope entries, ParseExample's batch view.

Example:
    >>> varint(300)
    b'\\xac\\x02'
"""
from __future__ import annotations


def varint(n: int) -> bytes:
    """`n` (>= 0) as a protobuf base-128 varint: seven bits a byte, low bits first."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)

"""Tensor transfer bandwidth between two processes vs raw TCP loopback.

Measures, in one run: a plain socket pair in two processes moving 64 MiB
buffers (the ceiling), then the transport fetching a 64 MiB float32 tensor
held by a server process, over the gRPC stream (several chunk sizes) and over
the bulk side channel. Prints best and median MB/s (MB = 10**6 bytes) and each
path's ratio to the raw loopback best. Best-of-N because the machine is shared.

    .venv/bin/python -m bench.transfer [--mib 64] [--reps 10]
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import socket
import statistics
import time
from typing import Any

import numpy as np

MIB = 1 << 20
# Processes are spawned, not forked: gRPC's threads do not survive fork.
_CTX = mp.get_context("spawn")


def _stats(nbytes: int, seconds: list[float]) -> dict[str, float]:
    rates = [nbytes / s / 1e6 for s in seconds]
    return {"best": max(rates), "median": statistics.median(rates)}


def _raw_sender(nbytes: int, port_q: Any) -> None:
    from tensorweave.distributed.transport.tcp.bulk import tune_socket

    payload = np.ones(nbytes, np.uint8)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port_q.put(listener.getsockname()[1])
        conn, _ = listener.accept()
        tune_socket(conn)
        with conn:
            view = memoryview(payload)
            while conn.recv(1):  # one request byte per buffer; EOF ends the loop
                conn.sendall(view)


def measure_raw_loopback(nbytes: int = 64 * MIB, reps: int = 10) -> dict[str, float]:
    """Plain-socket bandwidth: a second process sends `nbytes` per request.

    The receiver asks with one byte and `recv_into`s a preallocated buffer,
    the same request/response shape a tensor fetch has.

    Returns:
        `{"best": MB/s, "median": MB/s}` over `reps` transfers.

    Example:
        >>> measure_raw_loopback(8 * MIB, reps=3)["best"] > 0
        True
    """
    from tensorweave.distributed.transport.tcp.bulk import recv_exactly_into, tune_socket

    port_q = _CTX.Queue()
    proc = _CTX.Process(target=_raw_sender, args=(nbytes, port_q), daemon=True)
    proc.start()
    try:
        sock = socket.create_connection(("127.0.0.1", port_q.get(timeout=60)))
        tune_socket(sock)
        buf = memoryview(np.empty(nbytes, np.uint8))
        times = []
        with sock:
            for i in range(reps + 1):
                t0 = time.perf_counter()
                sock.sendall(b"x")
                recv_exactly_into(sock, buf)
                if i:  # the first transfer warms up the connection
                    times.append(time.perf_counter() - t0)
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    return _stats(nbytes, times)


def _tensor_server(nbytes: int, bulk: bool, chunk_bytes: int, port_q: Any, stop: Any) -> None:
    from tensorweave.distributed.transport.tcp.stream import TensorServer

    value = np.ones(nbytes // 4, np.float32)
    server = TensorServer({"var": value}.__getitem__, bulk=bulk, chunk_bytes=chunk_bytes)
    try:
        port_q.put(server.port)
        stop.wait()
    finally:
        server.stop()


def measure_transport(nbytes: int = 64 * MIB, reps: int = 10, *, bulk: bool = False,
                      chunk_bytes: int = MIB) -> dict[str, float]:
    """Fetch bandwidth of a float32 tensor of `nbytes` held by another process.

    Args:
        nbytes: tensor size in bytes.
        reps: timed fetches (after one warm-up).
        bulk: use the raw-TCP side channel instead of the gRPC stream.
        chunk_bytes: gRPC stream chunk size (ignored by the side channel).

    Returns:
        `{"best": MB/s, "median": MB/s}`.

    Example:
        >>> measure_transport(8 * MIB, reps=3)["best"] > 0
        True
    """
    from tensorweave.distributed.transport.tcp.stream import TensorClient

    port_q, stop = _CTX.Queue(), _CTX.Event()
    proc = _CTX.Process(target=_tensor_server,
                        args=(nbytes, bulk, chunk_bytes, port_q, stop), daemon=True)
    proc.start()
    try:
        client = TensorClient(f"127.0.0.1:{port_q.get(timeout=60)}", bulk=bulk)
        try:
            times = []
            for i in range(reps + 1):
                t0 = time.perf_counter()
                value = client.fetch("var")
                if i:
                    times.append(time.perf_counter() - t0)
            if value.nbytes != nbytes or value[-1] != 1.0:
                raise AssertionError(f"Fetched wrong tensor: {value.shape} {value.dtype}")
        finally:
            client.close()
    finally:
        stop.set()
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
    return _stats(nbytes, times)


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64, help="tensor size in MiB")
    parser.add_argument("--reps", type=int, default=10, help="timed transfers per path")
    parser.add_argument("--chunks", default="1,4,16",
                        help="gRPC chunk sizes to try, MiB (fractions allowed)")
    args = parser.parse_args(argv)
    nbytes = args.mib * MIB
    results = {"raw TCP loopback": measure_raw_loopback(nbytes, args.reps)}
    for c in (float(x) for x in args.chunks.split(",")):
        results[f"gRPC stream, {c:g} MiB chunks"] = measure_transport(
            nbytes, args.reps, chunk_bytes=int(c * MIB))
    results["bulk side channel"] = measure_transport(nbytes, args.reps, bulk=True)
    raw = results["raw TCP loopback"]["best"]
    print(f"{args.mib} MiB float32, {args.reps} reps, MB/s (MB = 1e6 bytes), ratio = best/raw best")
    for name, r in results.items():
        print(f"  {name:30s} best {r['best']:8.0f}  median {r['median']:8.0f}  "
              f"ratio {r['best'] / raw:5.0%}")
    return results


if __name__ == "__main__":
    main()

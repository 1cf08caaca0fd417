"""bench.connections: what idle connections cost a task (issue 32).

Starts one task (a bare ps server process on loopback) and opens N idle
connections to it, of each kind a peer can leave idle:

* ``tcp-silent``: a TCP connection to the task port that sends nothing (half-open:
  the task does not know yet what it is; closed after
  TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS);
* ``tcp-grpc``: a TCP connection that sent HTTP/2's preface, then nothing (an idle
  gRPC channel: relayed to the task's gRPC server);
* ``unix``: a link to the task's same-host socket, set up (hello, no shared-memory
  ring) and then idle.

For 0, 100 and 1000 of each it prints the connections the task holds (those it
has not closed), its sockets (a relayed gRPC connection is three), its threads and
its RSS (/proc/<pid>/status), measured once the counts settle.
TENSORWEAVE_MAX_CONNECTIONS and TENSORWEAVE_MAX_HALF_OPEN are raised for the run
so that every connection is held.

Before the event loop (transport/reactor.py), on the 2-core dev machine: each
tcp-silent connection cost a thread until its handshake timeout, each tcp-grpc one
two threads for as long as it stayed open, each unix one a thread: 1000 of them
added 1000, 2000 and 1000 threads (RSS 89, 129, 111 MiB from 72). After: 0, 0 and
15 (the handshake pool, at most 16, reached once; RSS 75, 94, 104 MiB: the sockets
and gRPC's own per-connection state). The event-driven relay costs a loopback
round trip through the task port ~20 us more than the threads did (~60 vs ~40 us).

With `--tls` the task has TLS credentials and the kinds are ``tls-grpc`` (a verified
TLS connection that sent the preface) and ``tls-bulk`` (one that opened a bulk
channel): each kept a thread until the TLS relay moved onto the loop too; 1000 of
each: see docs/benchmarks.md.

    $ .venv/bin/python -m bench.connections [--counts 0,100,1000] [--tls] [--json]
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from typing import Any

from tensorweave.base import knobs
from tensorweave.distributed.transport import credentials as C
from tensorweave.launch.credentials import write_cluster_certificates
from tensorweave.testing.cluster import LocalCluster
from tensorweave.testing.idle_connections import KINDS, TLS_KINDS, held, open_idle, task_stats


def _settled(pid: int, secs: float = 1.5) -> dict[str, int]:
    """The task's stats once its thread count stopped changing for a while."""
    last, since = task_stats(pid), time.monotonic()
    deadline = since + 10 * secs
    while time.monotonic() - since < secs and time.monotonic() < deadline:
        time.sleep(0.25)
        now = task_stats(pid)
        if now["threads"] != last["threads"] or now["sockets"] != last["sockets"]:
            since = time.monotonic()
        last = now
    return last


def measure(counts: list[int], tls: bool = False) -> list[dict[str, Any]]:
    """Rows of {kind, n, held, threads, rss_mib} for each kind and count (with `tls`, a
    task with TLS credentials and the TLS kinds)."""
    env = {knobs.MAX_CONNECTIONS.name: "100000", knobs.HANDSHAKE_TIMEOUT_SECS.name: "120"}
    env[knobs.MAX_HALF_OPEN.name] = "100000"
    creds, kinds = None, KINDS
    certs = tempfile.TemporaryDirectory(prefix="tw-bench-certs-")
    if tls:
        files = write_cluster_certificates(certs.name, ["localhost"])
        env.update({C.CA_ENV: files["ca.crt"], C.CERT_ENV: files["tls.crt"],
                    C.KEY_ENV: files["tls.key"]})
        creds, kinds = C.Credentials.from_env(env), TLS_KINDS
    rows = []
    with certs, LocalCluster(1, 0, env=env) as cluster:
        pid = cluster.procs[("ps", 0)].pid
        host, port = cluster.spec["ps"][0].rsplit(":", 1)
        time.sleep(1.0)
        base = _settled(pid)
        for kind in kinds:
            for n in counts:
                socks = open_idle(kind, host, int(port), n, creds)
                try:
                    got = _settled(pid)
                    still = held(socks)
                finally:
                    for s in socks:
                        s.close()
                rows.append({"kind": kind, "n": n,
                             "held": still, "sockets": got["sockets"] - base["sockets"],
                             "threads": got["threads"], "threads_added":
                                 got["threads"] - base["threads"],
                             "rss_mib": round(got["rss_kib"] / 1024, 1)})
                _settled(pid)  # the task lets them go before the next row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="0,100,1000",
                        help="comma-separated numbers of idle connections")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--tls", action="store_true",
                        help="a task with TLS credentials, and verified TLS connections")
    args = parser.parse_args()
    rows = measure([int(c) for c in args.counts.split(",")], args.tls)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{'kind':<11} {'idle':>5} {'held':>6} {'task sockets':>13} {'threads':>8} "
          f"{'added':>6} {'RSS MiB':>8}")
    for r in rows:
        print(f"{r['kind']:<11} {r['n']:>5} {r['held']:>6} {r['sockets']:>13} "
              f"{r['threads']:>8} {r['threads_added']:>6} {r['rss_mib']:>8}")


if __name__ == "__main__":
    main()

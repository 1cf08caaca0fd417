"""An EmbeddingVariable at scale: 100M distinct int64 ids, its bytes and its rates.

Default mode, `--ids N`: inserts N distinct int64 ids (random-looking 64-bit values,
negative ones included) in batches of `--batch`, through KvGather's kernel
(`kv_variable_ops.kv_gather_kernel`: the op's code without a session around it), into
a table of `--dim` float32 columns with `--slots` optimizer slots sharing its index
(Adagrad makes one). At 10%, 50% and 100% of the ids it prints the table's bytes (the
id index, the per-row frequencies and versions, the rows of the variable and its slots:
allocated, and in use) and the process's RSS (resident and peak); then the insert rate,
the lookup rate of known ids (the kernel, and the index alone) and the bytes per
admitted id.

`--filter-freq F`: the same table with CounterFilter(filter_freq=F), fed `--ids`
lookups drawn from a long tail (Zipf(1.1) over an unbounded id space: most ids are
seen once or twice): ids seen, ids admitted, and where the bytes go. The rows follow
the admitted ids; an id seen but not admitted costs its exact count, one entry of the
pending index (24-48 bytes), not a row.

Run: nice python -m bench.embedding_variable_scale --ids 100000000   (1 minute, 8 GiB)
     python -m bench.embedding_variable_scale                        (2M ids, seconds)
     python -m bench.embedding_variable_scale --filter-freq 3 --ids 20000000
"""
from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def ids_at(counter: np.ndarray) -> np.ndarray:
    """Distinct, random-looking int64 ids for distinct counters (an odd multiplier and
    a xorshift are both one-to-one on 64 bits)."""
    z = counter.astype(np.uint64) * _GOLDEN
    z ^= z >> np.uint64(29)
    return z.view(np.int64)


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return 0


def _table(dim: int, slots: int, filter_freq: int) -> tuple[Any, Any]:
    from tensorweave.framework import dtypes
    from tensorweave.ops.state import kv_variable_ops as kv
    index = kv.KvIndex(dtypes.int64, filter_freq, 0, 0.0)
    members = [kv.EmbeddingResource(f"emb{i}", dtypes.float32, dim, index)
               for i in range(1 + slots)]
    rng = np.random.default_rng(0)
    for m in members:   # as KvInitialize: 4096 default rows (InitializerOption's)
        m.defaults = rng.random((4096, dim), np.float32)
    index.clear()
    return index, members[0]


def _bytes(index: Any) -> dict[str, int]:
    rows_used = sum(index.n * m.dim * m.value.itemsize for m in index.members)
    return {"ids": index.rows.nbytes, "pending": index.pending.nbytes,
            "freqs_versions": index.freqs.nbytes + index.versions.nbytes,
            "rows": sum(m.value.nbytes for m in index.members), "rows_used": rows_used}


def _size(n: float) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def _report(label: str, index: Any, b: dict[str, int]) -> None:
    total = b["ids"] + b["pending"] + b["freqs_versions"] + b["rows"]
    print(f"{label} table {_size(total)} = id index {_size(b['ids'])} "
          f"({index.rows.capacity:,} slots) + pending {_size(b['pending'])} + "
          f"freqs/versions {_size(b['freqs_versions'])} + rows {_size(b['rows'])} "
          f"({_size(b['rows_used'])} in use); RSS {_size(_status('VmRSS'))}, "
          f"peak {_size(_status('VmHWM'))}", flush=True)


def run_inserts(n: int, batch: int, dim: int, slots: int) -> None:
    from tensorweave.ops.state.kv_variable_ops import kv_gather_kernel as gather
    index, emb = _table(dim, slots, 0)
    marks = {n // 10, n // 2, n}
    ends = sorted(set(range(batch, n, batch)) | marks)   # (a batch ends at each mark)
    spent = 0.0
    for step, (start, end) in enumerate(zip([0] + ends, ends)):
        ids = ids_at(np.arange(start, end))
        t = time.perf_counter()
        gather(emb, ids, np.int64(step))
        spent += time.perf_counter() - t
        if end in marks:
            _report(f"{end:>12,} ids:", index, _bytes(index))
    assert len(index.rows) == n, (len(index.rows), n)
    print(f"insert: {n / spent / 1e6:.2f} M ids/s ({spent:.1f} s in the kernel)")
    rng = np.random.default_rng(1)
    probes = [ids_at(rng.integers(0, n, batch)) for _ in range(5)]
    t = time.perf_counter()
    for i, ids in enumerate(probes):
        _, rows = gather(emb, ids, np.int64(len(ends) + i))
        assert rows.min() > 0
    kernel = 5 * batch / (time.perf_counter() - t)
    t = time.perf_counter()
    for ids in probes:
        index.rows.find(ids)
    alone = 5 * batch / (time.perf_counter() - t)
    b = _bytes(index)
    per_id = (b["ids"] + b["freqs_versions"] + b["rows"]) / n
    print(f"lookup of known ids: {kernel / 1e6:.2f} M ids/s (kernel: counts, rows), "
          f"{alone / 1e6:.2f} M ids/s (id index alone); {per_id:.1f} bytes per admitted "
          f"id allocated ({(b['ids'] + b['freqs_versions']) / n:.1f} index + "
          f"{b['rows'] / n:.1f} rows), {_status('VmRSS') / n:.1f} resident")


def run_filtered(n: int, batch: int, dim: int, slots: int, filter_freq: int) -> None:
    from tensorweave.ops.state.kv_variable_ops import kv_gather_kernel as gather
    index, emb = _table(dim, slots, filter_freq)
    rng = np.random.default_rng(2)
    marks = {n // 10, n // 2, n}
    spent = 0.0
    for start in range(0, n, batch):
        ids = ids_at(rng.zipf(1.1, min(batch, n - start)))
        t = time.perf_counter()
        gather(emb, ids, np.int64(start // batch))
        spent += time.perf_counter() - t
        done = start + len(ids)
        if any(start < m <= done for m in marks):
            admitted, pending = len(index.rows), len(index.pending)
            b = _bytes(index)
            per_row = (b["rows_used"] + index.n * 16) / index.n   # rows, freqs, versions
            print(f"{done:>12,} lookups: {admitted + pending:,} ids seen, {admitted:,} "
                  f"admitted ({admitted / (admitted + pending):.1%}); admitting every id "
                  f"seen would add {_size(pending * per_row)} of rows")
            _report(f"{'':>12}", index, b)
    print(f"lookups: {n / spent / 1e6:.2f} M ids/s")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ids", type=int, default=2_000_000)
    ap.add_argument("--batch", type=int, default=1 << 20)
    ap.add_argument("--dim", type=int, default=8)
    ap.add_argument("--slots", type=int, default=0, help="optimizer slots (Adagrad: 1)")
    ap.add_argument("--filter-freq", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"EmbeddingVariable: dim {args.dim} float32, {args.slots} slot(s), batches of "
          f"{args.batch:,} ids through KvGather's kernel")
    if args.filter_freq:
        run_filtered(args.ids, args.batch, args.dim, args.slots, args.filter_freq)
    else:
        run_inserts(args.ids, args.batch, args.dim, args.slots)


if __name__ == "__main__":
    main()

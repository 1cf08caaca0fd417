"""ParseExample's fast path: a batch of same-layout Examples decoded with a few NumPy calls.

Decoding each `tf.train.Example` with protobuf and reading every feature of every
example from Python cost ~6 us an example (256 examples x 6 features a batch in a
wide & deep trainer). But the Examples of one input pipeline are written by one
program: every example holds the same keys in the same order, each a single list.
This module reads such a batch straight from the wire format:

1. The serialized examples are joined, each followed by a sentinel (an Example whose
   Features hold one empty map entry), and parsed ONCE as a *view* message whose
   `features` field is a singular message of `repeated bytes entry`: protobuf merges
   the repeated occurrences of a singular message field, so one C call returns every
   map entry of the batch, raw, in order, with the sentinels marking where each
   example ends.
2. The layout is checked, vectorised: every example has the first example's entry
   count, each example is exactly one Features field whose length is the sum of its
   entries (so no entry can belong to a neighbour), and entry j of every example is
   exactly "key field = key j, then one value field".
3. Each wanted key's values are decoded from its column of entries with NumPy:
   packed floats (`frombuffer`), packed varints (int64) and single strings; any other
   encoding of a column (several strings, unpacked lists, long lists) goes through
   protobuf's own Feature parser, entry by entry.

Anything else (missing keys, another layout, an entry of the wrong kind, a count
that does not fit a FixedLenFeature, a sequence feature, bytes that do not parse)
returns None, and the caller runs the general decoder, which gives the results and
the errors of record. So this path only ever returns what the general one would.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.proto import feature_pb2

# Wire tags: Feature's oneof (bytes_list = 1, float_list = 2, int64_list = 3) and
# the `value` field (1) of each list, all length-delimited (wire type 2).
_TAG = {"string": 0x0A, "float32": 0x12, "int64": 0x1A}
_KIND = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}
_SENTINEL = b"\x0a\x02\x0a\x00"  # Features { one map entry of zero bytes }


def _view_class() -> Any:
    """ExampleView { EntryList features = 1; }  EntryList { repeated bytes entry = 1; }"""
    f = descriptor_pb2.FileDescriptorProto(name="tensorweave_example_view.proto",
                                           package="tensorweave_view", syntax="proto3")
    entries = f.message_type.add(name="EntryList")
    entries.field.add(name="entry", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    view = f.message_type.add(name="ExampleView")
    view.field.add(name="features", number=1,
                   type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                   label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                   type_name=".tensorweave_view.EntryList")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "tensorweave_view.ExampleView"))


_View = _view_class()


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _varint_len(n: np.ndarray) -> np.ndarray:
    """Bytes of the minimal varint of each (non-negative, < 2**35) length."""
    return 1 + (n >= 1 << 7) + (n >= 1 << 14) + (n >= 1 << 21) + (n >= 1 << 28)


class EntryTable:
    """Every raw map entry of a batch of same-layout examples: entry j of example i is
    `entries[i * (m + 1) + j]`, its bytes `data[start[i, j]:start[i, j] + size[i, j]]`
    (column m is the sentinel)."""

    def __init__(self, entries: list[bytes], n: int, m: int) -> None:
        self.entries, self.n, self.m = entries, n, m
        sizes = np.fromiter(map(len, entries), np.int64, len(entries))
        self.size = sizes.reshape(n, m + 1)
        self.start = (np.cumsum(sizes) - sizes).reshape(n, m + 1)
        self.data = np.frombuffer(b"".join(entries), np.uint8)

    def column(self, j: int) -> list[bytes]:
        return self.entries[j::self.m + 1]

    def grid(self, j: int, width: int) -> np.ndarray:
        """The first `width` bytes of entry j of every example ([n, width], int64);
        only for entries at least that long."""
        return self.data[self.start[:, j, None] + np.arange(width)].astype(np.int64)

    def tails(self, j: int, skip: int) -> np.ndarray:
        """The bytes of entry j of every example from its offset `skip` on, joined."""
        counts = self.size[:, j] - skip
        first = self.start[:, j] + skip
        return self.data[np.repeat(first - (np.cumsum(counts) - counts), counts)
                         + np.arange(int(counts.sum()))]


def split_entries(serialized: list[Any]) -> EntryTable | None:
    """The raw map entries of the batch, or None unless every example is one Features
    field of the same number of entries (then no entry can have been read across an
    example's end)."""
    if not serialized or not all(type(s) is bytes for s in serialized):
        return None
    joined = _SENTINEL.join(serialized) + _SENTINEL
    try:
        raw = list(_View.FromString(joined).features.entry)
    except DecodeError:
        return None
    n = len(serialized)
    m = raw.index(b"") if b"" in raw else -1
    if m <= 0 or len(raw) != n * (m + 1):
        return None
    table = EntryTable(raw, n, m)
    if (table.size[:, m] != 0).any() or (table.size[:, :m] == 0).any():
        return None
    lens = table.size[:, :m]
    features = (1 + _varint_len(lens) + lens).sum(axis=1)  # each example's Features size
    head = _varint_len(features)
    total = np.fromiter(map(len, serialized), np.int64, n)
    if not (total == 1 + head + features).all() or head.max() > 3:
        return None
    # Each example opens with tag 0x0a and the minimal varint of its Features length.
    data = np.frombuffer(joined, np.uint8)
    at = np.cumsum(total + len(_SENTINEL)) - total - len(_SENTINEL)
    if (data[at] != 0x0A).any():
        return None
    for k in range(int(head.max())):
        want = ((features >> (7 * k)) & 0x7F) | np.where(k < head - 1, 0x80, 0)
        if ((data[at + 1 + k] != want) & (k < head)).any():
            return None
    return table


def keys(table: EntryTable) -> list[str | None]:
    """Each column's key (from the first example), None where an entry is not plainly
    (key field, value field)."""
    out: list[str | None] = []
    for entry in table.entries[:table.m]:
        if len(entry) < 2 or entry[0] != 0x0A or entry[1] >= 0x80:
            out.append(None)
            continue
        end = 2 + entry[1]
        try:
            ok = len(entry) > end and entry[end] == 0x12
            out.append(entry[2:end].decode("utf-8") if ok else None)
        except UnicodeDecodeError:
            out.append(None)
    return out


def decode_column(table: EntryTable, j: int, key: str, dtype: Any
                  ) -> tuple[Any, np.ndarray] | None:
    """(flat values, count per example) of column j (holding `key`), or None to defer."""
    head = _head(key)
    p = len(head)
    size = table.size[:, j]
    if size.min() >= p + 5:  # the common case: each entry holds a non-empty list
        fast = _decode_full(table, j, head, dtype)
        if fast is not None:
            return fast
    if size.min() < p or not (table.grid(j, p) == np.frombuffer(head, np.uint8)).all():
        return None
    return _decode_each(table.column(j), p, dtype)


def _head(key: str) -> bytes:
    raw = key.encode("utf-8")
    return b"\x0a" + _varint(len(raw)) + raw + b"\x12"


def _values(table: EntryTable, j: int, at: int, payload_len: np.ndarray, dtype: Any
            ) -> tuple[Any, np.ndarray] | None:
    """Column j's values from its payloads (at offset `at` of every entry)."""
    n = table.n
    if dtype == _dt.string:
        values = np.empty(n, dtype=object)
        values[:] = [e[at:] for e in table.column(j)]
        return values, np.ones(n, np.int64)
    if dtype == _dt.float32:
        if (payload_len % 4).any():
            return None
        if n and (payload_len == payload_len[0]).all():  # a FixedLenFeature's floats
            width = int(payload_len[0])
            data = table.data[(table.start[:, j] + at)[:, None] + np.arange(width)]
            return data.reshape(-1).view("<f4").astype(np.float32), payload_len // 4
        return table.tails(j, at).view("<f4").astype(np.float32), payload_len // 4
    return _varints(table.tails(j, at), payload_len)


def _decode_full(table: EntryTable, j: int, head: bytes, dtype: Any
                 ) -> tuple[Any, np.ndarray] | None:
    """Entries `head, L, tag, L - 2, 0x0a, L - 4, payload` (one-byte lengths: a packed
    list of numbers, or one string), vectorised."""
    p, n = len(head), table.n
    value_len = table.size[:, j] - p - 1
    want = np.empty((n, p + 5), np.int64)
    want[:, :p] = np.frombuffer(head, np.uint8)
    want[:, p] = value_len
    want[:, p + 1] = _TAG[dtype.name]
    want[:, p + 2] = value_len - 2
    want[:, p + 3] = 0x0A
    want[:, p + 4] = value_len - 4
    if value_len.max() >= 0x80 or not (table.grid(j, p + 5) == want).all():
        return None
    return _values(table, j, p + 5, value_len - 4, dtype)


def _varints(data: np.ndarray, payload_len: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Packed varints: the int64 values and how many each entry's payload holds."""
    last = data < 0x80  # the last byte of each varint
    if last.all():  # every value below 128: one byte each
        return data.astype(np.int64), payload_len
    ends = np.cumsum(payload_len)
    if not last[ends - 1].all():
        return None  # a varint running past its entry: malformed, protobuf says how
    stops = np.flatnonzero(last)
    starts = np.concatenate(([0], stops[:-1] + 1)).astype(np.int64)
    width = stops - starts + 1
    if width.max() > 10 or (data[stops[width == 10]] > 1).any():
        return None  # over 64 bits
    done = np.concatenate(([0], np.cumsum(last)))
    counts = done[ends] - done[ends - payload_len]
    shift = (np.arange(data.size) - np.repeat(starts, width)).astype(np.uint64) * np.uint64(7)
    parts = (data & 0x7F).astype(np.uint64) << shift
    return np.add.reduceat(parts, starts).view(np.int64), counts


def _decode_each(entries: list[bytes], at: int, dtype: Any) -> tuple[Any, np.ndarray] | None:
    """Any other encoding: protobuf parses each entry's Feature (after its length)."""
    kind, flat, counts = _KIND[dtype.name], [], []
    for e in entries:
        size, shift, pos = 0, 0, at
        while pos < len(e) and shift < 35:
            size |= (e[pos] & 0x7F) << shift
            shift, pos = shift + 7, pos + 1
            if e[pos - 1] < 0x80:
                break
        else:
            return None
        if pos + size != len(e):
            return None
        try:
            feature = feature_pb2.Feature.FromString(e[pos:])
        except DecodeError:
            return None
        if feature.WhichOneof("kind") != kind:
            return None
        v = getattr(feature, kind).value
        counts.append(len(v))
        flat.extend(v)
    if dtype == _dt.string:
        values = np.empty(len(flat), dtype=object)
        values[:] = flat
    else:
        values = np.array(flat, dtype=dtype.as_numpy_dtype)
    return values, np.asarray(counts, np.int64)

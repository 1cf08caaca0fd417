"""ParseExample's fast path: a batch of same-layout Examples decoded with a few NumPy calls.

Decoding each `tf.train.Example` with protobuf and reading every feature of every
example from Python cost ~6 us an example (256 examples x 6 features a batch in a
wide & deep trainer). But the Examples of one input pipeline are written by one
program: every example holds the same keys in the same order, each a single list.
This module reads such a batch straight from the wire format:

1. The serialized examples are joined, each as one occurrence of field 1 of a *batch
   view* message (a singular ExampleView, whose `features` field is a singular message
   of `repeated bytes entry`), each followed by a sentinel occurrence (an ExampleView
   whose Features hold one empty map entry), and parsed ONCE: protobuf merges the
   repeated occurrences of a singular message field, so one C call returns every map
   entry of the batch, raw, in order, with the sentinels marking where each example
   ends. Each example is parsed within its own length, so no entry can run into the
   next example, and the view reads an Example's fields as Example's parser does.
2. The layout is checked, vectorised: every example has the first example's entry
   count and entry j of every example is exactly "key field = key j, then one value
   field" (for all the wanted columns at once where each holds a short list).
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

from itertools import chain, repeat
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.proto import feature_pb2
from tensorweave.framework.proto.wire import varint

# Wire tags: Feature's oneof (bytes_list = 1, float_list = 2, int64_list = 3) and
# the `value` field (1) of each list, all length-delimited (wire type 2).
_TAG = {"string": 0x0A, "float32": 0x12, "int64": 0x1A}
_KIND = {"string": "bytes_list", "float32": "float_list", "int64": "int64_list"}
# BatchView field 1 holding ExampleView { Features { one map entry of zero bytes } }
_SENTINEL = b"\x0a\x04\x0a\x02\x0a\x00"


def _view_class() -> Any:
    """BatchView { ExampleView ex = 1; }  ExampleView { EntryList features = 1; }
    EntryList { repeated bytes entry = 1; }"""
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
    batch = f.message_type.add(name="BatchView")
    batch.field.add(name="ex", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
                    type_name=".tensorweave_view.ExampleView")
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(
        "tensorweave_view.BatchView"))


_Batch = _view_class()


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
    """The raw map entries of the batch, or None unless every example holds the same
    number of entries (none of them empty)."""
    n = len(serialized)
    if not n:
        return None
    try:
        lens = list(map(len, serialized))
        try:
            heads = list(map(_FIELD_HEAD.__getitem__, lens))
        except KeyError:
            heads = [_field_head(size) for size in lens]
        # join() takes bytes-like values only: a str (or any other value) is declined
        joined = b"".join(chain.from_iterable(zip(heads, serialized, repeat(_SENTINEL, n))))
        raw = list(_Batch.FromString(joined).ex.features.entry)
    except (TypeError, DecodeError):
        return None
    try:
        m = raw.index(b"")
    except ValueError:
        return None
    if m == 0 or len(raw) != n * (m + 1):
        return None
    table = EntryTable(raw, n, m)
    empty = table.size == 0  # only the sentinels may be empty
    if not empty[:, m].all() or int(empty.sum()) != n:
        return None
    return table


# Each record's field head in the batch view (tag 0x0a, then its length as a varint),
# by length: records of one input pipeline come in few lengths.
_FIELD_HEAD: dict[int, bytes] = {}


def _field_head(size: int) -> bytes:
    head = _FIELD_HEAD.get(size)
    if head is None:
        if len(_FIELD_HEAD) >= 1 << 16:
            _FIELD_HEAD.clear()
        head = _FIELD_HEAD[size] = b"\x0a" + varint(size)
    return head


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


def decode_columns(table: EntryTable, wanted: list[tuple[int, str, Any]]
                   ) -> list[tuple[Any, np.ndarray]] | None:
    """(flat values, count per example) of each wanted (column, key, dtype), or None to
    defer. Where every entry of every wanted column holds one short list (the usual
    batch), one pass checks all of them; otherwise each column is read by itself."""
    fast = _decode_short(table, wanted)
    if fast is not None:
        return fast
    out = [decode_column(table, j, key, dtype) for j, key, dtype in wanted]
    return None if any(o is None for o in out) else out  # type: ignore[return-value]


def decode_column(table: EntryTable, j: int, key: str, dtype: Any
                  ) -> tuple[Any, np.ndarray] | None:
    """(flat values, count per example) of column j (holding `key`), or None to defer."""
    fast = _decode_short(table, [(j, key, dtype)])
    if fast is not None:
        return fast[0]
    head = _head(key)
    p = len(head)
    if table.size[:, j].min() < p or not (table.grid(j, p) == np.frombuffer(head, np.uint8)
                                          ).all():
        return None
    return _decode_each(table.column(j), p, dtype)


class _ShortLayout:
    """What the entries of some columns look like when each holds one short list:
    `head, L, tag, L - 2, 0x0a, L - 4, payload` (one-byte lengths), as gather offsets and
    the bytes expected there."""

    def __init__(self, wanted: tuple[tuple[int, str, str], ...]) -> None:
        heads = [_head(key) for _, key, _ in wanted]
        self.cols = np.array([j for j, _, _ in wanted], np.int64)
        self.head_len = np.array([len(h) for h in heads], np.int64)
        self.head_at = np.concatenate([np.arange(len(h)) for h in heads])
        self.head_bytes = np.frombuffer(b"".join(heads), np.uint8)
        # The five bytes after each head: L * mask + const.
        self.five = np.tile(np.arange(5), len(wanted))
        self.mask = np.tile([1, 0, 1, 0, 1], len(wanted))
        self.const = np.concatenate([[0, _TAG[name], -2, 0x0A, -4] for _, _, name in wanted])


_LAYOUTS: dict[tuple[tuple[int, str, str], ...], _ShortLayout] = {}


def _decode_short(table: EntryTable, wanted: list[tuple[int, str, Any]]
                  ) -> list[tuple[Any, np.ndarray]] | None:
    """The columns' values where each of their entries is `_ShortLayout`, else None."""
    if not wanted:
        return []
    key = tuple((j, k, dtype.name) for j, k, dtype in wanted)
    layout = _LAYOUTS.get(key)
    if layout is None:
        if len(_LAYOUTS) >= 256:
            _LAYOUTS.clear()
        layout = _LAYOUTS[key] = _ShortLayout(key)
    value_len = table.size[:, layout.cols] - layout.head_len - 1
    if value_len.min() < 4 or value_len.max() >= 0x80:
        return None
    start = table.start[:, layout.cols]
    heads = table.data[np.repeat(start, layout.head_len, axis=1) + layout.head_at]
    if not (heads == layout.head_bytes).all():
        return None
    lens = table.data[np.repeat(start + layout.head_len, 5, axis=1) + layout.five]
    if not (lens == np.repeat(value_len, 5, axis=1) * layout.mask + layout.const).all():
        return None
    out = [_values(table, j, int(layout.head_len[c]) + 5, value_len[:, c] - 4, dtype)
           for c, (j, _, dtype) in enumerate(wanted)]
    return None if any(o is None for o in out) else out  # type: ignore[return-value]


def _head(key: str) -> bytes:
    raw = key.encode("utf-8")
    return b"\x0a" + varint(len(raw)) + raw + b"\x12"


def _values(table: EntryTable, j: int, at: int, payload_len: np.ndarray, dtype: Any
            ) -> tuple[Any, np.ndarray] | None:
    """Column j's values from its payloads (at offset `at` of every entry)."""
    n = table.n
    if dtype == _dt.string:
        values = np.empty(n, dtype=object)
        values[:] = [e[at:] for e in table.column(j)]
        return values, np.ones(n, np.int64)
    if n and (payload_len == payload_len[0]).all():  # e.g. a FixedLenFeature's values
        width = int(payload_len[0])
        data = table.data[(table.start[:, j] + at)[:, None] + np.arange(width)].reshape(-1)
    else:
        data = table.tails(j, at)
    if dtype == _dt.float32:
        if (payload_len % 4).any():
            return None
        return data.view("<f4").astype(np.float32), payload_len // 4
    return _varints(data, payload_len)


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

"""ParseExample's wire-format fast path (kernels/wire_batch.py) against the general
decoder: same arrays (dtype, shape, values) on every batch, the fast path taken on
same-layout batches and declined (general decoder's results and errors) on others."""
from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorweave.framework import dtypes as dt
from tensorweave.framework import errors
from tensorweave.framework.proto import example_pb2, feature_pb2
from tensorweave.kernels import example_kernel as k


def _feature(value: Any) -> feature_pb2.Feature:
    if isinstance(value, tuple):  # (kind, values)
        kind, vals = value
    elif isinstance(value, float):
        kind, vals = "float", [value]
    elif isinstance(value, int):
        kind, vals = "int", [value]
    else:
        kind, vals = "bytes", [value]
    if kind == "float":
        return feature_pb2.Feature(float_list=feature_pb2.FloatList(value=vals))
    if kind == "int":
        return feature_pb2.Feature(int64_list=feature_pb2.Int64List(value=vals))
    return feature_pb2.Feature(bytes_list=feature_pb2.BytesList(value=vals))


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


def _delimited(number: int, payload: bytes) -> bytes:
    return bytes([number << 3 | 2]) + _varint(len(payload)) + payload


def _example(row: dict[str, Any]) -> bytes:
    """An Example whose map entries are written in the row's order. Written by hand:
    protobuf serializes a map in its own order, which may differ between processes."""
    entries = b"".join(_delimited(1, _delimited(1, key.encode()) + _delimited(
        2, _feature(value).SerializeToString())) for key, value in row.items())
    serialized = _delimited(1, entries)
    example_pb2.Example.FromString(serialized)  # a valid Example
    return serialized


def _same(a: list[Any], b: list[Any]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape, (x, y)
        if x.dtype == object:
            assert x.tolist() == y.tolist()
        else:
            np.testing.assert_array_equal(x, y)


def _both(serialized: list[Any], sparse: list[Any], dense: list[Any]) -> list[Any] | None:
    """parse_batch's result, checked against the general decoder; the fast result."""
    names: list[str] = []
    want = k.parse_general(np.asarray(serialized, dtype=object), names, sparse, dense)
    _same(k.parse_batch(np.asarray(serialized, dtype=object), names, sparse, dense), want)
    fast = k.parse_fast(np.asarray(serialized, dtype=object), sparse, dense)
    if fast is not None:
        _same(fast, want)
    return fast


def _click_rows(n: int) -> list[dict[str, Any]]:
    rng = np.random.RandomState(0)
    return [{"user": b"u%d" % rng.randint(300), "item": int(rng.randint(-5, 10**12)),
             "hour": float(np.float32(rng.uniform(0, 24))), "clicked": int(rng.randint(2)),
             "tags": ("int", rng.randint(0, 2000, rng.randint(0, 5)).tolist()),
             "emb": ("float", rng.rand(3).astype(np.float32).tolist())} for _ in range(n)]


SPARSE = [("user", dt.string), ("item", dt.int64), ("tags", dt.int64)]
DENSE = [("hour", dt.float32, [], None), ("clicked", dt.int64, [1], None),
         ("emb", dt.float32, [3], None)]


def test_same_layout_batch_takes_the_fast_path_with_the_general_results() -> None:
    rows = _click_rows(64)
    fast = _both([_example(r) for r in rows], SPARSE, DENSE)
    assert fast is not None  # the fast path ran, and matched
    assert fast[4].tolist() == [r["item"] for r in rows]  # int64 over one byte, negatives
    assert fast[3].tolist() == [r["user"] for r in rows]


def test_declines_and_matches_when_layouts_differ() -> None:
    rows = _click_rows(8)
    rows[3] = dict(reversed(list(rows[3].items())))  # another key order
    assert _both([_example(r) for r in rows], SPARSE, DENSE) is None
    rows = _click_rows(8)
    del rows[5]["tags"]  # a VarLenFeature missing from one example
    assert _both([_example(r) for r in rows], SPARSE, DENSE) is None


def test_other_encodings_of_a_column_decode_through_protobuf() -> None:
    rows = [{"user": ("bytes", [b"a", b"bc"][:i % 3]), "long": b"x" * (130 + i),
             "many": ("float", [float(i)] * 40), "none": ("int", [])} for i in range(6)]
    fast = _both([_example(r) for r in rows],
                 [("user", dt.string), ("long", dt.string), ("many", dt.float32),
                  ("none", dt.int64)], [])
    assert fast is not None


def _unpacked_floats(key: bytes, values: list[float]) -> bytes:
    """An Example whose float list is written unpacked (legal; some writers do)."""
    floats = b"".join(b"\x0d" + struct.pack("<f", v) for v in values)
    feature = b"\x12" + bytes([len(floats)]) + floats
    entry = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(feature)]) + feature
    features = b"\x0a" + bytes([len(entry)]) + entry
    return b"\x0a" + bytes([len(features)]) + features


def test_unpacked_floats_read_as_packed_ones() -> None:
    serialized = [_unpacked_floats(b"f", [1.5, float(i)]) for i in range(4)]
    fast = _both(serialized, [("f", dt.float32)], [("f", dt.float32, [2], None)])
    assert fast is not None and fast[3].tolist() == [[1.5, float(i)] for i in range(4)]


def test_wrong_kind_and_wrong_count_raise_the_general_errors() -> None:
    serialized = [_example({"a": 1.0, "b": ("int", [1, 2])}) for _ in range(3)]
    for sparse, dense in (([("a", dt.int64)], []), ([], [("b", dt.int64, [1], None)])):
        with pytest.raises(errors.InvalidArgumentError) as general:
            k.parse_general(np.asarray(serialized, dtype=object), [], sparse, dense)
        with pytest.raises(errors.InvalidArgumentError) as batch:
            k.parse_batch(np.asarray(serialized, dtype=object), [], sparse, dense)
        assert str(batch.value) == str(general.value)


def test_truncated_example_raises_the_general_error() -> None:
    serialized = [_example({"a": 1.0}) for _ in range(3)]
    serialized[1] = serialized[1][:-2]
    with pytest.raises(errors.InvalidArgumentError, match="example 1"):
        k.parse_batch(np.asarray(serialized, dtype=object), [], [("a", dt.float32)], [])


def test_defaults_and_sequence_features_go_the_general_way() -> None:
    serialized = [_example({"a": ("int", [1, 2])}) for _ in range(3)]
    dense = [("a", dt.int64, [None], np.zeros(0, np.int64)),
             ("z", dt.int64, [], np.asarray(7))]
    assert _both(serialized, [], dense[:1]) is None
    assert _both(serialized, [], dense[1:]) is None


_VALUES = st.one_of(
    st.tuples(st.just("int"), st.lists(st.integers(-2**63, 2**63 - 1), max_size=4)),
    st.tuples(st.just("float"), st.lists(st.floats(width=32, allow_nan=False), max_size=4)),
    st.tuples(st.just("bytes"), st.lists(st.binary(max_size=140), max_size=3)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["a", "b", "é"]), _VALUES, min_size=1),
                min_size=1, max_size=6),
       st.sampled_from([dt.int64, dt.float32, dt.string]))
def test_random_batches_agree_with_the_general_decoder(rows: list[dict[str, Any]],
                                                       dtype: Any) -> None:
    serialized = [_example(r) for r in rows]
    for key in ("a", "b", "é"):
        try:
            want = k.parse_general(np.asarray(serialized, dtype=object), [], [(key, dtype)],
                                   [])
        except errors.InvalidArgumentError as e:  # a kind mismatch: the same error
            with pytest.raises(errors.InvalidArgumentError, match="data types don't match"):
                k.parse_batch(np.asarray(serialized, dtype=object), [], [(key, dtype)], [])
            assert "data types don't match" in str(e)
            continue
        _same(k.parse_batch(np.asarray(serialized, dtype=object), [], [(key, dtype)], []),
              want)


_KINDS = {"int": (dt.int64, st.integers(-2**63, 2**63 - 1)),
          "float": (dt.float32, st.floats(width=32, allow_nan=False)),
          "bytes": (dt.string, st.binary(max_size=140))}


@settings(max_examples=60, deadline=None)
@given(st.data(), st.lists(st.sampled_from(sorted(_KINDS)), min_size=1, max_size=3),
       st.integers(1, 8))
def test_random_same_layout_batches_take_the_fast_path(data: Any, kinds: list[str],
                                                       n: int) -> None:
    keys = [f"k{i}" for i in range(len(kinds))]
    rows = [{key: (kind, data.draw(st.lists(_KINDS[kind][1], max_size=4)))
             for key, kind in zip(keys, kinds)} for _ in range(n)]
    sparse = [(key, _KINDS[kind][0]) for key, kind in zip(keys, kinds)]
    assert _both([_example(r) for r in rows], sparse, []) is not None


def test_features_written_in_two_fields_merge_as_protobuf_merges_them() -> None:
    # Example.features given twice (legal protobuf): the maps merge, in order.
    rows = [(_example({"a": float(i)}), _example({"b": ("int", [i, 7])})) for i in range(5)]
    serialized = [first + second for first, second in rows]
    fast = _both(serialized, [("b", dt.int64)], [("a", dt.float32, [], None)])
    assert fast is not None
    assert fast[3].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert fast[1].tolist() == [v for i in range(5) for v in (i, 7)]


def test_unknown_fields_of_an_example_are_skipped_as_protobuf_skips_them() -> None:
    serialized = [_example({"a": float(i)}) + b"\x28\x05" + _delimited(6, b"junk")
                  for i in range(4)]  # field 5 (varint 5) and field 6 (bytes)
    assert _both(serialized, [], [("a", dt.float32, [1], None)]) is not None


def test_records_whose_length_takes_two_or_three_varint_bytes() -> None:
    serialized = [_example({"s": b"x" * size, "n": 3}) for size in (100, 200, 20000)]
    fast = _both(serialized, [("s", dt.string)], [("n", dt.int64, [], None)])
    assert fast is not None and [len(v) for v in fast[1]] == [100, 200, 20000]


def test_lists_of_equal_length_in_every_example() -> None:
    serialized = [_example({"tags": ("int", [i, i + 1, 300])}) for i in range(6)]
    fast = _both(serialized, [("tags", dt.int64)], [])
    assert fast is not None
    assert fast[0].tolist() == [[i, j] for i in range(6) for j in range(3)]
    assert fast[2].tolist() == [6, 3]


def test_text_instead_of_bytes_is_left_to_the_general_decoder() -> None:
    serialized: list[Any] = [_example({"a": 1.0}), "not bytes"]
    assert k.parse_fast(np.asarray(serialized, dtype=object), [],
                        [("a", dt.float32, [], None)]) is None

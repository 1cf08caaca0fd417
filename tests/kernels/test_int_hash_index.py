"""The vectorized open-addressing hash index behind an EmbeddingVariable's integer ids
(tensorweave/kernels/int_hash_index.py), and its dict stand-in for strings.

Our own cases and values: insertion and lookup, repeats inside a batch, growth, removal
then reinsertion, the int64 extremes, and a randomized comparison with a dict.
"""
from __future__ import annotations

import numpy as np
import pytest

from tensorweave.kernels import int_hash_index
from tensorweave.kernels.int_hash_index import DictIndex, IntHashIndex, mix64

EXTREMES = np.array([0, -1, 1, 2**63 - 1, -2**63, -2**63 + 1, 2**62, -2**62], np.int64)


def _check_against(index: IntHashIndex, ref: dict[int, int], probe: np.ndarray) -> None:
    assert len(index) == len(ref)
    assert index.find(probe).tolist() == [ref.get(k, -1) for k in probe.tolist()]
    keys, values = index.items()
    assert dict(zip(keys.tolist(), values.tolist())) == ref


def test_insert_then_find():
    index = IntHashIndex()
    index.insert(np.array([5, 17, 3]), np.array([0, 1, 2]))
    assert index.find(np.array([3, 5, 4, 17])).tolist() == [2, 0, -1, 1]
    assert len(index) == 3


def test_int64_extremes_negative_ids_and_zero_are_ordinary_keys():
    index = IntHashIndex()
    index.insert(EXTREMES, np.arange(len(EXTREMES)))
    assert index.find(EXTREMES).tolist() == list(range(len(EXTREMES)))
    assert index.find(np.array([2, -2, 2**63 - 2])).tolist() == [-1, -1, -1]
    index.remove(EXTREMES[::2])
    assert index.find(EXTREMES).tolist() == [-1, 1, -1, 3, -1, 5, -1, 7]


def test_repeats_in_one_batch_keep_the_last_value():
    index = IntHashIndex()
    index.insert(np.array([9, 4, 9, 9, 4]), np.array([1, 2, 3, 4, 5]))
    assert len(index) == 2 and index.find(np.array([9, 4])).tolist() == [4, 5]


def test_keys_of_one_batch_claiming_one_empty_slot_all_get_their_own():
    # Keys whose home slots collide in a 16-slot table: every one probes to the same
    # empty slot and all but one must probe on.
    homes = mix64(np.arange(2000)) & np.uint64(15)
    same = np.flatnonzero(homes == homes[0])[:8]
    index = IntHashIndex(16)
    found, slots = index.find_slots(same)
    assert (found == -1).all() and len(set(slots.tolist())) == 1
    index.insert_at(same, np.arange(8) * 10, slots)
    assert index.find(same).tolist() == list(range(0, 80, 10))
    assert index.capacity == 16 and len(set(index.find_slots(same)[1].tolist())) == 8


def test_find_slots_then_insert_at_probes_once_for_a_lookup_and_its_misses():
    index = IntHashIndex()
    index.insert(np.array([1, 2, 3]), np.array([10, 20, 30]))
    batch = np.array([2, 7, 3, 8])
    found, slots = index.find_slots(batch)
    miss = found < 0
    index.insert_at(batch[miss], np.array([70, 80]), slots[miss])
    assert index.find(np.array([1, 2, 3, 7, 8])).tolist() == [10, 20, 30, 70, 80]


def test_grows_past_its_load_factor_and_keeps_every_key():
    index = IntHashIndex(16, max_load=0.7)
    keys = np.arange(-5000, 5000, 7, dtype=np.int64) * 1_000_003
    for chunk in np.array_split(np.arange(len(keys)), 9):
        index.insert(keys[chunk], chunk)
    assert index.find(keys).tolist() == list(range(len(keys)))
    assert len(index) == len(keys) <= 0.7 * index.capacity
    assert index.capacity == 2048   # the smallest power of two holding 1429 at 0.7


@pytest.mark.parametrize("part", [4, 16, 1 << 21])
def test_rebuilds_lay_every_key_out_whatever_their_parts(monkeypatch, part):
    # A rebuild sorts the keys of each part of the old table into the new one; small
    # parts leave keys behind the laid-out front, and the cluster wrapping the old
    # table's end comes first: those are inserted by probing afterwards.
    monkeypatch.setattr(int_hash_index, "_REBUILD_PART", part)
    rng = np.random.default_rng(part)
    index, ref = IntHashIndex(16), {}
    for _ in range(30):
        keys = np.unique(rng.integers(-2**63, 2**63 - 1, rng.integers(1, 40), dtype=np.int64))
        index.insert(keys, np.arange(len(keys)) + len(ref))
        ref.update(zip(keys.tolist(), (np.arange(len(keys)) + len(ref)).tolist()))
        gone = np.array(list(ref)[::5], np.int64)
        assert index.remove(gone).tolist() == [ref.pop(k) for k in gone.tolist()]
        _check_against(index, ref, np.array(list(ref), np.int64))
    index._rebuild(index.capacity)   # at the same capacity (tombstones dropped)
    _check_against(index, ref, np.array(list(ref), np.int64))
    assert index._used == len(ref)
    index._rebuild(4 * index.capacity)   # four new regions per old table
    _check_against(index, ref, np.array(list(ref), np.int64))


def test_a_cluster_wrapping_the_tables_end_survives_rebuilds():
    ids = np.arange(5000, dtype=np.int64)
    last = ids[(mix64(ids) & np.uint64(15)) == 15][:3]   # home: the last of 16 slots
    index = IntHashIndex(16)
    index.insert(last, np.array([1, 2, 3]))
    assert sorted(index.find_slots(last)[1].tolist()) == [0, 1, 15]   # two wrapped
    for capacity in (16, 64):
        index._rebuild(capacity)
        assert index.find(last).tolist() == [1, 2, 3] and len(index) == 3


def test_remove_then_reinsert():
    index = IntHashIndex()
    keys = np.arange(100, dtype=np.int64)
    index.insert(keys, keys * 2)
    assert index.remove(np.array([3, 50, 1000])).tolist() == [6, 100, -1]
    assert len(index) == 98 and index.find(np.array([3, 50, 4])).tolist() == [-1, -1, 8]
    index.insert(np.array([50, 3]), np.array([7, 9]))
    assert index.find(np.array([3, 50])).tolist() == [9, 7] and len(index) == 100


def test_removals_leave_no_tombstone_before_an_empty_slot():
    index = IntHashIndex(1024)
    keys = np.arange(500, dtype=np.int64)
    index.insert(keys, keys)
    index.remove(keys)
    assert len(index) == 0 and index._used == 0   # every tombstone emptied again
    index.insert(keys[:10], keys[:10])
    assert index.capacity == 1024   # no rebuild was needed


def test_tombstones_are_dropped_by_a_rebuild_at_the_same_capacity():
    index = IntHashIndex(64)
    rng = np.random.default_rng(1)
    for round_ in range(40):   # keep ~10 keys live while many come and go
        keys = rng.integers(-2**63, 2**63 - 1, 10, dtype=np.int64)
        index.insert(keys, np.full(10, round_))
        _check_against(index, dict.fromkeys(keys.tolist(), round_), keys)
        index.remove(keys)
    assert index.capacity == 64


def test_values_widen_past_int32():
    index = IntHashIndex()
    index.insert(np.array([1, 2]), np.array([5, 2**40]))
    assert index.find(np.array([2, 1])).tolist() == [2**40, 5]


def test_clear_forgets_every_key():
    index = IntHashIndex()
    index.insert(np.arange(100), np.arange(100))
    index.clear()
    assert len(index) == 0 and index.find(np.arange(100)).max() == -1 and index.capacity == 16


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_randomized_against_a_dict(seed):
    rng = np.random.default_rng(seed)
    index, ref = IntHashIndex(16), {}
    pool = np.concatenate([rng.integers(-2**63, 2**63 - 1, 300, dtype=np.int64), EXTREMES,
                           np.arange(-50, 50)])
    for _ in range(400):
        keys = rng.choice(pool, rng.integers(0, 60))
        op = rng.integers(0, 4)
        if op < 2:
            values = rng.integers(0, 1 << 31, len(keys))
            index.insert(keys, values)
            ref.update(zip(keys.tolist(), values.tolist()))
        elif op == 2:
            keys = np.unique(keys)
            assert index.remove(keys).tolist() == [ref.pop(k, -1) for k in keys.tolist()]
        else:
            found, slots = index.find_slots(np.unique(keys))
            miss = found < 0
            values = rng.integers(0, 1000, int(miss.sum()))
            index.insert_at(np.unique(keys)[miss], values, slots[miss])
            ref.update(zip(np.unique(keys)[miss].tolist(), values.tolist()))
        _check_against(index, ref, pool)
        assert index._used <= index.max_load * index.capacity


def test_dict_index_has_the_same_interface_for_strings():
    index = DictIndex()
    keys = np.array([b"cat", b"dog", b""], object)
    found, slots = index.find_slots(keys)
    assert found.tolist() == [-1, -1, -1]
    index.insert_at(keys, np.array([0, 1, 2]), slots)
    index.set_at(np.array([b"dog"], object), np.array([5]))
    assert index.find(np.array([b"dog", b"emu", b""], object)).tolist() == [5, -1, 2]
    assert index.remove(np.array([b"cat", b"emu"], object)).tolist() == [0, -1]
    got_keys, got_values = index.items()
    assert got_keys.tolist() == [b"dog", b""] and got_values.tolist() == [5, 2]

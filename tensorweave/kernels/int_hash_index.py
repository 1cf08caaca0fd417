"""A vectorized open-addressing hash index in NumPy: int64 key -> non-negative int.

Why: an EmbeddingVariable's id -> row map must hold 100M ids in a few GB and settle a
batch of a million ids in tens of milliseconds. A Python dict costs ~100 bytes and a
Python step per id; here keys and values are two flat arrays (12 bytes a slot while
values fit int32; 24-48 bytes a key at loads of 0.25-0.5) and every operation works on
a whole batch of keys at once.

Layout: `capacity` (a power of two) slots; slot i holds `keys[i]` and `vals[i]`, where
vals[i] is the value + 1: 0 marks an empty slot and -1 a tombstone (a removed key), so
every int64 is a valid key (no reserved "empty key") and a fresh table is `np.zeros`,
whose pages the OS maps only when written. Values are stored as int32 until one needs
more.

Probing: a key's home slot is splitmix64(key) & (capacity - 1) (sequential or strided
ids spread over all slots), then linear probing. A batch probes together: each round
gathers the slot of every key still searching, settles those that found their key or
an empty slot, and moves the others on (by one slot while many probe; by a window
that doubles once few do, so a long probe takes few rounds). A new key takes the
empty slot that ended its probe (the lookup's own result, so a lookup and the
insertion of its misses probe once). Keys of one batch claiming the same empty slot
all write their key there; the one whose key stayed takes the slot and the others
probe on (first-wins without a sort: a slot holds one whole int64, whoever wrote last).

Deletion leaves tombstones, which later probes pass over; a tombstone followed by an
empty slot ends no probe path and becomes empty at once. Growth: when occupied slots
and tombstones would pass `max_load` (0.5: short probes; at 0.7 a lookup of new ids
took ~2x as long), the table is rebuilt at twice the capacity, or at the same one when
tombstones, not live keys, filled it; a rebuild lays keys out by a sort instead of
probing (see `_rebuild`). Not thread-safe: its owner locks around every call.

Example:
    >>> index = IntHashIndex()
    >>> index.insert(np.array([7, -1, 2**63 - 1]), np.array([0, 1, 2]))
    >>> index.find(np.array([-1, 8]))
    array([ 1, -1])
"""
from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DictIndex", "IntHashIndex", "mix64"]

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_INT32_LIMIT = 2**31 - 2   # a stored value is value + 1
_REBUILD_PART = 1 << 21   # old slots moved per step of a rebuild (bounds its temporaries)
_FEW, _WINDOW, _MAX_WINDOW, _SLOTS_A_ROUND = 8192, 4, 256, 4096


def _next_width(width: int, probing: int) -> int:
    """Slots each probe scans in its next round. While many keys probe, one (NumPy's
    per-element work is the cost); once few do, a window of at least 4 slots, twice
    the last, or as many as keep the round near 4096 slots, so a batch's long probes
    take few rounds (each ~30 NumPy calls, the cost for few keys); a window's slots
    share cache lines."""
    if probing > _FEW:
        return 1
    return min(_MAX_WINDOW, max(_WINDOW, 2 * width, _SLOTS_A_ROUND // max(probing, 1)))


def mix64(keys: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer of int64 keys, as uint64: each input bit flips about half
    the output bits, so the low bits that pick a slot depend on every bit of the id."""
    z = np.ascontiguousarray(keys, np.int64).view(np.uint64).copy()
    z ^= z >> np.uint64(30)
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


def _int_keys(keys: Any) -> np.ndarray:
    return np.ascontiguousarray(keys, np.int64).reshape(-1)


class IntHashIndex:
    """int64 key -> value >= 0, looked up, inserted and removed a batch at a time.

    Args:
        capacity: initial slots (rounded up to a power of two, at least 16).
        max_load: the share of slots (live keys and tombstones) that triggers a rebuild.
    """

    def __init__(self, capacity: int = 16, max_load: float = 0.5) -> None:
        if not 0.0 < max_load < 1.0:
            raise ValueError(f"max_load must be in (0, 1), got {max_load}")
        self.max_load = float(max_load)
        self.clear(capacity)

    def clear(self, capacity: int = 16) -> None:
        """Forgets every key (and shrinks to `capacity` slots)."""
        cap = 16
        while cap < capacity:
            cap *= 2
        self._keys = np.zeros(cap, np.int64)
        self._vals = np.zeros(cap, np.int32)
        self._live = 0   # keys held
        self._used = 0   # slots not empty: keys held and tombstones

    def __len__(self) -> int:
        return self._live

    @property
    def capacity(self) -> int:
        """The number of slots."""
        return len(self._keys)

    @property
    def nbytes(self) -> int:
        """The bytes of the two slot arrays."""
        return self._keys.nbytes + self._vals.nbytes

    def _home(self, keys: np.ndarray) -> np.ndarray:
        z = mix64(keys)
        z &= np.uint64(len(self._keys) - 1)
        return z.view(np.int64)

    def find(self, keys: Any) -> np.ndarray:
        """The value of each key (int64), -1 for a key not held."""
        return self.find_slots(keys)[0]

    def find_slots(self, keys: Any) -> tuple[np.ndarray, np.ndarray]:
        """(value of each key or -1, its slot): where a key is held, or for a key not
        held the empty slot that ended its probe, which `insert_at` starts from."""
        keys = _int_keys(keys)
        home = self._home(keys)
        width = _next_width(0, len(keys))
        slots, stop, v = self._scan(home, width, keys)
        found = np.where(stop & (v > 0), v, 0).astype(np.int64)
        found -= 1
        idx = np.flatnonzero(~stop)   # past other keys or tombstones
        mask = len(self._keys) - 1
        pos, want = (home[idx] + width) & mask, keys[idx]
        while len(idx):
            width = _next_width(width, len(idx))
            at, stop, v = self._scan(pos, width, want)
            hit = stop & (v > 0)
            slots[idx[stop]] = at[stop]
            found[idx[hit]] = v[hit] - 1
            go = np.flatnonzero(~stop)
            idx, pos, want = idx[go], (pos[go] + width) & mask, want[go]
        return found, slots

    def _scan(self, pos: np.ndarray, width: int, want: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For probes at `pos`: the first of the `width` slots from each that is empty
        (or holds its `want` key), whether one was, and that slot's stored value.
        Scanning a window per round keeps the rounds (each a few NumPy calls) few
        where probes run long; its slots share cache lines."""
        if width == 1:
            v = np.take(self._vals, pos)
            stop = v == 0
            if want is not None:
                stop |= (v > 0) & (np.take(self._keys, pos) == want)
            return pos, stop, v
        # Windows are columns ([width, probes]): NumPy reduces along the first axis in
        # whole rows, along a short last one a row at a time (~10x slower here). A slot's
        # rank (width - its offset, 0 where nothing stops) picks each first stop.
        mask = len(self._keys) - 1
        offsets = np.arange(width)[:, None]
        win = (pos + offsets) & mask
        v = np.take(self._vals, win)
        stop = v == 0
        if want is not None:
            stop |= (v > 0) & (np.take(self._keys, win) == want)
        rank = (stop * (width - offsets)).max(axis=0)
        at = (pos + width - rank) & mask   # (past the window where nothing stops)
        return at, rank > 0, np.take(self._vals, at)

    def insert_at(self, keys: Any, values: Any, slots: np.ndarray | None = None) -> bool:
        """Adds keys not held (distinct) with their values; `slots`, if given, are their
        `find_slots` results with no insertion or removal since (so they probe on from
        there instead of from their home slots). Returns whether the table was rebuilt
        (then no slot found before holds)."""
        keys = _int_keys(keys)
        if not len(keys):
            return False
        stored = np.asarray(values, np.int64).reshape(-1) + 1
        rebuilt = self._make_room(len(keys))
        self._widen(stored)
        self._place(keys, stored, self._home(keys) if slots is None or rebuilt else slots)
        return rebuilt

    def _place(self, keys: np.ndarray, stored: np.ndarray, pos: np.ndarray) -> None:
        # Every claimant of an empty slot writes its key there; the key that stayed
        # names the winner. The losers move on with those whose slot was taken.
        stored = stored.astype(self._vals.dtype, copy=False)
        width, mask = 1, len(self._keys) - 1   # (first, one slot: a hint is an empty one)
        while len(keys):
            at, empty, _ = self._scan(pos, width)
            # (Most rounds of a big batch: every slot empty, every claim won; those
            # skip the index arrays.)
            claim = None if empty.all() else np.flatnonzero(empty)
            spot, want = (at, keys) if claim is None else (at[claim], keys[claim])
            self._keys[spot] = want
            won = np.take(self._keys, spot) == want
            placed = int(np.count_nonzero(won))
            self._live += placed
            self._used += placed
            if placed == len(keys):
                self._vals[at] = stored
                return
            done = np.flatnonzero(won) if claim is None else claim[won]
            self._vals[spot[won]] = stored[done]
            after = np.where(empty, at + 1, pos + width)   # past the slot lost, or the window
            rest = np.ones(len(keys), bool)
            rest[done] = False
            keys, stored, pos = keys[rest], stored[rest], after[rest] & mask
            width = _next_width(width, len(keys))

    def set_at(self, slots: np.ndarray, values: Any) -> None:
        """Sets the values of keys held at `slots` (from `find_slots`)."""
        stored = np.asarray(values, np.int64).reshape(-1) + 1
        if len(stored):
            self._widen(stored)
            self._vals[slots] = stored

    def remove_at(self, slots: np.ndarray) -> None:
        """Removes the keys held at `slots` (distinct, from `find_slots`)."""
        if not len(slots):
            return
        slots = np.asarray(slots, np.int64)[self._vals[slots] > 0]
        self._vals[slots] = -1
        self._live -= len(slots)
        # A tombstone followed by an empty slot ends no probe path: empty it, and then
        # the tombstone before it, right to left along a run (one step a pass), so no
        # tombstone is ever followed by an empty slot and removals rarely force rebuilds.
        mask = len(self._keys) - 1
        while len(slots):
            ends = slots[self._vals[(slots + 1) & mask] == 0]
            self._vals[ends] = 0
            self._used -= len(ends)
            before = (ends - 1) & mask
            slots = before[self._vals[before] == -1]

    def insert(self, keys: Any, values: Any) -> None:
        """Sets key -> value for each pair (a key given twice keeps its last value)."""
        keys = _int_keys(keys)
        values = np.broadcast_to(np.asarray(values, np.int64), keys.shape)
        if len(keys) > 1:
            _, last = np.unique(keys[::-1], return_index=True)
            keep = len(keys) - 1 - last
            keys, values = keys[keep], values[keep]
        found, slots = self.find_slots(keys)
        held = found >= 0
        self.set_at(slots[held], values[held])
        self.insert_at(keys[~held], values[~held], slots[~held])

    def remove(self, keys: Any) -> np.ndarray:
        """Removes the keys (distinct) held; returns each one's value, or -1."""
        found, slots = self.find_slots(keys)
        self.remove_at(slots[found >= 0])
        return found

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys, values) held, in slot order."""
        held = self._vals > 0
        return self._keys[held], self._vals[held].astype(np.int64) - 1

    def _widen(self, stored: np.ndarray) -> None:
        if self._vals.dtype == np.int32 and len(stored) and stored.max() > _INT32_LIMIT:
            self._vals = self._vals.astype(np.int64)

    def _make_room(self, n: int) -> bool:
        """Rebuilds before `n` insertions would pass max_load; True if it did."""
        cap = len(self._keys)
        if self._used + n <= self.max_load * cap:
            return False
        need = self._live + n
        if need > self.max_load * cap / 2:   # mostly live keys: grow
            cap *= 2
            while need > self.max_load * cap:
                cap *= 2
        self._rebuild(cap)
        return True

    def _rebuild(self, capacity: int) -> None:
        """Moves every key into a new table of `capacity` (>= the current) slots by
        sorting, not probing: read in slot order, the keys that share the high bits of
        their new home (a "stream": one new region per old table) come nearly sorted by
        home (linear probing displaces them a little), so a stable sort is cheap, and
        inserting keys in home order into empty slots is a running maximum: key i goes
        to max(its home, key i-1's slot + 1). The few that this cannot place (the old
        table's wrapping cluster, those a later part brings home behind the laid-out
        front, those past their region's end) are inserted by probing at the end."""
        old_keys, old_vals = self._keys, self._vals
        self._keys = np.zeros(capacity, np.int64)
        self._vals = np.zeros(capacity, old_vals.dtype)
        self._live = self._used = 0
        fronts = np.full(capacity // len(old_vals), -1, np.int64)   # last slot laid out
        late: list[tuple[np.ndarray, np.ndarray]] = []
        for start in range(0, len(old_vals), _REBUILD_PART):
            held = np.flatnonzero(old_vals[start:start + _REBUILD_PART] > 0)
            keys, slot = old_keys[start + held], start + held
            z = mix64(keys)
            wrapped = (z & np.uint64(len(old_vals) - 1)).view(np.int64) > slot
            z &= np.uint64(capacity - 1)
            self._lay_out(keys, old_vals[slot], z.view(np.int64), wrapped, fronts, late)
        if late:
            keys = np.concatenate([k for k, _ in late])
            self._place(keys, np.concatenate([v for _, v in late]), self._home(keys))

    def _lay_out(self, keys: np.ndarray, stored: np.ndarray, home: np.ndarray,
                 wrapped: np.ndarray, fronts: np.ndarray,
                 late: list[tuple[np.ndarray, np.ndarray]]) -> None:
        region = len(self._keys) // len(fronts)
        stream = home // region
        order = np.argsort(stream.astype(np.int16), kind="stable")   # (a radix sort)
        bounds = np.searchsorted(stream[order], np.arange(len(fronts) + 1))
        for s in np.flatnonzero(np.diff(bounds)):
            part = order[bounds[s]:bounds[s + 1]]
            part = part[np.argsort(home[part], kind="stable")]   # nearly sorted: fast
            front = fronts[s]
            fit = (home[part] > front) & ~wrapped[part]   # (leaves no gap: see above)
            late.append((keys[part[~fit]], stored[part[~fit]]))
            part = part[fit]
            h, i = home[part], np.arange(len(part))
            at = i + np.maximum(np.maximum.accumulate(h - i), front + 1)
            n = int(np.searchsorted(at, (s + 1) * region))   # past the region: late
            late.append((keys[part[n:]], stored[part[n:]]))
            self._keys[at[:n]] = keys[part[:n]]
            self._vals[at[:n]] = stored[part[:n]]
            self._live += n
            self._used += n
            if n:
                fronts[s] = at[n - 1]


class DictIndex:
    """IntHashIndex's interface over a dict, for keys NumPy cannot hash (strings, as
    bytes in object arrays). A key's "slot" is the key itself."""

    def __init__(self) -> None:
        self._d: dict[Any, int] = {}

    def clear(self) -> None:
        """Forgets every key."""
        self._d = {}

    def __len__(self) -> int:
        return len(self._d)

    @property
    def nbytes(self) -> int:
        """A rough size: the dict's table (its keys' objects not counted)."""
        return int(self._d.__sizeof__())

    def find(self, keys: Any) -> np.ndarray:
        """The value of each key, -1 for a key not held."""
        return self.find_slots(keys)[0]

    def find_slots(self, keys: Any) -> tuple[np.ndarray, np.ndarray]:
        """(value of each key or -1, the keys as slots)."""
        keys = np.asarray(keys, object).reshape(-1)
        get = self._d.get
        return np.fromiter((get(k, -1) for k in keys.tolist()), np.int64, len(keys)), keys

    def insert_at(self, keys: Any, values: Any, slots: Any = None) -> bool:
        """Adds keys not held with their values (never a rebuild: returns False)."""
        self.insert(keys, values)
        return False

    def set_at(self, slots: Any, values: Any) -> None:
        """Sets the values of the keys held (`slots` are keys)."""
        self.insert(slots, values)

    def remove_at(self, slots: Any) -> None:
        """Removes the keys (`slots` are keys)."""
        self.remove(slots)

    def insert(self, keys: Any, values: Any) -> None:
        """Sets key -> value for each pair (a key given twice keeps its last value)."""
        keys = np.asarray(keys, object).reshape(-1)
        values = np.broadcast_to(np.asarray(values, np.int64), keys.shape)
        self._d.update(zip(keys.tolist(), values.tolist()))

    def remove(self, keys: Any) -> np.ndarray:
        """Removes the keys held; returns each one's value, or -1."""
        pop = self._d.pop
        keys = np.asarray(keys, object).reshape(-1)
        return np.fromiter((pop(k, -1) for k in keys.tolist()), np.int64, len(keys))

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """(keys as an object array, values), in insertion order."""
        keys = np.empty(len(self._d), object)
        keys[:] = list(self._d)
        return keys, np.fromiter(self._d.values(), np.int64, len(self._d))

"""The distributions behind the candidate sampler ops (NumPy, no graph).

A sampler draws ids from [0, range) and tells the probability of any id. The
expected counts the ops return follow TF's kernels exactly: `p * num_sampled`
when drawing with replacement, and `1 - (1 - p) ** num_tries` when drawing
unique ids, `num_tries` being how many draws it took to collect them. TF does
that arithmetic in float32, and so do we, so the numbers agree to the last bit
whenever the probabilities do.

Example:
    >>> s = LogUniformSampler(10)
    >>> ids, tries = draw_batch(s, np.random.default_rng(0), 4, unique=True)
    >>> expected_count(s.probability(ids), 4, tries)
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from tensorweave.framework import errors


def _invalid(msg: str) -> errors.InvalidArgumentError:
    return errors.InvalidArgumentError(None, None, msg)


class RangeSampler:
    """Draws ids in [0, range_max); subclasses give `sample` and `probability`."""

    needs_updates = False

    def __init__(self, range_max: int) -> None:
        self.range_max = int(range_max)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        raise NotImplementedError

    def probability(self, ids: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def drawable(self) -> int:
        """How many distinct ids can come out (those with nonzero probability)."""
        return self.range_max

    def update(self, ids: np.ndarray) -> None:
        """Learns from the true classes of a batch (only the learned unigram does)."""


class UniformSampler(RangeSampler):
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(0, self.range_max, size=n, dtype=np.int64)

    def probability(self, ids: np.ndarray) -> np.ndarray:
        return np.full(np.shape(ids), np.float32(1.0 / self.range_max), np.float32)


class LogUniformSampler(RangeSampler):
    """P(k) = log((k + 2) / (k + 1)) / log(range_max + 1): Zipf-like, for ids sorted by
    decreasing frequency (word2vec vocabularies)."""

    def __init__(self, range_max: int) -> None:
        super().__init__(range_max)
        self._log_range = np.log1p(float(range_max))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # exp(u * log(range + 1)) - 1 lies in [0, range); the modulo only guards roundoff.
        values = np.exp(rng.random(n) * self._log_range).astype(np.int64) - 1
        return values % self.range_max

    def probability(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, np.float64)
        return (np.log((ids + 2.0) / (ids + 1.0)) / self._log_range).astype(np.float32)


class UnigramSampler(RangeSampler):
    """P(k) = weight[k] / sum(weights); weights are float32 as in TF's kernel."""

    def __init__(self, weights: Sequence[float] | np.ndarray) -> None:
        super().__init__(len(weights))
        self._set(np.asarray(weights, np.float32))

    def _set(self, weights: np.ndarray) -> None:
        self.weights = weights
        cum = np.cumsum(weights, dtype=np.float32)  # TF adds the weights up one by one
        self.total = cum[-1] if len(cum) else np.float32(0)
        self._cum = np.cumsum(weights, dtype=np.float64)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        # side="right" never lands on a zero-weight id (reserved ids).
        picks = np.searchsorted(self._cum, rng.random(n) * self._cum[-1], side="right")
        return np.minimum(picks, self.range_max - 1).astype(np.int64)

    def probability(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, np.int64)
        inside = (ids >= 0) & (ids < self.range_max)
        w = np.where(inside, self.weights[np.clip(ids, 0, max(self.range_max - 1, 0))], 0)
        return (w.astype(np.float32) / self.total).astype(np.float32)

    def drawable(self) -> int:
        return int(np.count_nonzero(self.weights))


class LearnedUnigramSampler(UnigramSampler):
    """Every id starts with weight 1; each true class seen adds 1 (after the batch's
    draw, as TF's kernel does). The counts live as long as the session's kernel."""

    needs_updates = True

    def __init__(self, range_max: int) -> None:
        super().__init__(np.ones(int(range_max), np.float32))
        self._counts = np.ones(int(range_max), np.int64)

    def update(self, ids: np.ndarray) -> None:
        np.add.at(self._counts, np.asarray(ids, np.int64).reshape(-1), 1)
        self._set(self._counts.astype(np.float32))

    def probability(self, ids: np.ndarray) -> np.ndarray:
        counts = self._counts[np.asarray(ids, np.int64)]
        return (counts.astype(np.float32) / np.float32(self._counts.sum())).astype(np.float32)


class AllSampler(RangeSampler):
    """Every id once, in order; each expected count is 1."""

    def probability(self, ids: np.ndarray) -> np.ndarray:
        return np.ones(np.shape(ids), np.float32)


def fixed_unigram_weights(unigrams: Sequence[float], distortion: float, num_reserved_ids: int,
                          num_shards: int, shard: int) -> np.ndarray:
    """This shard's weights, laid out as TF's FixedUnigramSampler does: 0 for each
    reserved id on this shard (`id % num_shards == shard`), then `unigram ** distortion`
    for each unigram whose position falls on this shard. TF counts those positions
    from the number of reserved ids *on this shard*, not from num_reserved_ids; we
    keep that, so a sharded sampler draws what TF's would."""
    reserved = [0.0 for i in range(num_reserved_ids) if i % num_shards == shard]
    own = [w for i, w in enumerate(unigrams, start=len(reserved)) if i % num_shards == shard]
    # pow in double, then float32: what C++'s pow(float, float) gives TF.
    powered = np.power(np.asarray(own, np.float64), float(distortion)).astype(np.float32)
    return np.concatenate([np.asarray(reserved, np.float32), powered])


def read_vocab_unigrams(path: str) -> list[float]:
    """The last comma-separated field of each non-blank line of a vocab file.

    Raises:
        InvalidArgumentError: a line whose last field is not a number (names it).
        NotFoundError: no such file.
    """
    out = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"FixedUnigramCandidateSampler: vocab_file "
                                   f"{path!r} does not exist.") from None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        field = line.split(",")[-1].strip()
        try:
            out.append(float(field))
        except ValueError:
            raise _invalid(f"Wrong vocabulary format at {path} line {n} ({line!r}): the "
                           "last comma-separated field must be the word's count.") from None
    return out


def draw_batch(sampler: RangeSampler, rng: np.random.Generator, num_sampled: int,
               unique: bool) -> tuple[np.ndarray, int]:
    """(num_sampled ids, number of draws it took); unique ids are drawn with rejection.

    Raises:
        InvalidArgumentError: unique ids asked for but fewer can ever be drawn.
    """
    if isinstance(sampler, AllSampler):
        return np.arange(num_sampled, dtype=np.int64), num_sampled
    if not unique:
        return sampler.sample(rng, num_sampled), num_sampled
    if num_sampled > sampler.drawable():
        # TF loops forever here (all remaining ids have weight 0); say so instead.
        raise _invalid(f"Cannot draw {num_sampled} unique candidates: only "
                       f"{sampler.drawable()} of the range_max={sampler.range_max} ids have "
                       "a nonzero probability. Lower num_sampled or use unique=False.")
    picked: list[int] = []
    seen: set[int] = set()
    tries = 0
    while len(picked) < num_sampled:
        for v in sampler.sample(rng, max(2 * (num_sampled - len(picked)), 32)).tolist():
            tries += 1
            if v not in seen:
                seen.add(v)
                picked.append(v)
                if len(picked) == num_sampled:
                    break
    return np.asarray(picked, np.int64), tries


def expected_count(p: Any, num_sampled: int, num_tries: int) -> np.ndarray:
    """How often an id of probability p is expected in the batch (float32, as TF)."""
    p = np.asarray(p, np.float32)
    if num_tries == num_sampled:  # always so without unique
        return (p * np.float32(num_sampled)).astype(np.float32)
    # 1 - (1 - p) ** num_tries, in a form that keeps precision for small p.
    return (-np.expm1(np.float32(num_tries) * np.log1p(-p))).astype(np.float32)

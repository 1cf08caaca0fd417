"""Candidate samplers (`tf.nn.*_candidate_sampler`) and `tf.nn.compute_accidental_hits`.

Each sampler op takes `true_classes` (int64, [batch_size, num_true]) and returns
`sampled_candidates` (int64 [num_sampled]), `true_expected_count` (float32,
[batch_size, num_true]) and `sampled_expected_count` (float32 [num_sampled]),
with TF's op names, attrs and expected-count formulas (see range_samplers).
Like our other random ops, each keeps its generator in the kernel's state,
seeded from (graph seed, op seed): a fresh session replays the same draws. The
samplers are not differentiable, as in TF.

Example:
    >>> labels = tf.placeholder(tf.int64, [None, 1])
    >>> sampled, true_ec, sampled_ec = tf.nn.log_uniform_candidate_sampler(
    ...     labels, num_true=1, num_sampled=64, unique=True, range_max=50000)
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework import errors
from tensorweave.framework import file_access as _files
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import REQUIRED, OpDef, create_op, define_op
from tensorweave.framework.op_outputs import op_result
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape, dimension_value
from tensorweave.kernels import range_samplers as rs
from tensorweave.ops.random.random_ops import _rng, get_seed

__all__ = ["uniform_candidate_sampler", "log_uniform_candidate_sampler",
           "learned_unigram_candidate_sampler", "fixed_unigram_candidate_sampler",
           "all_candidate_sampler", "compute_accidental_hits"]

# Each returns TF's namedtuple of its op's outputs, named after the op:
# UniformCandidateSampler(sampled_candidates, true_expected_count, sampled_expected_count),
# ComputeAccidentalHits(indices, ids, weights).

_COMMON = {"num_true": REQUIRED, "num_sampled": REQUIRED, "unique": REQUIRED,
           "seed": None, "seed2": None}
_FIXED_UNIGRAM = {"range_max": REQUIRED, "vocab_file": "", "distortion": 1.0,
                  "num_reserved_ids": 0, "num_shards": 1, "shard": 0, "unigrams": []}


# ---- build-time checks --------------------------------------------------------------
def check_true_classes(op_type: str, t: Tensor, num_true: int, arg: str = "true_classes"
                       ) -> TensorShape:
    """[batch, num_true] of int64 `t` (argument `arg` of `op_type`), or an error saying how
    to fix it. The sampled losses check their `labels` with it too."""
    if t.dtype.base_dtype != _dt.int64:
        raise TypeError(f"{op_type}: {arg} must be int64, got {t.dtype.name} ({t.name}); "
                        "cast it with tf.cast(labels, tf.int64).")
    shape = t.shape
    if shape.ndims is not None and shape.ndims != 2:
        raise ValueError(f"{op_type}: {arg} must be a matrix [batch_size, num_true], "
                         f"got shape {shape} ({t.name}); reshape it, e.g. "
                         "tf.reshape(labels, [-1, num_true]).")
    if shape.ndims == 2 and dimension_value(shape[1]) not in (None, num_true):
        raise ValueError(f"{op_type}: {arg} has {int(shape[1])} columns but num_true="
                         f"{num_true}; pass num_true={int(shape[1])} or reshape the labels.")
    return TensorShape([shape[0] if shape.ndims else None, num_true])


def _check_counts(op_type: str, num_true: int, num_sampled: int, unique: bool,
                  range_max: int | None) -> None:
    for what, v in (("num_true", num_true), ("num_sampled", num_sampled),
                    ("range_max", range_max)):
        if v is not None and int(v) < 1:
            raise ValueError(f"{op_type}: {what} must be >= 1, got {v}.")
    if unique and range_max is not None and num_sampled > range_max:
        raise ValueError(f"{op_type}: cannot draw num_sampled={num_sampled} unique candidates "
                         f"from range_max={range_max} classes; lower num_sampled to at most "
                         f"{range_max} or pass unique=False.")


def _outputs(true_shape: TensorShape, num_sampled: int) -> list[Any]:
    return [(_dt.int64, TensorShape([num_sampled])), (_dt.float32, true_shape),
            (_dt.float32, TensorShape([num_sampled]))]


# ---- the shared kernel --------------------------------------------------------------
def _run(ctx: Any, sampler: rs.RangeSampler, true_classes: Any, num_true: int,
         num_sampled: int, unique: bool, seed: Any, seed2: Any) -> list[np.ndarray]:
    true = np.asarray(true_classes, np.int64)
    if true.ndim != 2 or true.shape[1] != num_true:
        raise errors.InvalidArgumentError(None, None, f"{ctx.type}: true_classes must be a "
                                          f"[batch_size, num_true={num_true}] matrix, got "
                                          f"shape {list(true.shape)}.")
    bad = true[(true < 0) | (true >= sampler.range_max)]
    if bad.size:
        raise errors.InvalidArgumentError(None, None, f"{ctx.type}: true class {int(bad[0])} "
                                          f"is out of range [0, {sampler.range_max}).")
    rng, lock = _rng(ctx, seed, seed2)
    with lock:  # draws, expected counts and the learned counts move together
        sampled, tries = rs.draw_batch(sampler, rng, num_sampled, unique)
        true_ec = rs.expected_count(sampler.probability(true), num_sampled, tries)
        sampled_ec = rs.expected_count(sampler.probability(sampled), num_sampled, tries)
        if isinstance(sampler, rs.AllSampler):  # every class is in every batch once
            true_ec, sampled_ec = np.ones_like(true_ec), np.ones_like(sampled_ec)
        if sampler.needs_updates:
            sampler.update(true)
    return [sampled, true_ec, sampled_ec]


def _define_sampler(op_type: str, attrs: dict[str, Any],
                    make: Callable[..., rs.RangeSampler]) -> OpDef:
    """A sampler op; `make(ctx, **attrs)` builds its sampler once per session."""
    d = define_op(op_type, inputs=("true_classes",), attrs={**_COMMON, **attrs}, stateful=True)

    @d.shape
    def _(true_classes: Tensor, **kw: Any) -> Any:
        _check_counts(op_type, kw["num_true"], kw["num_sampled"], kw["unique"],
                      kw.get("range_max"))
        shape = check_true_classes(op_type, true_classes, kw["num_true"])
        return _outputs(shape, kw["num_sampled"])

    @d.kernel("CPU", kind="context")
    def _(ctx: Any, step: Any, true_classes: Any, **kw: Any) -> Any:
        if "sampler" not in ctx.state:
            ctx.state["sampler"] = make(ctx, **kw)
        return _run(ctx, ctx.state["sampler"], true_classes, kw["num_true"],
                    kw["num_sampled"], kw["unique"], kw["seed"], kw["seed2"])

    d.no_gradient()
    return d


def _make_fixed_unigram(ctx: Any, *, range_max: int, vocab_file: Any, unigrams: Any,
                        distortion: float, num_reserved_ids: int, num_shards: int, shard: int,
                        **_: Any) -> rs.RangeSampler:
    if vocab_file:
        path = _files.check_path(ctx.library.device.file_policy, str(vocab_file), "read",
                                 f"{ctx.type} {ctx.name} on {ctx.device}")
        unigrams = rs.read_vocab_unigrams(path)
    weights = rs.fixed_unigram_weights(list(unigrams), distortion, num_reserved_ids,
                                       num_shards, shard)
    if len(weights) != range_max:
        raise errors.InvalidArgumentError(None, None, f"{ctx.type}: range_max={range_max} must "
                                          f"equal the number of ids on this shard, "
                                          f"{len(weights)} (num_reserved_ids plus the "
                                          "unigrams, those with id % num_shards == shard).")
    return rs.UnigramSampler(weights)


uniform_op = _define_sampler("UniformCandidateSampler", {"range_max": REQUIRED},
                             lambda ctx, range_max, **_: rs.UniformSampler(range_max))
log_uniform_op = _define_sampler("LogUniformCandidateSampler", {"range_max": REQUIRED},
                                 lambda ctx, range_max, **_: rs.LogUniformSampler(range_max))
learned_unigram_op = _define_sampler(
    "LearnedUnigramCandidateSampler", {"range_max": REQUIRED},
    lambda ctx, range_max, **_: rs.LearnedUnigramSampler(range_max))
fixed_unigram_op = _define_sampler("FixedUnigramCandidateSampler", _FIXED_UNIGRAM,
                                   _make_fixed_unigram)
all_op = _define_sampler("AllCandidateSampler", {},
                         lambda ctx, num_sampled, **_: rs.AllSampler(num_sampled))


# ---- ComputeAccidentalHits ----------------------------------------------------------
hits_op = define_op("ComputeAccidentalHits", inputs=("true_classes", "sampled_candidates"),
                    attrs={"num_true": REQUIRED, "seed": None, "seed2": None})


@hits_op.shape
def _(true_classes: Tensor, sampled: Tensor, *, num_true: int, seed: Any, seed2: Any) -> Any:
    check_true_classes("ComputeAccidentalHits", true_classes, num_true)
    if sampled.dtype.base_dtype != _dt.int64:
        raise TypeError(f"compute_accidental_hits: sampled_candidates must be int64, got "
                        f"{sampled.dtype.name} ({sampled.name}).")
    if sampled.shape.ndims not in (None, 1):
        raise ValueError(f"compute_accidental_hits: sampled_candidates must be a vector, got "
                         f"shape {sampled.shape} ({sampled.name}).")
    vec = TensorShape([None])
    return [(_dt.int32, vec), (_dt.int64, vec), (_dt.float32, vec)]


@hits_op.kernel("CPU")
def _(true_classes: Any, sampled: Any, *, num_true: int, seed: Any, seed2: Any) -> Any:
    true = np.asarray(true_classes, np.int64)
    if true.ndim != 2 or true.shape[1] != num_true:
        raise errors.InvalidArgumentError(None, None, f"ComputeAccidentalHits: true_classes "
                                          f"must be a batch_size x num_true={num_true} matrix, "
                                          f"got shape {list(true.shape)}.")
    # A candidate sampled twice (unique=False) is found at its last position, as in TF.
    position = {int(c): i for i, c in enumerate(np.asarray(sampled).reshape(-1).tolist())}
    rows, ids = [], []
    for r, row in enumerate(true.tolist()):
        for c in row:
            if c in position:
                rows.append(r)
                ids.append(position[c])
    lowest = np.finfo(np.float32).min  # TF's -FLT_MAX: exp() of it is 0, no inf arithmetic
    return [np.asarray(rows, np.int32), np.asarray(ids, np.int64),
            np.full(len(rows), lowest, np.float32)]


hits_op.no_gradient()


# ---- public functions -----------------------------------------------------------------
def _true_classes(x: Any) -> Tensor:
    if isinstance(x, Tensor):
        return x
    return convert_to_tensor(np.asarray(x, np.int64), dtype=_dt.int64, name="true_classes")


def _sample(op_type: str, true_classes: Any, num_true: int, num_sampled: int, unique: bool,
            seed: int | None, name: str | None, **attrs: Any) -> Any:
    s1, s2 = get_seed(seed)
    all_attrs = {"num_true": int(num_true), "num_sampled": int(num_sampled),
                 "unique": bool(unique), "seed": s1, "seed2": s2, **attrs}
    op = create_op(op_type, [_true_classes(true_classes)], all_attrs,
                   name=name or op_type)
    return op_result(op)


def uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                              range_max: int, seed: int | None = None,
                              name: str | None = None) -> Any:
    """`tf.nn.uniform_candidate_sampler`: candidates drawn uniformly from [0, range_max).

    Args:
        true_classes: int64 [batch_size, num_true], the target classes.
        num_true: target classes per example.
        num_sampled: candidates drawn per batch.
        unique: draw without replacement (rejection sampling).
        range_max: the number of classes.
        seed: the op seed (with the graph seed: see tf.set_random_seed).
        name: the op name.

    Returns:
        (sampled_candidates, true_expected_count, sampled_expected_count).

    Raises:
        TypeError: true_classes not int64.
        ValueError: bad shapes, counts < 1, or unique with num_sampled > range_max.

    Example:
        >>> s, t, e = tf.nn.uniform_candidate_sampler([[1]], 1, 3, True, 10, seed=1)
    """
    return _sample("UniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   seed, name, range_max=int(range_max))


def log_uniform_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                  unique: bool, range_max: int, seed: int | None = None,
                                  name: str | None = None) -> Any:
    """`tf.nn.log_uniform_candidate_sampler`: P(k) = log((k+2)/(k+1)) / log(range_max+1).

    Suits vocabularies sorted by decreasing frequency; the default sampler of
    nce_loss and sampled_softmax_loss. Arguments, returns and errors as
    `uniform_candidate_sampler`.

    Example:
        >>> s, t, e = tf.nn.log_uniform_candidate_sampler(labels, 1, 64, True, 50000)
    """
    return _sample("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique,
                   seed, name, range_max=int(range_max))


def learned_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                      unique: bool, range_max: int, seed: int | None = None,
                                      name: str | None = None) -> Any:
    """`tf.nn.learned_unigram_candidate_sampler`: P(k) grows with how often k was a true
    class. Every class starts with count 1; each batch's true classes add 1 after its
    draw. The counts live in the session (not in checkpoints), as in TF.

    Example:
        >>> s, t, e = tf.nn.learned_unigram_candidate_sampler(labels, 1, 8, False, 100)
    """
    return _sample("LearnedUnigramCandidateSampler", true_classes, num_true, num_sampled,
                   unique, seed, name, range_max=int(range_max))


def fixed_unigram_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int,
                                    unique: bool, range_max: int, vocab_file: str = "",
                                    distortion: float = 1.0, num_reserved_ids: int = 0,
                                    num_shards: int = 1, shard: int = 0,
                                    unigrams: Sequence[float] = (), seed: int | None = None,
                                    name: str | None = None) -> Any:
    """`tf.nn.fixed_unigram_candidate_sampler`: P(k) proportional to unigram[k] ** distortion.

    Args:
        vocab_file: a CSV-like file, one line per id (from num_reserved_ids on), the
            last field the id's count. Give this or `unigrams`, not both.
        distortion: the power the counts are raised to (word2vec uses 0.75).
        num_reserved_ids: ids [0, num_reserved_ids) get weight 0 (never drawn).
        num_shards, shard: this sampler covers the ids with id % num_shards == shard;
            range_max must then be the number of those ids, and the ids it returns
            are positions within the shard, as in TF.
        unigrams: the counts, one per id from num_reserved_ids on.
        (the rest as `uniform_candidate_sampler`)

    Raises:
        ValueError: neither or both of vocab_file and unigrams; shard not in
            [0, num_shards); range_max not matching the unigrams.

    Example:
        >>> tf.nn.fixed_unigram_candidate_sampler(labels, 1, 2, True, 4,
        ...                                       unigrams=[5, 1, 1, 3], distortion=0.75)
    """
    unigrams = [float(u) for u in unigrams]
    if bool(vocab_file) == bool(unigrams):
        raise ValueError("fixed_unigram_candidate_sampler: give exactly one of vocab_file "
                         f"and unigrams (got vocab_file={vocab_file!r} and "
                         f"{len(unigrams)} unigrams).")
    if not 0 <= shard < num_shards:
        raise ValueError(f"fixed_unigram_candidate_sampler: shard={shard} must be in "
                         f"[0, num_shards={num_shards}).")
    if unigrams:
        n = len(rs.fixed_unigram_weights(unigrams, distortion, num_reserved_ids, num_shards,
                                         shard))
        if n != range_max:
            raise ValueError(f"fixed_unigram_candidate_sampler: range_max={range_max} must "
                             f"equal the number of ids on shard {shard}, {n} "
                             f"(num_reserved_ids={num_reserved_ids} plus {len(unigrams)} "
                             f"unigrams, split over num_shards={num_shards}).")
    return _sample("FixedUnigramCandidateSampler", true_classes, num_true, num_sampled, unique,
                   seed, name, range_max=int(range_max), vocab_file=str(vocab_file),
                   distortion=float(distortion), num_reserved_ids=int(num_reserved_ids),
                   num_shards=int(num_shards), shard=int(shard), unigrams=unigrams)


def all_candidate_sampler(true_classes: Any, num_true: int, num_sampled: int, unique: bool,
                          seed: int | None = None,
                          name: str | None = None) -> Any:
    """`tf.nn.all_candidate_sampler`: every class [0, num_sampled), expected counts 1.

    For testing a sampled loss against its full counterpart.

    Example:
        >>> s, t, e = tf.nn.all_candidate_sampler(labels, 1, num_classes, True)
    """
    return _sample("AllCandidateSampler", true_classes, num_true, num_sampled, unique, seed,
                   name)


def compute_accidental_hits(true_classes: Any, sampled_candidates: Any, num_true: int,
                            seed: int | None = None,
                            name: str | None = None) -> Any:
    """`tf.nn.compute_accidental_hits`: where a sampled candidate equals a true class.

    Returns:
        (indices int32: the example's row, ids int64: the position in
        sampled_candidates, weights float32: -FLT_MAX), one entry per hit, meant to
        be added to the sampled logits so that hits drop out of the loss.

    Example:
        >>> rows, pos, w = tf.nn.compute_accidental_hits(labels, sampled, num_true=1)
    """
    s1, s2 = get_seed(seed)
    sampled = sampled_candidates
    if not isinstance(sampled, Tensor):
        sampled = convert_to_tensor(np.asarray(sampled, np.int64), dtype=_dt.int64)
    op = create_op(
        "ComputeAccidentalHits", [_true_classes(true_classes), sampled],
        {"num_true": int(num_true), "seed": s1, "seed2": s2},
        name=name or "ComputeAccidentalHits")
    return op_result(op)

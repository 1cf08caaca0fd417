"""Candidate sampler ops and compute_accidental_hits: TF's op names and attrs, its
expected-count formulas (numbers recorded from TF 2.21's compat.v1 for fixed true
classes), seeding, distributions, and the errors for bad input."""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.framework.op_def import get_op_def
from tensorweave.ops.nn import candidate_sampling_ops as cs

pytestmark = pytest.mark.usefixtures("graph")

TRUE = [[1, 2], [0, 4], [3, 3]]
FLT_MAX = np.finfo(np.float32).max


def _true(values=TRUE):
    return tf.constant(values, dtype=tf.int64)


def _run(fetches):
    with tf.Session() as sess:
        return sess.run(fetches)


# ---- AllCandidateSampler and ComputeAccidentalHits (TF's own test cases) -----------
def test_all_candidate_sampler_ids_shapes_and_counts():
    sampled, true_ec, sampled_ec = cs.all_candidate_sampler(_true(), 2, 5, True)
    assert sampled.shape.as_list() == [5]
    assert true_ec.shape.as_list() == [3, 2] and sampled_ec.shape.as_list() == [5]
    s, t, e = _run([sampled, true_ec, sampled_ec])
    assert s.tolist() == [0, 1, 2, 3, 4] and s.dtype == np.int64
    np.testing.assert_array_equal(np.log(t), np.zeros((3, 2)))
    np.testing.assert_array_equal(np.log(e), np.zeros(5))


def test_accidental_hits_rows_positions_and_weights():
    sampled, _, _ = cs.all_candidate_sampler(_true(), 2, 5, True)
    hits = cs.compute_accidental_hits(_true(), sampled, 2)
    assert [h.shape.ndims for h in hits] == [1, 1, 1]
    assert [h.dtype for h in hits] == [tf.int32, tf.int64, tf.float32]
    rows, ids, weights = _run(hits)
    # Row-major over true classes; ids are positions in sampled_candidates.
    assert rows.tolist() == [0, 0, 1, 1, 2, 2] and ids.tolist() == [1, 2, 0, 4, 3, 3]
    assert (weights == -FLT_MAX).all()


def test_accidental_hits_positions_and_no_hits():
    # A candidate drawn twice is found at its last position, as TF's map keeps it.
    rows, ids, _ = _run(cs.compute_accidental_hits(
        _true([[7], [2]]), tf.constant([2, 9, 2, 7], tf.int64), 1))
    assert rows.tolist() == [0, 1] and ids.tolist() == [3, 2]
    rows, ids, weights = _run(cs.compute_accidental_hits(
        _true([[1]]), tf.constant([5, 6], tf.int64), 1))
    assert rows.size == ids.size == weights.size == 0


# ---- expected counts, recorded from TF for the same true classes --------------------
def test_non_unique_expected_counts_match_tensorflow():
    t = _true()
    out = _run({
        "log": cs.log_uniform_candidate_sampler(t, 2, 4, False, 10, seed=1),
        "uni": cs.uniform_candidate_sampler(t, 2, 4, False, 7, seed=1),
        "fixed": cs.fixed_unigram_candidate_sampler(t, 2, 4, False, 6, unigrams=[3., 1., 4., 1.],
                                                    distortion=0.75, num_reserved_ids=2, seed=1),
    })
    np.testing.assert_allclose(out["log"].true_expected_count,
                               [[0.67636836, 0.47989097], [1.1562593, 0.30413598],
                                [0.37223235, 0.37223235]], rtol=1e-6)
    np.testing.assert_allclose(out["uni"].true_expected_count, np.full((3, 2), 0.5714286),
                               rtol=1e-6)
    np.testing.assert_allclose(out["fixed"].true_expected_count,
                               [[0.0, 1.2827959], [0.0, 1.5917014], [0.5627514, 0.5627514]],
                               rtol=1e-6)
    # Sampled counts use the same formula on the sampled ids.
    p = np.log((out["log"].sampled_candidates + 2.0) / (out["log"].sampled_candidates + 1.0))
    np.testing.assert_allclose(out["log"].sampled_expected_count, 4 * p / np.log(11.0),
                               rtol=1e-6)
    # Reserved ids (weight 0) are never drawn.
    assert set(out["fixed"].sampled_candidates.tolist()) <= {2, 3, 4, 5}


def test_fixed_unigram_shards_as_tensorflow():
    # TF counts a shard's unigram positions from its own reserved ids (0 on shard 1
    # here), so shard 1 holds unigrams [1, 1, 9] ** 0.5; TF gave these counts.
    t = _true([[0, 1], [2, 1]])
    _, true_ec, sampled_ec = _run(cs.fixed_unigram_candidate_sampler(
        t, 2, 3, False, 3, unigrams=[3., 1., 4., 1., 5., 9.], distortion=0.5,
        num_reserved_ids=1, num_shards=2, shard=1, seed=1))
    np.testing.assert_allclose(true_ec, [[0.6, 0.6], [1.8, 0.6]], rtol=1e-6)
    assert set(np.round(sampled_ec.astype(np.float64), 5).tolist()) <= {0.6, 1.8}


def test_learned_unigram_counts_grow_with_true_classes():
    op = cs.learned_unigram_candidate_sampler(_true(), 2, 4, False, 5, seed=1)
    with tf.Session() as sess:
        runs = [sess.run(op.true_expected_count) for _ in range(3)]
    np.testing.assert_allclose(runs[0], np.full((3, 2), 0.8), rtol=1e-6)  # TF's numbers
    np.testing.assert_allclose(runs[1], [[0.72727275] * 2] * 2 + [[1.0909091] * 2], rtol=1e-6)
    np.testing.assert_allclose(runs[2], [[0.7058824] * 2] * 2 + [[1.1764706] * 2], rtol=1e-6)


def test_unique_expected_counts_use_the_number_of_tries():
    t = _true([[0, 9]])
    sampled, true_ec, sampled_ec = _run(cs.log_uniform_candidate_sampler(t, 2, 8, True, 10,
                                                                         seed=3))
    assert len(set(sampled.tolist())) == 8 and ((0 <= sampled) & (sampled < 10)).all()

    def p(ids):
        return np.log((np.asarray(ids) + 2.0) / (np.asarray(ids) + 1.0)) / np.log(11.0)
    # ec = 1 - (1 - p) ** tries for one whole number tries >= 8 shared by all ids.
    tries = np.log1p(-sampled_ec.astype(np.float64)) / np.log1p(-p(sampled))
    assert tries.min() >= 8 - 1e-3 and np.ptp(tries) < 1e-2 * tries.mean()
    k = round(float(tries.mean()))
    np.testing.assert_allclose(true_ec, [1 - (1 - p([0, 9])) ** k], rtol=1e-4)
    if k > 8:  # p * num_sampled would be the non-unique formula
        assert not np.allclose(sampled_ec, 8 * p(sampled))


def test_vocab_file_gives_the_unigrams_distribution(tmp_path):
    path = tmp_path / "vocab.csv"
    path.write_text("the,3\nof,1\n\nand,4\ncat,1\n")
    t = _true()
    from_file = cs.fixed_unigram_candidate_sampler(t, 2, 4, False, 6, vocab_file=str(path),
                                                   distortion=0.75, num_reserved_ids=2)
    from_list = cs.fixed_unigram_candidate_sampler(t, 2, 4, False, 6, unigrams=[3, 1, 4, 1],
                                                   distortion=0.75, num_reserved_ids=2)
    a, b = _run([from_file.true_expected_count, from_list.true_expected_count])
    np.testing.assert_array_equal(a, b)
    bad = tmp_path / "bad.csv"
    bad.write_text("the,3\nof,many\n")
    op = cs.fixed_unigram_candidate_sampler(t, 2, 1, False, 2, vocab_file=str(bad))
    with pytest.raises(errors.InvalidArgumentError, match="line 2"):
        _run(op)


def test_draws_follow_the_distribution():
    t = _true([[0]])
    s_log = cs.log_uniform_candidate_sampler(t, 1, 40000, False, 6, seed=5).sampled_candidates
    s_fix = cs.fixed_unigram_candidate_sampler(t, 1, 40000, False, 4, unigrams=[1, 0, 3, 4],
                                               seed=5).sampled_candidates
    a, b = _run([s_log, s_fix])
    ids = np.arange(6)
    expect = np.log((ids + 2.0) / (ids + 1.0)) / np.log(7.0)
    np.testing.assert_allclose(np.bincount(a, minlength=6) / a.size, expect, atol=0.01)
    np.testing.assert_allclose(np.bincount(b, minlength=4) / b.size, [0.125, 0, 0.375, 0.5],
                               atol=0.01)


# ---- seeding, op definitions --------------------------------------------------------
def test_seed_replays_in_fresh_sessions_and_draws_move_on():
    s = cs.log_uniform_candidate_sampler(_true(), 2, 5, True, 50, seed=1234).sampled_candidates
    with tf.Session() as sess:
        first, second = sess.run(s), sess.run(s)
    assert _run(s).tolist() == first.tolist()
    assert first.tolist() != second.tolist()
    unseeded = [cs.uniform_candidate_sampler(_true(), 2, 5, True, 10 ** 6).sampled_candidates
                for _ in range(2)]
    a, b = _run(unseeded)
    assert a.tolist() != b.tolist()


def test_op_types_attrs_and_no_gradient():
    tf.set_random_seed(7)
    out = cs.log_uniform_candidate_sampler(_true(), 2, 3, True, 10, seed=11)
    op = out.sampled_candidates.op
    assert op.type == "LogUniformCandidateSampler"
    assert (op.get_attr("num_true"), op.get_attr("num_sampled"), op.get_attr("unique"),
            op.get_attr("range_max"), op.get_attr("seed"), op.get_attr("seed2")) == \
        (2, 3, True, 10, 7, 11)
    assert [t.dtype for t in out] == [tf.int64, tf.float32, tf.float32]
    for name in ("UniformCandidateSampler", "LogUniformCandidateSampler",
                 "LearnedUnigramCandidateSampler", "FixedUnigramCandidateSampler",
                 "AllCandidateSampler"):
        # Stateful: never cached or folded, so every run draws anew.
        assert get_op_def(name).not_differentiable and get_op_def(name).stateful
    assert get_op_def("ComputeAccidentalHits").not_differentiable
    fixed = cs.fixed_unigram_candidate_sampler(_true(), 2, 2, True, 4, unigrams=[1, 2, 3, 4])
    assert fixed.sampled_candidates.op.get_attr("unigrams") == [1.0, 2.0, 3.0, 4.0]
    assert fixed.sampled_candidates.op.get_attr("distortion") == 1.0


# ---- errors ----------------------------------------------------------------------------
def test_unique_needs_enough_classes():
    with pytest.raises(ValueError, match=r"num_sampled=6 unique.*range_max=5"):
        cs.uniform_candidate_sampler(_true(), 2, 6, True, 5)
    cs.uniform_candidate_sampler(_true(), 2, 6, False, 5)  # with replacement it is fine
    # Only 2 ids have weight (2 reserved): TF would loop forever; we say why.
    op = cs.fixed_unigram_candidate_sampler(_true([[2]]), 1, 3, True, 4, unigrams=[1, 1],
                                            num_reserved_ids=2)
    with pytest.raises(errors.InvalidArgumentError, match="only 2 of the range_max=4"):
        _run(op)


def test_bad_true_classes_are_named():
    with pytest.raises(TypeError, match=r"must be int64, got int32.*tf.cast"):
        cs.log_uniform_candidate_sampler(tf.constant([[1]]), 1, 2, True, 5)
    with pytest.raises(ValueError, match=r"matrix \[batch_size, num_true\].*reshape"):
        cs.log_uniform_candidate_sampler(tf.constant([1, 2], tf.int64), 1, 2, True, 5)
    with pytest.raises(ValueError, match="2 columns but num_true=1"):
        cs.log_uniform_candidate_sampler(_true(), 1, 2, True, 5)
    with pytest.raises(errors.InvalidArgumentError, match=r"true class 7 is out of range"):
        _run(cs.log_uniform_candidate_sampler(_true([[7]]), 1, 2, True, 5))


def test_fixed_unigram_argument_errors():
    with pytest.raises(ValueError, match="exactly one of vocab_file and unigrams"):
        cs.fixed_unigram_candidate_sampler(_true(), 2, 1, True, 4)
    with pytest.raises(ValueError, match="exactly one of vocab_file and unigrams"):
        cs.fixed_unigram_candidate_sampler(_true(), 2, 1, True, 4, vocab_file="v",
                                           unigrams=[1.0])
    with pytest.raises(ValueError, match="range_max=5 must equal the number of ids"):
        cs.fixed_unigram_candidate_sampler(_true(), 2, 1, True, 5, unigrams=[1, 2, 3, 4])
    with pytest.raises(ValueError, match=r"shard=2 must be in \[0, num_shards=2\)"):
        cs.fixed_unigram_candidate_sampler(_true(), 2, 1, True, 2, unigrams=[1, 2, 3, 4],
                                           num_shards=2, shard=2)

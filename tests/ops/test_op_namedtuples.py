"""Multi-output ops come back as TF's namedtuples (or TF's plain tuples).

TF's wrapper of an op with several outputs returns `OpType(field=..., ...)` with the
op's output names: programs write `tf.nn.top_k(x, 2).indices`. Where TF's Python
function unpacks the op and returns a plain tuple (`tf.nn.moments`,
`tf.nn.fused_batch_norm`), ours is a plain tuple too. Types and fields below were
read off TensorFlow (tf.compat.v1, graph mode).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def import registered_ops
from tensorweave.framework.op_outputs import op_result, output_tuple_type
from tensorweave.framework.tf_op_signatures import SIGNATURES

_SAMPLED = ("sampled_candidates", "true_expected_count", "sampled_expected_count")


def _labels() -> Any:
    return tf.constant([[0], [3]], tf.int64)


CASES: list[tuple[str, Callable[[], Any], str | None, tuple[str, ...] | int]] = [
    # (what, call, TF's namedtuple name or None for a plain tuple, fields or length)
    ("nn.top_k", lambda: tf.nn.top_k(tf.ones([2, 4]), 2), "TopKV2", ("values", "indices")),
    ("math.top_k", lambda: tf.math.top_k(tf.ones([4]), 2), "TopKV2", ("values", "indices")),
    ("unique", lambda: tf.unique([3, 1, 3]), "Unique", ("y", "idx")),
    ("unique_with_counts", lambda: tf.unique_with_counts([3, 1, 3]), "UniqueWithCounts",
     ("y", "idx", "count")),
    ("setdiff1d", lambda: tf.setdiff1d([1, 2, 3], [2]), "ListDiff", ("out", "idx")),
    ("nn.max_pool_with_argmax",
     lambda: tf.nn.max_pool_with_argmax(tf.ones([1, 4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                                        "SAME"), "MaxPoolWithArgmax", ("output", "argmax")),
    ("qr", lambda: tf.qr(tf.eye(3)), "Qr", ("q", "r")),
    ("linalg.qr", lambda: tf.linalg.qr(tf.eye(3)), "Qr", ("q", "r")),
    ("nn.compute_accidental_hits",
     lambda: tf.nn.compute_accidental_hits(_labels(), tf.constant([0, 1], tf.int64), 1),
     "ComputeAccidentalHits", ("indices", "ids", "weights")),
    ("nn.uniform_candidate_sampler",
     lambda: tf.nn.uniform_candidate_sampler(_labels(), 1, 2, True, 5),
     "UniformCandidateSampler", _SAMPLED),
    ("nn.log_uniform_candidate_sampler",
     lambda: tf.nn.log_uniform_candidate_sampler(_labels(), 1, 2, True, 5),
     "LogUniformCandidateSampler", _SAMPLED),
    ("nn.learned_unigram_candidate_sampler",
     lambda: tf.nn.learned_unigram_candidate_sampler(_labels(), 1, 2, True, 5),
     "LearnedUnigramCandidateSampler", _SAMPLED),
    ("nn.fixed_unigram_candidate_sampler",
     lambda: tf.nn.fixed_unigram_candidate_sampler(_labels(), 1, 2, True, 5,
                                                   unigrams=[1.0] * 5),
     "FixedUnigramCandidateSampler", _SAMPLED),
    ("random.all_candidate_sampler", lambda: tf.random.all_candidate_sampler(_labels(), 1, 2,
                                                                              True),
     "AllCandidateSampler", _SAMPLED),
    # TF's Python functions that unpack their op: plain tuples.
    ("nn.fused_batch_norm", lambda: tf.nn.fused_batch_norm(tf.ones([1, 2, 2, 1]), [1.0],
                                                           [0.0]), None, 3),
    ("nn.moments", lambda: tf.nn.moments(tf.ones([2, 3]), [0]), None, 2),
    ("sparse.fill_empty_rows",
     lambda: tf.sparse.fill_empty_rows(tf.SparseTensor([[0, 0]], [1.0], [2, 2]), 0.0),
     None, 2),
]


@pytest.mark.parametrize("what, call, type_name, fields", CASES, ids=[c[0] for c in CASES])
def test_result_type_is_tfs(what: str, call: Callable[[], Any], type_name: str | None,
                            fields: tuple[str, ...] | int) -> None:
    with tf.Graph().as_default():
        result = call()
    if type_name is None:
        assert type(result) is tuple and len(result) == fields, what
    else:
        assert type(result).__name__ == type_name, what
        assert result._fields == fields, what


def test_fields_are_the_outputs_in_order() -> None:
    with tf.Graph().as_default(), tf.Session() as sess:
        top = tf.nn.top_k([[1.0, 5.0, 3.0]], k=2)
        values, indices = top
        assert values is top.values and indices is top.indices
        got = sess.run(top)
        assert type(got).__name__ == "TopKV2"  # session.run keeps the namedtuple
        np.testing.assert_array_equal(got.indices, [[1, 2]])
        uniq = sess.run(tf.unique_with_counts([4, 4, 7]))
        np.testing.assert_array_equal(uniq.count, [2, 1])


def test_reader_read_is_tfs_namedtuple(tmp_path: Any) -> None:
    path = tmp_path / "lines.txt"
    path.write_text("a\nb\n")
    with tf.Graph().as_default():
        queue = tf.train.string_input_producer([str(path)], num_epochs=1, shuffle=False)
        reader = tf.TextLineReader()
        read = reader.read(queue)
        up_to = reader.read_up_to(queue, 2)
    assert (type(read).__name__, read._fields) == ("ReaderReadV2", ("key", "value"))
    assert (type(up_to).__name__, up_to._fields) == ("ReaderReadUpToV2", ("keys", "values"))


def test_one_class_per_op_type_and_every_multi_output_op_has_one() -> None:
    assert output_tuple_type("TopKV2") is output_tuple_type("TopKV2")
    for name in registered_ops():
        outputs = SIGNATURES.get(name, (None, ()))[1]
        if len(outputs) >= 2:
            assert output_tuple_type(name)._fields == tuple(o[0] for o in outputs)
    with pytest.raises(KeyError, match="not a TensorFlow op with several outputs"):
        output_tuple_type("Identity")


def test_op_result_of_a_graph_op() -> None:
    with tf.Graph().as_default():
        op = tf.unique([1, 1]).y.op
        assert op_result(op)._fields == ("y", "idx")

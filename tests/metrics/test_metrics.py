"""tf.metrics: (value, update_op) pairs on local variables, checked against hand counts.

What TF 1.x's tensorflow/python/kernel_tests/metrics_test.py checks: variables in
LOCAL_VARIABLES and METRIC_VARIABLES with TF's names, value is 0 before any update,
update_op returns the value including its batch, accumulation over several batches,
weights, the collections arguments, shape errors.
"""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

LABELS = [0, 1, 1, 0, 1, 1, 0, 0]
SCORES = [0.1, 0.8, 0.4, 0.6, 0.9, 0.35, 0.2, 0.7]
WEIGHTS = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0, 3.0, 1.0]


def _run(*tensors, feed=None):
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        return sess.run(list(tensors), feed)


def test_accuracy_variables_names_and_collections():
    acc, update = tf.metrics.accuracy([1, 2], [1, 3])
    assert (acc.name, update.name) == ("accuracy/value:0", "accuracy/update_op:0")
    names = ["accuracy/total:0", "accuracy/count:0"]
    assert [v.name for v in tf.local_variables()] == names
    assert [v.name for v in tf.get_collection(tf.GraphKeys.METRIC_VARIABLES)] == names
    assert tf.global_variables() == [] and tf.trainable_variables() == []


def test_accuracy_is_zero_before_updates_and_accumulates_over_batches():
    labels = tf.placeholder(tf.int64, [None])
    preds = tf.placeholder(tf.int64, [None])
    acc, update = tf.metrics.accuracy(labels, preds)
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        assert sess.run(acc) == 0.0
        assert sess.run(update, {labels: [1, 2, 3, 4], preds: [1, 2, 0, 0]}) == 0.5
        assert sess.run(update, {labels: [5, 6], preds: [5, 6]}) == pytest.approx(4 / 6)
        assert sess.run(acc) == pytest.approx(4 / 6)
        sess.run(tf.local_variables_initializer())   # resetting the local variables
        assert sess.run(acc) == 0.0


def test_accuracy_weights_squeezes_trailing_one_and_casts_predictions():
    labels = tf.constant([[1], [2], [3]], tf.int32)           # [3, 1]
    preds = tf.constant([1, 0, 3], tf.int64)                  # [3], cast to int32
    _, update = tf.metrics.accuracy(labels, preds, weights=[2.0, 1.0, 0.0])
    assert _run(update)[0] == pytest.approx(2 / 3)


def test_accuracy_rejects_incompatible_shapes():
    with pytest.raises(ValueError, match="accuracy.*incompatible"):
        tf.metrics.accuracy(tf.zeros([3], tf.int32), tf.zeros([4], tf.int32))


def test_metrics_and_updates_collections():
    acc, update = tf.metrics.mean([1.0], metrics_collections=["m"], updates_collections=["u"])
    assert tf.get_collection("m") == [acc] and tf.get_collection("u") == [update]


def test_mean_with_weights_and_zero_weight_is_zero_not_nan():
    m, update = tf.metrics.mean([1.0, 2.0, 3.0], weights=[1.0, 0.0, 1.0])
    z, z_update = tf.metrics.mean([5.0], weights=[0.0], name="nothing")
    assert [v.name for v in tf.local_variables()][-2:] == ["nothing/total:0", "nothing/count:0"]
    assert _run(update, z_update) == [2.0, 0.0]


def test_mean_rejects_weights_that_do_not_broadcast():
    with pytest.raises(ValueError, match="weights can not be broadcast"):
        tf.metrics.mean(tf.zeros([2, 3]), weights=tf.ones([4]))


def test_mean_tensor_is_elementwise():
    m, update = tf.metrics.mean_tensor(tf.constant([[1.0, 2.0]]))
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        sess.run(update)
        np.testing.assert_allclose(sess.run(update), [[1.0, 2.0]])


def test_regression_errors():
    labels = [1.0, 2.0, 3.0, 4.0]
    preds = [2.0, 2.0, 1.0, 8.0]       # errors 1, 0, -2, 4
    _, mae = tf.metrics.mean_absolute_error(labels, preds)
    _, mse = tf.metrics.mean_squared_error(labels, preds)
    rmse, rmse_update = tf.metrics.root_mean_squared_error(labels, preds)
    _, wmse = tf.metrics.mean_squared_error(labels, preds, weights=[1.0, 1.0, 0.0, 0.0])
    got = _run(mae, mse, rmse_update, wmse)
    np.testing.assert_allclose(got, [7 / 4, 21 / 4, np.sqrt(21 / 4), 0.5], rtol=1e-6)
    assert rmse.name == "root_mean_squared_error/Sqrt:0" or rmse.name.endswith(":0")


def test_counts_precision_and_recall_with_weights():
    predicted = tf.greater(SCORES, 0.5)   # T at 0.8, 0.6, 0.9, 0.7
    tp = tf.metrics.true_positives(LABELS, predicted)[1]
    fp = tf.metrics.false_positives(LABELS, predicted)[1]
    fn = tf.metrics.false_negatives(LABELS, predicted)[1]
    tn = tf.metrics.true_negatives(LABELS, predicted)[1]
    p = tf.metrics.precision(LABELS, predicted, weights=WEIGHTS)[1]
    r = tf.metrics.recall(LABELS, predicted, weights=WEIGHTS)[1]
    # weighted: tp = 2 + 1, fp = 0.5 + 1, fn = 1 + 1
    np.testing.assert_allclose(_run(tp, fp, fn, tn, p, r), [2, 2, 2, 2, 3 / 4.5, 3 / 5],
                               rtol=1e-6)
    names = [v.name for v in tf.local_variables()]
    assert "precision/true_positives/count:0" in names
    assert "recall/false_negatives/count:0" in names


def test_precision_is_zero_when_nothing_is_predicted_true():
    p, update = tf.metrics.precision([1, 0], [False, False])
    assert _run(update, p) == [0.0, 0.0]


def test_auc_roc_equals_the_share_of_correctly_ordered_pairs():
    # positives 0.8, 0.4, 0.9, 0.35; negatives 0.1, 0.6, 0.2, 0.7: 12 of 16 pairs ordered
    auc, update = tf.metrics.auc(LABELS, SCORES)
    assert (auc.name, update.name) == ("auc/value:0", "auc/update_op:0")
    assert [v.name for v in tf.local_variables()] == [
        "auc/true_positives:0", "auc/false_negatives:0", "auc/true_negatives:0",
        "auc/false_positives:0"]
    assert tf.local_variables()[0].shape.as_list() == [200]
    assert _run(update)[0] == pytest.approx(0.75, abs=1e-5)


def test_auc_variants_match_tf():
    # Figures from TF 2.21 compat.v1 on the same inputs (scratch comparison, not imported).
    weighted = tf.metrics.auc(LABELS, SCORES, weights=WEIGHTS)[1]
    pr = tf.metrics.auc(LABELS, SCORES, curve="PR")[1]
    careful = tf.metrics.auc(LABELS, SCORES, curve="PR",
                             summation_method="careful_interpolation")[1]
    minoring = tf.metrics.auc(LABELS, SCORES, num_thresholds=5, summation_method="minoring")[1]
    np.testing.assert_allclose(_run(weighted, pr, careful, minoring),
                               [0.890909, 0.7958332, 0.79726744, 0.75], rtol=1e-5)


def test_auc_weighted_by_hand():
    # pairs (pos, neg) weighted by w_pos * w_neg; ordered ones over all
    lab, sc, w = np.array(LABELS), np.array(SCORES), np.array(WEIGHTS)
    pos, neg = np.where(lab == 1)[0], np.where(lab == 0)[0]
    ordered = sum(w[i] * w[j] for i in pos for j in neg if sc[i] > sc[j])
    total = w[pos].sum() * w[neg].sum()
    update = tf.metrics.auc(LABELS, SCORES, weights=WEIGHTS, num_thresholds=1000)[1]
    assert _run(update)[0] == pytest.approx(ordered / total, abs=2e-3)


def test_auc_rejects_predictions_outside_unit_interval():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[0, 1\]"):
        tf.metrics.auc([1, 0], [0.5, 1.5])          # known at build time
    scores = tf.placeholder(tf.float32, [2])
    update = tf.metrics.auc([1, 0], scores)[1]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[0, 1\]"):
        _run(update, feed={scores: [0.5, 1.5]})


def test_auc_bad_arguments():
    with pytest.raises(ValueError, match="curve"):
        tf.metrics.auc([1], [0.5], curve="XY")
    with pytest.raises(ValueError, match="summation_method"):
        tf.metrics.auc([1], [0.5], summation_method="simpson")

"""tf.metrics at thresholds and per class (TF 1.x metrics_test.py's subjects), by hand."""
import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

LABELS = [0, 1, 1, 0, 1, 1, 0, 0]
SCORES = [0.1, 0.8, 0.4, 0.6, 0.9, 0.35, 0.2, 0.7]
WEIGHTS = [1.0, 2.0, 1.0, 0.5, 1.0, 1.0, 3.0, 1.0]


def _updates_then_values(*pairs):
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        updates = sess.run([p[1] for p in pairs])
        values = sess.run([p[0] for p in pairs])
    return updates, values


def test_precision_and_recall_at_thresholds():
    p = tf.metrics.precision_at_thresholds(LABELS, SCORES, [0.3, 0.5, 0.85], weights=WEIGHTS)
    r = tf.metrics.recall_at_thresholds(LABELS, SCORES, [0.3, 0.5, 0.85])
    updates, values = _updates_then_values(p, r)
    # > 0.3: tp weights 2+1+1+1, fp 0.5+1; > 0.5: tp 2+1, fp 0.5+1; > 0.85: tp 1, fp 0
    np.testing.assert_allclose(values[0], [5 / 6.5, 3 / 4.5, 1.0], rtol=1e-5)
    np.testing.assert_allclose(values[1], [1.0, 0.5, 0.25], rtol=1e-5)
    np.testing.assert_allclose(updates[0], values[0])
    assert [v.name for v in tf.local_variables()] == [
        "precision_at_thresholds/true_positives:0", "precision_at_thresholds/false_positives:0",
        "recall_at_thresholds/true_positives:0", "recall_at_thresholds/false_negatives:0"]


def test_counts_at_thresholds_use_tf_scope_names():
    fn = tf.metrics.false_negatives_at_thresholds(LABELS, SCORES, [0.3, 0.5])
    tp = tf.metrics.true_positives_at_thresholds(LABELS, SCORES, [0.3, 0.5])
    _, values = _updates_then_values(fn, tp)
    assert values[0].tolist() == [0.0, 2.0] and values[1].tolist() == [4.0, 2.0]
    assert [v.name for v in tf.local_variables()] == ["false_negatives/false_negatives:0",
                                                      "true_positives/true_positives:0"]


def test_mean_per_class_accuracy():
    m = tf.metrics.mean_per_class_accuracy([0, 1, 2, 2, 1], [0, 2, 2, 1, 1], num_classes=3,
                                           weights=[1.0, 1.0, 2.0, 1.0, 1.0])
    updates, values = _updates_then_values(m)
    # class 0: 1/1, class 1: 1/2, class 2: 2/3 (weighted)
    np.testing.assert_allclose(updates[0], [1.0, 0.5, 2 / 3], rtol=1e-6)
    assert values[0] == pytest.approx((1.0 + 0.5 + 2 / 3) / 3)
    assert [v.name for v in tf.local_variables()] == ["mean_accuracy/total:0",
                                                      "mean_accuracy/count:0"]


def test_mean_iou_leaves_absent_classes_out():
    iou = tf.metrics.mean_iou([0, 1, 2, 2, 1], [0, 2, 2, 1, 1], num_classes=4)
    updates, values = _updates_then_values(iou)
    assert updates[0].tolist() == [[1, 0, 0, 0], [0, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 0]]
    # class 0: 1/1; classes 1 and 2: 1 / (2 + 2 - 1); class 3 never occurs
    assert values[0] == pytest.approx((1 + 1 / 3 + 1 / 3) / 3, rel=1e-6)


def test_percentage_below():
    p = tf.metrics.percentage_below([1.0, 5.0, 2.0, 9.0], threshold=3.0)
    assert _updates_then_values(p)[1] == [0.5]
    assert tf.local_variables()[0].name == "percentage_below_threshold/total:0"


def test_sensitivity_at_specificity_and_specificity_at_sensitivity():
    # negatives 0.1, 0.2, 0.6, 0.7; positives 0.35, 0.4, 0.8, 0.9
    s = tf.metrics.sensitivity_at_specificity(LABELS, SCORES, 0.7)
    t = tf.metrics.specificity_at_sensitivity(LABELS, SCORES, 0.5)
    updates, values = _updates_then_values(s, t)
    # specificity 0.75 is closest to 0.7 (thresholds in [0.6, 0.7)): recall 2/4
    # sensitivity 0.5 holds for thresholds in [0.4, 0.8); the last keeps all negatives
    assert updates == pytest.approx([0.5, 1.0]) and values == pytest.approx([0.5, 1.0])
    assert tf.local_variables()[0].name == "sensitivity_at_specificity/true_positives:0"
    w = tf.metrics.specificity_at_sensitivity(LABELS, SCORES, 0.8, weights=WEIGHTS,
                                              num_thresholds=7)
    assert _updates_then_values(w)[1][0] == pytest.approx(0.818182, rel=1e-5)  # as TF 2.21
    with pytest.raises(ValueError, match="range"):
        tf.metrics.sensitivity_at_specificity(LABELS, SCORES, 1.5)

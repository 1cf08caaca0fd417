"""build_parsing_serving_input_receiver_fn: a SavedModel served with serialized Examples."""
import os

import numpy as np

import tensorweave as tf
from estimator_helpers import X_TEST, make_estimator, train_input_fn

export = tf.estimator.export


def _example(row, tags):
    return tf.train.Example(features=tf.train.Features(feature={
        "x": tf.train.Feature(float_list=tf.train.FloatList(value=row.tolist())),
        "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=tags))}
    )).SerializeToString()


def test_receiver_parses_the_examples_placeholder():
    with tf.Graph().as_default():
        fn = export.build_parsing_serving_input_receiver_fn(
            {"x": tf.FixedLenFeature([2], tf.float32), "tags": tf.VarLenFeature(tf.string)},
            default_batch_size=3)
        receiver = fn()
        examples = receiver.receiver_tensors["examples"]
        assert list(receiver.receiver_tensors) == ["examples"]
        assert examples.op.name == "input_example_tensor" and examples.dtype == tf.string
        assert examples.shape.as_list() == [3]
        assert receiver.features["x"].shape.as_list() == [3, 2]
        assert isinstance(receiver.features["tags"], tf.SparseTensor)
        rows = np.float32([[1, 2], [3, 4], [5, 6]])
        with tf.Session() as sess:
            got = sess.run(receiver.features, {examples: [
                _example(r, [b"t"] * i) for i, r in enumerate(rows)]})
        np.testing.assert_array_equal(got["x"], rows)
        assert got["tags"].indices.tolist() == [[1, 0], [2, 0], [2, 1]]


def test_exported_model_serves_serialized_examples(tmp_path):
    est = make_estimator(tmp_path / "model")
    est.train(train_input_fn, max_steps=20)
    spec = {"x": tf.FixedLenFeature([64], tf.float32), "tags": tf.VarLenFeature(tf.string)}
    path = est.export_savedmodel(str(tmp_path / "export"),
                                 export.build_parsing_serving_input_receiver_fn(spec))
    batch = [_example(row, [b"a"] * (i % 3)) for i, row in enumerate(X_TEST[:5])]
    with tf.Graph().as_default(), tf.Session() as sess:
        meta_graph = tf.saved_model.loader.load(sess, ["serve"], os.fsdecode(path))
        sig = meta_graph.signature_def["serving_default"]
        assert set(sig.inputs) == {"examples"}
        served = sess.run({k: v.name for k, v in sig.outputs.items()},
                          {sig.inputs["examples"].name: batch})
    predicted = list(est.predict(
        lambda: tf.data.Dataset.from_tensor_slices({"x": X_TEST[:5]}).batch(5)))
    np.testing.assert_array_equal(served["classes"], [p["classes"] for p in predicted])
    np.testing.assert_allclose(served["probabilities"],
                               [p["probabilities"] for p in predicted], rtol=1e-6)

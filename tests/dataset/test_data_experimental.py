"""tf.data.get_output_types/shapes/classes and the tf.data.experimental transformations
built from Dataset's own (unbatch, enumerate_dataset, Counter, parse_example_dataset)."""
import numpy as np
import pytest

import tensorweave as tf


def _all(ds, limit=100):
    nxt = ds.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        try:
            while len(out) < limit:
                out.append(sess.run(nxt))
        except tf.errors.OutOfRangeError:
            pass
    return out


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()


def test_output_structure_of_datasets_and_iterators_nested_and_sparse():
    ds = tf.data.Dataset.from_tensor_slices(({"x": [[1.0, 2.0]]}, [3]))
    assert tf.data.get_output_types(ds) == ({"x": tf.float32}, tf.int32)
    assert tf.data.get_output_shapes(ds)[0]["x"].as_list() == [2]
    assert tf.data.get_output_classes(ds) == ({"x": tf.Tensor}, tf.Tensor)
    it = ds.make_initializable_iterator()
    for fn in (tf.compat.v1.data.get_output_types, tf.compat.v1.data.get_output_shapes,
               tf.compat.v1.data.get_output_classes):
        assert fn(it) == fn(ds)
    sp = tf.data.Dataset.from_tensor_slices([[1.0, 0.0]]).map(
        lambda x: tf.SparseTensor(indices=[[0, 1]], values=[x[0]], dense_shape=[2, 3]))
    assert tf.data.get_output_classes(sp) is tf.SparseTensor
    assert tf.data.get_output_shapes(sp).as_list() == [None, None]


def test_output_structure_of_something_else_is_a_type_error_naming_it():
    with pytest.raises(TypeError, match=r"get_output_types needs a tf.data.Dataset.*list"):
        tf.data.get_output_types([1, 2])


def test_unbatch_splits_every_component_along_its_first_dimension():
    ds = tf.data.Dataset.from_tensors(([[1, 2], [3, 4]], ["a", "b"]))
    got = _all(ds.apply(tf.data.experimental.unbatch()))
    assert [(list(x), s) for x, s in got] == [([1, 2], b"a"), ([3, 4], b"b")]
    single = tf.data.Dataset.range(5).batch(2).apply(tf.data.experimental.unbatch())
    assert [int(v) for v in _all(single)] == [0, 1, 2, 3, 4]


def test_enumerate_dataset_and_counter():
    ds = tf.data.Dataset.from_tensor_slices(["a", "b"])
    got = _all(ds.apply(tf.data.experimental.enumerate_dataset(start=10)))
    assert [(int(i), s) for i, s in got] == [(10, b"a"), (11, b"b")]
    down = tf.data.experimental.Counter(start=5, step=-2, dtype=tf.float32).take(3)
    assert tf.data.get_output_types(down) == tf.float32
    assert [float(v) for v in _all(down)] == [5.0, 3.0, 1.0]
    assert len(_all(tf.data.experimental.Counter(), limit=50)) == 50  # endless
    with pytest.raises(ValueError, match="step=0"):
        tf.data.experimental.Counter(step=0)


def test_parse_example_dataset_parses_batches_of_serialized_examples():
    def example(v):
        return tf.train.Example(features=tf.train.Features(feature={
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=v))})).SerializeToString()
    ds = tf.data.Dataset.from_tensor_slices([example([1.0, 2.0]), example([3.0, 4.0]),
                                             example([5.0, 6.0])]).batch(2)
    parsed = ds.apply(tf.data.experimental.parse_example_dataset(
        {"x": tf.FixedLenFeature([2], tf.float32)}))
    got = _all(parsed)
    np.testing.assert_array_equal(got[0]["x"], [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(got[1]["x"], [[5.0, 6.0]])


def _write_examples(path, rows):
    with tf.python_io.TFRecordWriter(str(path)) as w:
        for x, y in rows:
            w.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x, -x])),
                "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))})
            ).SerializeToString())


def test_make_batched_features_dataset_reads_parses_batches_and_splits_labels(tmp_path):
    _write_examples(tmp_path / "a.tfrecord", [(1.0, 1), (2.0, 2), (3.0, 3)])
    _write_examples(tmp_path / "b.tfrecord", [(4.0, 4), (5.0, 5)])
    feats = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.int64)}
    ds = tf.data.experimental.make_batched_features_dataset(
        str(tmp_path / "*.tfrecord"), 2, feats, label_key="y", num_epochs=1, shuffle=False)
    batches = _all(ds)
    labels = [int(v) for _, ys in batches for v in ys]
    assert sorted(labels) == [1, 2, 3, 4, 5] and [len(ys) for _, ys in batches] == [2, 2, 1]
    for x, ys in batches:
        assert set(x) == {"x"}
        np.testing.assert_array_equal(x["x"][:, 0], ys.astype(np.float32))
    # Repeating forever: every batch full, so the batch size is static.
    endless = tf.data.experimental.make_batched_features_dataset(
        str(tmp_path / "*.tfrecord"), 4, feats, shuffle_seed=1)
    assert tf.data.get_output_shapes(endless)["x"].as_list() == [4, 2]
    assert len(_all(endless, limit=6)) == 6


def test_make_batched_features_dataset_refuses_queue_readers_and_unknown_labels(tmp_path):
    feats = {"x": tf.FixedLenFeature([2], tf.float32)}
    with pytest.raises(TypeError, match="TFRecordReader is a tf.ReaderBase"):
        tf.data.experimental.make_batched_features_dataset("f", 1, feats,
                                                           reader=tf.TFRecordReader)
    with pytest.raises(ValueError, match=r"label_key.*'y'.*\['x'\]"):
        tf.data.experimental.make_batched_features_dataset("f", 1, feats, label_key="y")

"""Dataset.flat_map / interleave / shard / padded_batch / list_files / apply and the
tf.data.experimental (tf.contrib.data) transformations, as TF1 input pipelines chain
them. Expected values were printed by real TF 2.21 (compat.v1) for the same pipelines."""
import os

import numpy as np
import pytest

import tensorweave as tf


def drain(ds):
    nxt = tf.data.make_one_shot_iterator(ds).get_next()
    out = []
    with tf.Session() as sess:
        try:
            while True:
                v = sess.run(nxt)
                out.append(v.tolist() if hasattr(v, "tolist") else v)
        except tf.errors.OutOfRangeError:
            pass
    return out


@pytest.fixture
def record_files(tmp_path):
    for k in range(3):  # file k holds k + 3 records "k-j"
        with tf.io.TFRecordWriter(str(tmp_path / f"f{k}.rec")) as w:
            for j in range(k + 3):
                w.write(b"%d-%d" % (k, j))
    return str(tmp_path / "*.rec")


def test_interleave_and_parallel_interleave_follow_tf_order(record_files):
    files = tf.data.Dataset.list_files(record_files, shuffle=False)
    assert drain(files.interleave(tf.data.TFRecordDataset, cycle_length=2, block_length=2)) == [
        b"0-0", b"0-1", b"1-0", b"1-1", b"0-2", b"1-2", b"1-3", b"2-0", b"2-1", b"2-2",
        b"2-3", b"2-4"]
    want = [b"0-0", b"1-0", b"2-0", b"0-1", b"1-1", b"2-1", b"0-2", b"1-2", b"2-2", b"1-3",
            b"2-3", b"2-4"]
    assert drain(files.apply(tf.data.experimental.parallel_interleave(
        tf.data.TFRecordDataset, cycle_length=3))) == want
    assert drain(files.apply(tf.contrib.data.parallel_interleave(
        tf.data.TFRecordDataset, cycle_length=3, sloppy=True))) == want
    # flat_map: one file after the other; the nested map captures the file name
    lengths = drain(files.flat_map(lambda f: tf.data.TFRecordDataset(f).map(
        lambda r: tf.strings.length(r) * 1000 + tf.strings.length(f))))
    assert len(lengths) == 12 and set(lengths) == {3000 + len(record_files) - 5 + 6}


def test_nested_datasets_built_from_element_tensors():
    # counts and ranges computed from the element: inputs of the nested pipeline
    assert drain(tf.data.Dataset.range(1, 4).flat_map(
        lambda x: tf.data.Dataset.range(x).map(lambda y: y + 10 * x))) == [
        10, 20, 21, 30, 31, 32]
    assert drain(tf.data.Dataset.range(3).interleave(
        lambda x: tf.data.Dataset.from_tensors(x).repeat(x + 2), cycle_length=2,
        block_length=3)) == [0, 0, 1, 1, 1, 2, 2, 2, 2]
    assert drain(tf.data.Dataset.range(4).flat_map(
        lambda x: tf.data.Dataset.range(10).skip(x).take(2))) == [0, 1, 1, 2, 2, 3, 3, 4]
    with pytest.raises(TypeError, match="must return a Dataset"):
        tf.data.Dataset.range(3).flat_map(lambda x: x * 2)


def test_shard_gives_each_worker_its_share():
    assert drain(tf.data.Dataset.range(10).shard(3, 1)) == [1, 4, 7]
    shares = [drain(tf.data.Dataset.range(10).shard(2, i)) for i in range(2)]
    assert shares == [[0, 2, 4, 6, 8], [1, 3, 5, 7, 9]]
    with pytest.raises(ValueError, match=r"index must be in \[0, num_shards=2\), got 2"):
        tf.data.Dataset.range(10).shard(2, 2)


def test_padded_batch_pads_to_longest_or_given_shape():
    ragged = tf.data.Dataset.range(7).map(lambda x: tf.fill([tf.cast(x, tf.int32) % 4], x))
    assert drain(ragged.padded_batch(3, padded_shapes=[None])) == [
        [[0, 0], [1, 0], [2, 2]], [[3, 3, 3], [0, 0, 0], [5, 0, 0]], [[6, 6]]]
    pairs = ragged.map(lambda v: (v, tf.as_string(v[:1]))).padded_batch(
        2, padded_shapes=([5], [None]),
        padding_values=(tf.constant(-1, tf.int64), tf.constant("pad")))
    got = drain(pairs)
    np.testing.assert_array_equal(got[1][0], [[2, 2, -1, -1, -1], [3, 3, 3, -1, -1]])
    assert got[0][1].tolist() == [[b"pad"], [b"1"]] and len(got) == 4
    assert pairs.output_shapes[0].as_list() == [None, 5]
    dropped = ragged.padded_batch(3, padded_shapes=[-1], drop_remainder=True)
    assert dropped.output_shapes.as_list() == [3, None] and len(drain(dropped)) == 2
    too_small = ragged.padded_batch(2, padded_shapes=[2])
    with pytest.raises(tf.errors.InvalidArgumentError, match="larger than its padded shape"):
        drain(too_small)
    with pytest.raises(ValueError, match="one entry per component"):
        ragged.map(lambda v: (v, v)).padded_batch(2, padded_shapes=[None])


def test_fused_transformations_match_their_parts():
    assert drain(tf.data.Dataset.range(5).apply(tf.data.experimental.map_and_batch(
        lambda x: x * 2, 2, drop_remainder=True))) == [[0, 2], [4, 6]]
    assert drain(tf.data.Dataset.range(5).apply(tf.contrib.data.map_and_batch(
        lambda x: x * 2, 2))) == [[0, 2], [4, 6], [8]]
    a = drain(tf.data.Dataset.range(6).apply(
        tf.data.experimental.shuffle_and_repeat(6, count=2, seed=7)))
    b = drain(tf.data.Dataset.range(6).shuffle(6, seed=7).repeat(2))
    assert a == b and sorted(a) == sorted(list(range(6)) * 2) and a[:6] != a[6:]
    with pytest.raises(TypeError, match="must return a Dataset"):
        tf.data.Dataset.range(3).apply(lambda ds: 3)


def test_list_files_sorted_shuffled_and_missing(record_files, tmp_path):
    names = [os.path.basename(f.decode()) for f in drain(
        tf.data.Dataset.list_files(record_files, shuffle=False))]
    assert names == ["f0.rec", "f1.rec", "f2.rec"]
    first = drain(tf.data.Dataset.list_files(record_files, seed=3).repeat(4))
    again = drain(tf.data.Dataset.list_files(record_files, seed=3).repeat(4))
    assert first == again and len({tuple(first[i:i + 3]) for i in (0, 3, 6, 9)}) > 1
    missing = str(tmp_path / "nope-*.rec")
    with pytest.raises(tf.errors.InvalidArgumentError, match="no files match.*nope-"):
        drain(tf.data.Dataset.list_files(missing))


def test_tf1_sharded_tfrecord_pipeline(record_files):
    """The input_fn many TF1 distributed trainers write."""
    def parse(record):
        return tf.strings.length(record)
    files = tf.data.Dataset.list_files(record_files, shuffle=False)
    ds = files.shard(2, 0).apply(tf.contrib.data.parallel_interleave(
        tf.data.TFRecordDataset, cycle_length=2))
    ds = ds.apply(tf.data.experimental.map_and_batch(parse, 4)).prefetch(1)
    assert drain(ds) == [[3, 3, 3, 3], [3, 3, 3, 3]]  # files 0 and 2: 3 + 5 records

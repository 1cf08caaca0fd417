"""SparseTensors through the TF1 batchers: the SparseTensorsMap ops that park them
while their handles travel through a queue, their static shapes after batching, and a
TF1 program's pipeline (string_input_producer -> TFRecordReader ->
parse_single_example with a VarLenFeature -> shuffle_batch) under
MonitoredTrainingSession.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.readers.readers import TFRecordReader
from tensorweave.ops.sparse.sparse_map_ops import (
    add_many_sparse_to_tensors_map, add_sparse_to_tensors_map,
    take_many_sparse_from_tensors_map)

from data_helpers import run_queue_runners

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_map_ops_store_rows_and_take_them_back_concatenated():
    batch = tf.SparseTensor(indices=[[0, 1], [2, 0], [2, 3]], values=[7, 8, 9],
                            dense_shape=[3, 5])
    handles = add_many_sparse_to_tensors_map(batch)
    # Rows 2, 0 and the empty row 1, in that order.
    again = take_many_sparse_from_tensors_map(handles.op, tf.gather(handles, [2, 0, 1]),
                                              rank=2)
    assert again.indices.shape.as_list() == [None, 2]
    assert again.dense_shape.shape.as_list() == [2]
    with tf.Session() as sess:
        got = sess.run(again)
        np.testing.assert_array_equal(got.indices, [[0, 0], [0, 3], [1, 1]])
        np.testing.assert_array_equal(got.values, [8, 9, 7])
        np.testing.assert_array_equal(got.dense_shape, [3, 5])


def test_taken_handles_are_gone_and_single_entries_take_the_largest_shape():
    a = add_sparse_to_tensors_map(tf.SparseTensor([[1]], [1.5], [2]))
    b = add_sparse_to_tensors_map(tf.SparseTensor([[4]], [2.5], [6]), shared_name=a.op.name)
    both = take_many_sparse_from_tensors_map(a.op, tf.stack([a, b]))
    with tf.Session() as sess:
        ha, hb = sess.run([a, b])
        got = sess.run(both, feed_dict={a: ha, b: hb})
        np.testing.assert_array_equal(got.indices, [[0, 1], [1, 4]])
        np.testing.assert_array_equal(got.dense_shape, [2, 6])
        with pytest.raises(tf.errors.InvalidArgumentError, match="Unable to find SparseTensor"):
            sess.run(both, feed_dict={a: ha, b: hb})


def test_map_op_errors_name_the_problem():
    with pytest.raises(TypeError, match="sparse_map_op must be one of"):
        take_many_sparse_from_tensors_map(tf.no_op(), tf.constant([0], tf.int64))
    flat = add_many_sparse_to_tensors_map(tf.SparseTensor([[0]], [1.0], [3]))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Rank of input SparseTensor"):
            sess.run(flat)


def test_batched_sparse_rows_keep_their_entries_and_the_widest_shape():
    step = tf.Variable(0, dtype=tf.int64)
    i = step.count_up_to(6)
    # Example i has entries at 0 and at i, in a vector of length i + 1.
    sp = tf.SparseTensor(indices=tf.reshape(tf.stack([tf.zeros_like(i), i]), [2, 1]),
                         values=tf.cast(tf.stack([i, 10 * i]), tf.float32),
                         dense_shape=tf.reshape(i + 1, [1]))
    ids, batched = tf.train.batch([i, sp], batch_size=3)
    assert batched.indices.shape.as_list() == [None, 2]
    assert batched.dense_shape.shape.as_list() == [2]
    out = run_queue_runners([ids, batched])
    assert len(out) == 2
    for got_ids, got in out:
        rows = np.repeat(np.arange(3), 2)
        np.testing.assert_array_equal(got.indices[:, 0], rows)
        np.testing.assert_array_equal(got.indices[:, 1], np.stack([0 * got_ids, got_ids], 1)
                                      .reshape(-1))
        np.testing.assert_array_equal(got.values, np.stack([got_ids, 10 * got_ids], 1)
                                      .reshape(-1))
        np.testing.assert_array_equal(got.dense_shape, [3, got_ids.max() + 1])


@pytest.mark.parametrize("enqueue_many", [False, True])
def test_static_rank_of_a_batched_sparse_tensor(enqueue_many):
    known = tf.SparseTensor([[0, 0]], [1.0], [1, 4])
    unknown = tf.SparseTensor(tf.placeholder(tf.int64), tf.placeholder(tf.float32),
                              tf.placeholder(tf.int64))
    a, b = tf.train.batch([known, unknown], batch_size=2, enqueue_many=enqueue_many)
    want = 2 if enqueue_many else 3
    assert a.dense_shape.shape.as_list() == [want]
    assert a.indices.shape.as_list() == [None, want]
    assert b.dense_shape.shape.num_elements() is None


def test_batch_join_reads_every_list_back_from_one_map():
    step = tf.Variable(0, dtype=tf.int64)
    i = step.count_up_to(8)
    lists = [[i, tf.SparseTensor([[0]], tf.reshape(tf.cast(i, tf.float32), [1]), [1]), "a"],
             [i + 100, tf.SparseTensor([[0]], tf.constant([-1.0]), [1]), "b"]]
    ids, sp, src = tf.train.batch_join(lists, batch_size=4)
    seen = []
    for got_ids, got_sp, got_src in run_queue_runners([ids, sp, src], steps=4):
        for k in range(4):
            want = float(got_ids[k]) if got_src[k] == b"a" else -1.0
            assert got_sp.values[k] == want
        seen += [int(x) for x, s in zip(got_ids, got_src) if s == b"a"]
    assert seen == sorted(seen)  # one thread per list keeps each list's order


def test_batch_join_needs_sparse_tensors_in_the_same_places():
    sp = tf.SparseTensor([[0]], [1.0], [1])
    with pytest.raises(ValueError, match="Inconsistent SparseTensors"):
        tf.train.batch_join([[sp, tf.constant(1.0)], [tf.constant(1.0), sp]], batch_size=2)


def _write_examples(tmp_path, n_files=2, per_file=5):
    files, tags_by_id = [], {}
    for f in range(n_files):
        path = str(tmp_path / f"part-{f}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for j in range(per_file):
                ex_id = 10 * f + j
                tags = list(range(ex_id % 4))  # 0 to 3 tags per example
                tags_by_id[ex_id] = tags
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[ex_id])),
                    "tags": tf.train.Feature(int64_list=tf.train.Int64List(value=tags))}))
                writer.write(ex.SerializeToString())
        files.append(path)
    return files, tags_by_id


def test_tfrecord_varlen_features_through_shuffle_batch_under_monitored_session(tmp_path):
    files, tags_by_id = _write_examples(tmp_path)
    epochs, batch_size = 2, 5
    filenames = tf.train.string_input_producer(files, num_epochs=epochs, seed=3)
    _, serialized = TFRecordReader().read(filenames)
    feats = tf.parse_single_example(serialized, {"id": tf.FixedLenFeature([], tf.int64),
                                                 "tags": tf.VarLenFeature(tf.int64)})
    ids, tags = tf.train.shuffle_batch([feats["id"], feats["tags"]], batch_size,
                                       capacity=20, min_after_dequeue=5, num_threads=2,
                                       allow_smaller_final_batch=True, seed=7)
    dense_tags = tf.sparse_tensor_to_dense(tags, default_value=-1)
    step = tf.train.get_or_create_global_step()
    train = tf.assign_add(step, 1)
    seen = []
    with tf.train.MonitoredTrainingSession() as sess:
        while not sess.should_stop():
            got_ids, got_tags, _ = sess.run([ids, dense_tags, train])
            for ex_id, row in zip(got_ids, got_tags):
                want = tags_by_id[int(ex_id)]
                assert list(row[:len(want)]) == want and all(row[len(want):] == -1)
            seen += [int(x) for x in got_ids]
    assert sorted(seen) == sorted(list(tags_by_id) * epochs)


def test_map_round_trip_of_fed_string_values_and_of_constant_values():
    sp = tf.SparseTensor(tf.placeholder(tf.int64), tf.placeholder(tf.string),
                         tf.placeholder(tf.int64))
    handles = add_many_sparse_to_tensors_map(sp)
    back = take_many_sparse_from_tensors_map(handles.op, handles)
    value = tf.SparseTensorValue(np.array([[0, 1], [0, 2], [3, 0]], np.int64),
                                 np.array([b"x", b"y", b"z"]), np.array([4, 3], np.int64))
    stored = add_sparse_to_tensors_map(value)  # a SparseTensorValue is stored as constants
    with tf.Session() as sess:
        got_handles, got = sess.run([handles, back], {sp: value})
        assert got_handles.shape == (4,)  # rows 1 and 2 are empty but have handles
        np.testing.assert_array_equal(got.indices, value.indices)
        assert list(got.values) == [b"x", b"y", b"z"]
        np.testing.assert_array_equal(got.dense_shape, value.dense_shape)
        assert sess.run(stored).shape == ()


def test_taking_entries_of_different_ranks_or_unknown_handles_fails():
    sp = tf.SparseTensor(tf.placeholder(tf.int64), tf.placeholder(tf.float32),
                         tf.placeholder(tf.int64))
    handle = add_sparse_to_tensors_map(sp)
    with tf.Session() as sess:
        h2 = sess.run(handle, {sp: tf.SparseTensorValue([[0, 0]], [1.0], [2, 2])})
        h3 = sess.run(handle, {sp: tf.SparseTensorValue([[0, 0, 0]], [1.0], [2, 2, 2])})
        mixed = take_many_sparse_from_tensors_map(handle.op, [h2, h3])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"rank prior to SparseTensor\[1\] was: 3 but rank of "
                                 r"SparseTensor\[1\] is: 4"):
            sess.run(mixed)
        unknown = take_many_sparse_from_tensors_map(handle.op, [h2 + 100])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"Unable to find SparseTensor: {h2 + 100}"):
            sess.run(unknown)


def test_sparse_batches_on_a_worker_of_a_cluster(inprocess_cluster):
    # Between-graph replication: the batcher's queue, the SparseTensorsMap ops and the
    # ops reading them back all land on the worker (replica_device_setter keeps
    # non-variable ops there); a variable on the ps counts the examples.
    spec, servers = inprocess_cluster
    worker = servers[("worker", 0)]
    with tf.Graph().as_default():
        with tf.device(tf.train.replica_device_setter(cluster=tf.train.ClusterSpec(spec),
                                                      worker_device="/job:worker/task:0")):
            step = tf.Variable(0, dtype=tf.int64, name="examples")
            i = step.count_up_to(8)
            sp = tf.SparseTensor(tf.reshape(i % 3, [1, 1]),
                                 tf.reshape(tf.cast(i, tf.float32), [1]), [3])
            ids, batched = tf.train.batch([i, sp], batch_size=4)
        assert step.device.startswith("/job:ps")
        take = batched.values.op.inputs[0].op
        assert take.type == "TakeManySparseFromTensorsMap" and "worker" in take.device
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord=coord)
            for _ in range(2):
                got_ids, got = sess.run([ids, batched])
                np.testing.assert_array_equal(got.values, got_ids)
                np.testing.assert_array_equal(got.indices[:, 1], got_ids % 3)
                np.testing.assert_array_equal(got.dense_shape, [4, 3])
            coord.request_stop()
            coord.join(threads, stop_grace_period_secs=10)

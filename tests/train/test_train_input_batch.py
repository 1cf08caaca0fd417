"""The TF1 batchers as a TF1 user sees them: the maybe_* forms keep only the examples
whose keep_input is True (a scalar per example, per enqueued batch, or a vector per
row), the joins (one thread per input list, dicts by sorted key), dynamic_pad with
strings, the queue-fullness summaries TF names, and the errors TF raises at graph
construction.
"""
import numpy as np
import pytest

import tensorweave as tf

from data_helpers import run_queue_runners

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _counter_example(limit):
    i = tf.Variable(0, dtype=tf.int64).count_up_to(limit)
    sp = tf.SparseTensor(tf.zeros([1, 1], tf.int64), tf.reshape(tf.cast(i, tf.float32), [1]),
                         [1])
    return i, sp


@pytest.mark.parametrize("threads", [1, 3])
def test_maybe_batch_keeps_the_examples_whose_flag_is_true(threads):
    i, sp = _counter_example(30)
    keep = tf.equal(tf.mod(i, 3), 0)
    ids, got_sp, word = tf.train.maybe_batch([i, sp, "w"], keep, batch_size=5,
                                             num_threads=threads, allow_smaller_final_batch=True)
    out = run_queue_runners([ids, got_sp, word])
    kept = sorted(int(x) for b in out for x in b[0])
    assert kept == list(range(0, 30, 3))
    for b_ids, b_sp, b_word in out:
        np.testing.assert_array_equal(b_sp.values, b_ids)  # sparse rows stay with their ids
        np.testing.assert_array_equal(b_sp.indices[:, 0], np.arange(len(b_ids)))
        assert list(b_word) == [b"w"] * len(b_ids)


def test_maybe_batch_enqueue_many_with_a_flag_per_row_renumbers_sparse_rows():
    sp = tf.SparseTensor(indices=[[0, 0], [1, 2], [1, 3], [2, 1], [3, 0]],
                         values=[10, 11, 12, 13, 14], dense_shape=[4, 5])
    dense = tf.constant([0, 1, 2, 3])
    out_sp, out_dense = tf.train.maybe_batch([sp, dense], [False, True, False, True],
                                             batch_size=2, enqueue_many=True)
    assert out_sp.dense_shape.shape.as_list() == [2]
    (got_sp, got_dense), = run_queue_runners([out_sp, out_dense], steps=1)
    np.testing.assert_array_equal(got_dense, [1, 3])
    np.testing.assert_array_equal(got_sp.indices, [[0, 2], [0, 3], [1, 0]])
    np.testing.assert_array_equal(got_sp.values, [11, 12, 14])
    np.testing.assert_array_equal(got_sp.dense_shape, [2, 5])


def test_maybe_batch_enqueue_many_with_one_flag_keeps_or_drops_whole_batches():
    i, sp = _counter_example(12)
    first = tf.train.batch([i, sp], batch_size=3)
    keep = tf.equal(tf.mod(first[0][0], 2), 0)  # batches starting at 0 and 6
    ids, got_sp = tf.train.maybe_batch(first, keep, batch_size=3, enqueue_many=True)
    out = run_queue_runners([ids, got_sp])
    assert sorted(int(x) for b in out for x in b[0]) == [0, 1, 2, 6, 7, 8]
    for b_ids, b_sp in out:
        np.testing.assert_array_equal(b_sp.values, b_ids)


@pytest.mark.parametrize("maker", [
    lambda keep, many: tf.train.maybe_batch([tf.zeros([5])], keep, 1, enqueue_many=many),
    lambda keep, many: tf.train.maybe_batch_join([[tf.zeros([5])]], keep, 1,
                                                 enqueue_many=many),
    lambda keep, many: tf.train.maybe_shuffle_batch([tf.zeros([5])], 1, 10, 1, keep,
                                                    enqueue_many=many),
    lambda keep, many: tf.train.maybe_shuffle_batch_join([[tf.zeros([5])]], 1, 10, 1, keep,
                                                         enqueue_many=many)])
def test_keep_input_errors(maker):
    with pytest.raises(ValueError, match="`keep_input` cannot be a vector"):
        maker(tf.constant([True, False]), False)
    with pytest.raises(ValueError, match="must be 0 or 1 dimensions"):
        maker(tf.constant([[True], [False]]), True)
    with pytest.raises(ValueError, match="must be known at graph construction"):
        maker(tf.placeholder(tf.bool), True)


def test_batch_join_keeps_each_lists_order_and_sorts_dict_keys_by_name():
    a = tf.Variable(0, dtype=tf.int64).count_up_to(9)
    b = tf.train.limit_epochs(tf.constant(-1, tf.int64), num_epochs=6)
    out = tf.train.batch_join([{"n": a, "src": "a"}, {"n": b, "src": "b"}], batch_size=3)
    assert sorted(out) == ["n", "src"] and out["n"].shape.as_list() == [3]
    got = run_queue_runners([out["n"], out["src"]])
    from_a = [int(n) for ns, srcs in got for n, s in zip(ns, srcs) if s == b"a"]
    from_b = [int(n) for ns, srcs in got for n, s in zip(ns, srcs) if s == b"b"]
    assert from_a == list(range(9)) and from_b == [-1] * 6


def test_join_errors():
    with pytest.raises(ValueError, match="must have the same keys"):
        tf.train.batch_join([{"a": 1, "b": 2}, {"a": 1, "c": 2}], batch_size=2)
    with pytest.raises(TypeError, match="Expected types to be consistent"):
        tf.train.shuffle_batch_join([[tf.constant(1)], [tf.constant(1.0)]], 2, 10, 2)


def test_dynamic_pad_pads_strings_with_empty_bytes_and_numbers_with_zero():
    n = tf.Variable(0).count_up_to(4)
    words = tf.tile(["w"], tf.reshape(n, [1]))
    nums = tf.tile([7], tf.reshape(n, [1]))
    bw, bn = tf.train.batch([words, nums], batch_size=4, dynamic_pad=True)
    assert bw.shape.as_list() == [4, None]
    (got_w, got_n), = run_queue_runners([bw, bn], steps=1)
    assert got_w.tolist() == [[b"", b"", b""], [b"w", b"", b""], [b"w", b"w", b""],
                              [b"w", b"w", b"w"]]
    np.testing.assert_array_equal(got_n, [[0, 0, 0], [7, 0, 0], [7, 7, 0], [7, 7, 7]])


def test_graph_construction_errors():
    with pytest.raises(ValueError, match="Cannot infer Tensor's rank"):
        tf.train.batch([tf.placeholder(tf.float32)], batch_size=2)
    with pytest.raises(ValueError, match="Cannot infer Tensor's rank"):
        tf.train.batch_join([[tf.placeholder(tf.float32)]], batch_size=2)
    with pytest.raises(ValueError, match="capacity 5 must be bigger than min_after_dequeue 5"):
        tf.train.shuffle_batch([tf.constant(1)], 2, capacity=5, min_after_dequeue=5)
    with pytest.raises(ValueError, match="fully defined shape"):
        tf.train.input_producer(tf.placeholder(tf.float32))
    for empty in ([], (), np.array([], dtype=object)):
        with pytest.raises(ValueError, match="non-null input tensor"):
            tf.train.string_input_producer(empty)


def test_one_component_structures_come_back_as_given():
    single = tf.train.batch([tf.constant([1, 2])], batch_size=4)
    assert isinstance(single, tf.Tensor) and single.shape.as_list() == [4, 2]
    as_dict = tf.train.batch({"c": [12, 12]}, batch_size=8)
    assert list(as_dict) == ["c"] and as_dict["c"].shape.as_list() == [8, 2]


def test_shared_name_reaches_the_queue_op():
    out = tf.train.shuffle_batch_join([[tf.constant(1), "s"]], 2, 10, 2, shared_name="SHQ")
    assert out[0].op.inputs[0].op.get_attr("shared_name") == "SHQ"


def test_queue_fullness_summaries_have_tfs_tags():
    tf.train.batch([tf.constant(1)], batch_size=2, capacity=16)
    tf.train.shuffle_batch([tf.constant(1)], 2, capacity=12, min_after_dequeue=4)
    tf.train.string_input_producer(["a", "b"], capacity=8)
    merged = tf.summary.merge_all()
    with tf.Session() as sess:
        summ = tf.Summary.FromString(sess.run(merged))
    tags = sorted(v.tag for v in summ.value)
    assert tags == ["batch/fraction_of_16_full", "input_producer/fraction_of_8_full",
                    "shuffle_batch/fraction_over_4_of_8_full"]
    assert all(v.simple_value == 0.0 for v in summ.value)  # no queue runner started


def test_string_input_producer_that_is_empty_at_run_time_ends_the_input():
    queue = tf.train.string_input_producer(tf.constant([], tf.string))
    name = queue.dequeue()
    assert queue.name == "input_producer"
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        # The producer's Assert fails its thread, which closes the queue...
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(name)
        # ...and the coordinator hands the failure to whoever joins the threads.
        with pytest.raises(tf.errors.InvalidArgumentError, match="non-null input tensor"):
            coord.join(threads)


def test_several_readers_through_shuffle_batch_join_as_the_reading_data_guide_writes_it(
        tmp_path):
    # One filename queue, one reader per thread, their examples mixed by
    # shuffle_batch_join.
    files = []
    for f in range(3):
        path = str(tmp_path / f"data-{f}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for j in range(4):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[10 * f + j]))}))
                writer.write(ex.SerializeToString())
        files.append(path)
    filenames = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)

    def read_one():
        _, record = tf.TFRecordReader().read(filenames)
        ex_id = tf.parse_single_example(record, {"id": tf.FixedLenFeature([], tf.int64)})["id"]
        return [ex_id, tf.as_string(ex_id)]

    ids, names = tf.train.shuffle_batch_join([read_one() for _ in range(3)], batch_size=4,
                                             capacity=20, min_after_dequeue=2, seed=1)
    got = run_queue_runners([ids, names])
    all_ids = sorted(int(x) for b, _ in got for x in b)
    assert all_ids == sorted(10 * f + j for f in range(3) for j in range(4))
    for b_ids, b_names in got:
        assert [n.decode() for n in b_names] == [str(i) for i in b_ids]


@pytest.mark.parametrize("join", [False, True])
def test_maybe_shuffle_batch_forms_drop_what_keep_input_refuses(join):
    i, sp = _counter_example(40)
    keep = tf.equal(tf.mod(i, 4), 1)
    if join:
        ids, got_sp = tf.train.maybe_shuffle_batch_join(
            [[i, sp], [i + 1000, sp]], 3, capacity=12, min_after_dequeue=3, keep_input=keep,
            allow_smaller_final_batch=True)
    else:
        ids, got_sp = tf.train.maybe_shuffle_batch(
            [i, sp], 3, capacity=12, min_after_dequeue=3, keep_input=keep, num_threads=2,
            allow_smaller_final_batch=True)
    out = run_queue_runners([ids, got_sp])
    kept = [int(x) for b, _ in out for x in b]
    assert kept and all(x % 1000 % 4 == 1 for x in kept)
    if not join:
        assert sorted(kept) == list(range(1, 40, 4))
    for b_ids, b_sp in out:
        np.testing.assert_array_equal(b_sp.values, b_ids % 1000)

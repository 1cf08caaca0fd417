"""DeepRec's pipeline stage: tf.staged and tf.make_prefetch_hook."""
import numpy as np
import pytest

import tensorweave as tf


def _numbers(n, batch=None):
    ds = tf.data.Dataset.range(n)
    if batch:
        ds = ds.batch(batch)
    return tf.data.make_one_shot_iterator(ds).get_next()


def test_staged_values_arrive_in_order_and_end_of_input_stops_the_loop():
    with tf.Graph().as_default():
        x = tf.staged(_numbers(7), capacity=3)
        y = x * 10
        got = []
        with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
            while not sess.should_stop():
                got.append(int(sess.run(y)))
        assert got == [0, 10, 20, 30, 40, 50, 60]


def test_structure_dict_tuple_and_sparse_are_kept_with_static_shapes():
    with tf.Graph().as_default():
        feats = {"a": tf.constant([[1.0, 2.0]]), "b": tf.constant(["x"])}
        sp = tf.SparseTensor(indices=[[0, 1]], values=tf.constant([5], tf.int64),
                             dense_shape=[1, 3])
        out_feats, out_sp = tf.staged((feats, sp), capacity=2, num_threads=2)
        assert set(out_feats) == {"a", "b"}
        assert out_feats["a"].shape.as_list() == [1, 2]
        assert isinstance(out_sp, tf.SparseTensor)
        with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
            a, b, s = sess.run([out_feats["a"], out_feats["b"], out_sp])
        np.testing.assert_array_equal(a, [[1.0, 2.0]])
        assert b.tolist() == [b"x"]
        assert s.indices.tolist() == [[0, 1]] and s.values.tolist() == [5]
        assert s.dense_shape.tolist() == [1, 3]


def test_the_stage_runs_ahead_of_the_step():
    with tf.Graph().as_default():
        counter = tf.Variable(0, dtype=tf.int64, use_resource=False)
        produced = tf.staged(tf.assign_add(counter, 1), capacity=4)
        with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
            first = sess.run(produced)
            for _ in range(200):   # the threads refill the queue while we wait
                if sess.run(counter) >= first + 4:
                    break
            assert sess.run(counter) >= first + 4


def test_a_failing_stage_raises_its_error_in_the_training_loop():
    with tf.Graph().as_default():
        x = tf.placeholder_with_default(tf.constant([1.0, -1.0]), [2])
        checked = tf.debugging.assert_positive(x, message="negative input")
        with tf.control_dependencies([checked]):
            staged = tf.staged(tf.identity(x))
        with pytest.raises(tf.errors.InvalidArgumentError, match="negative input"):
            with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
                for _ in range(50):
                    sess.run(staged)


def test_ignored_exception_types_skip_the_failed_run():
    with tf.Graph().as_default():
        n = _numbers(6)
        bad = tf.debugging.assert_none_equal(n % 3, tf.constant(0, tf.int64),
                                             message="multiple of three")
        with tf.control_dependencies([bad]):
            keep = tf.identity(n)
        staged = tf.staged(keep, ignored_exception_types=(tf.errors.InvalidArgumentError,))
        got = []
        with tf.train.MonitoredTrainingSession(hooks=[tf.make_prefetch_hook()]) as sess:
            while not sess.should_stop():
                got.append(int(sess.run(staged)))
        assert got == [1, 2, 4, 5]


def test_a_monitored_session_without_the_hook_says_what_is_missing():
    with tf.Graph().as_default():
        tf.staged(_numbers(3))
        with pytest.raises(ValueError, match="make_prefetch_hook"):
            tf.train.MonitoredTrainingSession()


def test_a_plain_session_starts_them_as_queue_runners():
    with tf.Graph().as_default():
        x = tf.staged(_numbers(4, batch=2))
        with tf.Session() as sess:
            coord = tf.train.Coordinator()
            threads = tf.train.start_queue_runners(sess, coord, collection="prefetch_runners")
            assert sess.run(x).tolist() == [0, 1]
            assert sess.run(x).tolist() == [2, 3]
            with pytest.raises(tf.errors.OutOfRangeError):
                sess.run(x)
            coord.request_stop()
            coord.join(threads)


def test_refused_arguments_name_themselves():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="feed_generator"):
            tf.staged(tf.constant(1), feed_generator=iter([]))
        with pytest.raises(ValueError, match="num_clients=2"):
            tf.staged(tf.constant(1), num_clients=2)


def test_micro_batch_config_is_refused_and_other_deeprec_options_parse():
    config = tf.ConfigProto()
    opts = config.graph_options.optimizer_options
    opts.do_smart_stage = True
    opts.do_op_fusion = True
    with tf.Graph().as_default():
        with tf.Session(config=config):
            pass
        opts.micro_batch_num = 4
        with pytest.raises(ValueError, match="micro_batch_num=4"):
            tf.Session(config=config)

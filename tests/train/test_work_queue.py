"""DeepRec's WorkQueue (issue 35): slices, epochs, seeded shuffles, the end of the queue,
its local proxies (input_producer, input_dataset), its summary, placement on a ps, and
its checkpoints (what is left, slices in flight included, restored with the model)."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train.work_queue import Work, slice_ranges

WORDS = [b"to", b"be", b"or", b"not", b"to", b"be"]


def _drain(sess, tensor) -> list:
    out = []
    with pytest.raises(tf.errors.OutOfRangeError, match="are taken|closed|End of sequence"):
        while True:
            out.append(sess.run(tensor))
    return out


def _files(tmp_path, n: int, lines: int = 2) -> list[str]:
    paths = []
    for i in range(n):
        p = tmp_path / f"part-{i}.txt"
        p.write_text("".join(f"{i}:{j}\n" for j in range(lines)))
        paths.append(str(p))
    return paths


def _with_runners(sess):
    coord = tf.train.Coordinator()
    return coord, tf.train.start_queue_runners(sess, coord)


def test_take_hands_out_every_epoch_in_order_then_out_of_range():
    with tf.Graph().as_default():
        queue = tf.WorkQueue(WORDS, num_epochs=3, shuffle=False)
        work = queue.take()
        with tf.Session() as sess:
            assert _drain(sess, work) == WORDS * 3
            with pytest.raises(tf.errors.OutOfRangeError, match="work_queue are taken"):
                sess.run(work)   # and it stays at the end
        assert len(queue) == 6 and queue.works == WORDS


def _order(seed, graph_seed=None) -> list:
    with tf.Graph().as_default():
        if graph_seed is not None:
            tf.set_random_seed(graph_seed)
        work = tf.WorkQueue([f"w{i}" for i in range(8)], num_epochs=3, seed=seed).take()
        with tf.Session() as sess:
            return _drain(sess, work)


def test_each_epoch_is_shuffled_on_its_own_and_a_seed_repeats_the_order():
    order = _order(seed=7)
    epochs = [order[i:i + 8] for i in range(0, 24, 8)]
    for epoch in epochs:   # each epoch hands out every work once
        assert sorted(epoch) == sorted(f"w{i}".encode() for i in range(8))
    assert len({tuple(e) for e in epochs}) > 1   # reshuffled per epoch
    assert _order(seed=7) == order and _order(seed=8) != order
    assert _order(None, graph_seed=3) == _order(None, graph_seed=3)   # TF's seed rules


def test_prefix_is_prepended_by_take_and_not_part_of_the_works():
    with tf.Graph().as_default():
        queue = tf.WorkQueue(["?start=0&end=4", "?start=4&end=8"], shuffle=False,
                             prefix="odps://prj/tables/t")
        with tf.Session() as sess:
            assert _drain(sess, queue.take()) == [b"odps://prj/tables/t?start=0&end=4",
                                                  b"odps://prj/tables/t?start=4&end=8"]
        assert queue.works == [b"?start=0&end=4", b"?start=4&end=8"]


def test_num_slices_splits_works_with_known_record_counts_only():
    class Table(Work):
        def count_records(self) -> int:
            return 10

    assert slice_ranges(10, 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert slice_ranges(2, 5) == [(0, 1), (1, 2)]
    with tf.Graph().as_default():
        files = tf.WorkQueue(["hdfs://a", "hdfs://b"], num_slices=5)   # files: as DeepRec
        assert files.works == [b"hdfs://a", b"hdfs://b"]
        tables = tf.WorkQueue([Table(None, "odps://t"), "hdfs://c"], num_slices=3)
        assert tables.works == [b"odps://t?start=0&end=3", b"odps://t?start=3&end=6",
                                b"odps://t?start=6&end=9", b"odps://t?start=9&end=10",
                                b"hdfs://c"]


@pytest.mark.parametrize("kwargs, message", [
    ({"works": []}, "non-empty list of strings"),
    ({"works": "a.txt"}, "non-empty list of strings, got 'a.txt'"),
    ({"works": ["a", 3]}, r"works\[1\] is 3 \(int\)"),
    ({"works": ["a"], "num_epochs": 0}, "num_epochs must be a positive integer, got 0"),
    ({"works": ["a"], "num_slices": -2}, "num_slices must be a positive integer, got -2"),
])
def test_bad_arguments_name_the_offending_value(kwargs, message):
    with tf.Graph().as_default(), pytest.raises(ValueError, match=message):
        tf.WorkQueue(**kwargs)


def test_input_producer_feeds_a_reader_every_line_of_every_work(tmp_path):
    files = _files(tmp_path, 3)
    with tf.Graph().as_default():
        queue = tf.WorkQueue(files, num_epochs=2, shuffle=False)
        _, line = tf.TextLineReader().read(queue.input_producer())
        with tf.Session() as sess:
            coord, threads = _with_runners(sess)
            lines = _drain(sess, line)
            coord.request_stop()
            coord.join(threads)
    assert lines == [f"{i}:{j}".encode() for i in range(3) for j in range(2)] * 2


def test_input_dataset_with_text_line_dataset_reads_the_works(tmp_path):
    files = _files(tmp_path, 4, lines=3)
    with tf.Graph().as_default():
        queue = tf.WorkQueue(files, num_epochs=2, seed=1)
        batch = tf.data.TextLineDataset(queue.input_dataset()).batch(3)
        nxt = batch.make_one_shot_iterator().get_next()
        with tf.train.MonitoredTrainingSession() as sess:   # starts the proxy's runner
            got = []
            while not sess.should_stop():
                got.append(sess.run(nxt).tolist())
    # One batch per file (3 lines each), every file once per epoch, shuffled.
    assert sorted(b[0] for b in got) == sorted([f"{i}:0".encode() for i in range(4)] * 2)
    assert all(b == [b[0][:-1] + bytes([c]) for c in b"012"] for b in got)
    assert [b[0] for b in got][:4] != [f"{i}:0".encode() for i in range(4)] or \
        [b[0] for b in got][4:] != [f"{i}:0".encode() for i in range(4)]


def test_add_summary_reports_the_fraction_of_an_epoch_left():
    with tf.Graph().as_default():
        queue = tf.WorkQueue(["a", "b", "c", "d"], num_epochs=2, shuffle=False)
        work = queue.take()
        queue.add_summary()
        merged = tf.summary.merge_all()
        with tf.Session() as sess:
            sess.run(work)
            summ = tf.Summary.FromString(sess.run(merged))
    (value,) = summ.value
    assert value.tag == "work_queue/fraction_of_4_full"
    assert value.simple_value == pytest.approx(7 / 4)


def test_replica_device_setter_puts_the_queue_on_a_ps_and_its_ops_with_it():
    cluster = {"ps": ["ps0:1", "ps1:1"], "worker": ["w0:1"]}
    with tf.Graph().as_default() as g:
        with tf.device(tf.train.replica_device_setter(cluster=cluster)):
            tf.Variable(1.0)   # the queue takes the next ps of the round robin
            queue = tf.WorkQueue(["a", "b"])
            work = queue.take()
        assert queue.handle.op.device == "/job:ps/task:1"
        assert "WorkQueueHandleOp" in tf.train.replica_device_setter.__globals__[
            "STANDARD_PS_OPS"]
        assert work.op.inputs[0] is queue.handle   # a ref input: placed with the queue
        assert queue in g.get_collection(tf.GraphKeys.SAVEABLE_OBJECTS)


def _queue_graph(works, epochs=2):
    tf.train.get_or_create_global_step()
    queue = tf.WorkQueue(works, num_epochs=epochs, shuffle=False, name="wq")
    return queue, queue.take()


def test_saver_saves_what_is_left_and_a_restore_resumes_the_epoch(tmp_path):
    works = [f"w{i}" for i in range(5)]
    prefix = str(tmp_path / "model.ckpt")
    with tf.Graph().as_default():
        _, work = _queue_graph(works)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            taken = [sess.run(work) for _ in range(3)]   # w0, w1 done; w2 in flight
            saver.save(sess, prefix)
            later = _drain(sess, work)
    reader = tf.train.load_checkpoint(prefix)
    assert reader.get_tensor("wq_works").tolist() == [b"w2", b"w3", b"w4"] + \
        [w.encode() for w in works]
    assert reader.get_tensor("wq_digest") == b",".join(w.encode() for w in works)
    with tf.Graph().as_default():
        _, work = _queue_graph(works)
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, prefix)
            resumed = _drain(sess, work)
    assert taken == [b"w0", b"w1", b"w2"] and resumed == [b"w2"] + later


def test_a_checkpoint_without_the_queue_or_of_other_works_leaves_it_as_made(tmp_path):
    old = str(tmp_path / "old.ckpt")
    with tf.Graph().as_default():   # a model saved before it had a queue
        tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            tf.train.Saver().save(sess, old)
    other = str(tmp_path / "other.ckpt")
    with tf.Graph().as_default():
        _, work = _queue_graph(["x", "y"], epochs=1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(work)
            tf.train.Saver().save(sess, other)
    for prefix in (old, other):
        with tf.Graph().as_default():
            _, work = _queue_graph(["a", "b"], epochs=1)
            with tf.Session() as sess:
                tf.train.Saver().restore(sess, prefix)
                assert _drain(sess, work) == [b"a", b"b"], prefix


def test_monitored_sessions_resume_the_queue_from_their_checkpoints(tmp_path):
    ckpt = str(tmp_path / "ckpt")
    got = []
    for _ in range(2):   # a job that stops after two slices, started again
        with tf.Graph().as_default():
            _, work = _queue_graph(["a", "b", "c"], epochs=1)
            with tf.control_dependencies([work]):   # a step per slice, so the end saves
                step = tf.assign_add(tf.train.get_global_step(), 1)
            with tf.train.MonitoredTrainingSession(checkpoint_dir=ckpt,
                                                   save_checkpoint_secs=None,
                                                   save_checkpoint_steps=1000) as sess:
                got += [sess.run([work, step])[0] for _ in range(2)] if not got else \
                    _drain(sess, work)
    # The first run's final save had "b" in flight: it is trained again, then "c".
    assert got == [b"a", b"b", b"b", b"c"]
    assert os.path.exists(os.path.join(ckpt, "checkpoint"))


def test_python_module_path_serves_deeprec_imports():
    from tensorweave.python.ops.work_queue import WorkQueue
    assert WorkQueue is tf.WorkQueue
    assert np.array_equal(np.array(slice_ranges(4, 2)), [[0, 2], [2, 4]])


def test_the_saveable_protocol_restores_from_given_tensors_too():
    # TF's SaveableObject.restore(restored_tensors, shapes): the digest, then the works.
    with tf.Graph().as_default():
        queue, work = _queue_graph(["a", "b", "c"], epochs=1)
        restore = queue.restore([tf.constant(queue.digest), tf.constant([b"c", b"a"])], None)
        ignored = queue.restore([tf.constant(b"x"), tf.constant([b"x"])], None)
        with tf.Session() as sess:
            sess.run(restore)
            sess.run(ignored)   # another queue's: logged, nothing changes
            assert _drain(sess, work) == [b"c", b"a"]

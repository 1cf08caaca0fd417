"""TF1 readers as resources (kernels/reader_resource.py): a read waits on its filename
queue without holding a thread, threads sharing a reader get each record once, a
closed session or a run deadline ends a blocked read, and a reader placed on a ps task
keeps its place across the sessions of different workers.
"""
import threading
import time

import pytest

import tensorweave as tf
from tensorweave.readers.readers import IdentityReader, TextLineReader

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _queue():
    return tf.FIFOQueue(99, [tf.string], shapes=[[]])


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def test_read_waits_for_the_queue_without_blocking_other_reads(tmp_path):
    """TF's AsyncReaderTest: three readers blocked on empty queues; each one unblocks
    when its queue gets a file."""
    pairs = [(_queue(), TextLineReader()) for _ in range(3)]
    lines = [r.read(q).value for q, r in pairs]
    out: dict[int, bytes] = {}
    with tf.Session() as sess:
        threads = [threading.Thread(target=lambda i=i: out.__setitem__(i, sess.run(lines[i])))
                   for i in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.2)
        assert not out
        for i in reversed(range(3)):
            f = _write(tmp_path / f"deadlock.{i}.txt", b"file-%d" % i)
            sess.run(pairs[i][0].enqueue([f]))
            threads[i].join(10)
            assert out[i] == b"file-%d" % i


def test_threads_sharing_a_reader_get_each_record_once(tmp_path):
    files = [_write(tmp_path / f"{i}.txt", b"".join(b"%d-%d\n" % (i, j) for j in range(50)))
             for i in range(4)]
    reader = TextLineReader()
    q = _queue()
    value = reader.read(q).value
    got: list[bytes] = []
    with tf.Session() as sess:
        sess.run(q.enqueue_many([files]))
        sess.run(q.close())

        def work() -> None:
            try:
                while True:
                    got.append(sess.run(value))
            except tf.errors.OutOfRangeError:
                pass
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert sorted(got) == sorted(b"%d-%d" % (i, j) for i in range(4) for j in range(50))


def test_closing_the_session_ends_a_blocked_read():
    reader = IdentityReader()
    q = _queue()
    key = reader.read(q).key
    sess = tf.Session()
    errs: list[BaseException] = []

    def run() -> None:
        try:
            sess.run(key)
        except tf.errors.OpError as e:
            errs.append(e)
    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.2)
    sess.close()
    t.join(10)
    assert not t.is_alive() and isinstance(errs[0], tf.errors.CancelledError)


def test_run_deadline_ends_a_blocked_read():
    reader = IdentityReader()
    key = reader.read(_queue()).key
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(key, options=tf.RunOptions(timeout_in_ms=200))


def test_reader_on_a_ps_task_is_shared_by_worker_sessions(tmp_path, inprocess_cluster):
    """A reader is a resource on its device: placed on the ps, it keeps its place in the
    file across sessions of different workers; its verbs run on the reader's task."""
    _, servers = inprocess_cluster
    f = _write(tmp_path / "lines.txt", b"a\nb\nc\n")
    with tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(5, [tf.string], shapes=[[]], shared_name="files")
        reader = TextLineReader(name="shared_reader")
        value = reader.read(q).value
    assert reader.reader_ref.op.device == value.op.device == "/job:ps/task:0"
    produced = reader.num_records_produced()  # made outside the scope: follows the reader
    with tf.Session(servers[("worker", 0)].target) as s0, \
            tf.Session(servers[("worker", 1)].target) as s1:
        s0.run(q.enqueue([f]))
        assert s0.run(value) == b"a"
        assert s1.run(value) == b"b"
        assert s0.run(produced) == 2 and s1.run(produced) == 2

"""Big matmuls split over intra-op threads (runtime/intra_op.py)."""
import os
import threading
import time

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.runtime import intra_op


@pytest.fixture
def two_threads(monkeypatch):
    # Fixed splitting, even where an in-process Server of an earlier test turned this
    # process adaptive (distributed/blas_threads.py).
    monkeypatch.setattr(intra_op, "_adaptive", False)
    before = intra_op.intra_op_threads()
    intra_op.set_intra_op_threads(2)
    yield
    intra_op.set_intra_op_threads(before)


def _split_calls():
    return intra_op.STATS["split_calls"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape_a,shape_b,transpose_a", [
    ((128, 784), (784, 512), False),   # rows split (the MLP's forward matmul)
    ((128, 784), (128, 512), True),    # a transposed view: the weight gradient x^T dh
    ((8, 1024), (1024, 1024), False),  # too few rows: columns split
    ((300, 301), (301, 97), False),    # uneven blocks
])
def test_split_matmul_equals_numpy(two_threads, dtype, shape_a, shape_b, transpose_a):
    rng = np.random.default_rng(0)
    a = rng.normal(size=shape_a).astype(dtype)
    b = rng.normal(size=shape_b).astype(dtype)
    a = a.T if transpose_a else a
    before = _split_calls()
    got = intra_op.matmul(a, b)
    assert _split_calls() == before + 1
    assert got.dtype == dtype and got.shape == (a.shape[0], b.shape[1])
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-4)


def test_small_int_and_batched_products_are_numpys_own(two_threads):
    before = _split_calls()
    small = np.ones((4, 4), np.float32)
    assert np.array_equal(intra_op.matmul(small, small), small @ small)
    ints = np.arange(512 * 512).reshape(512, 512) % 7
    assert np.array_equal(intra_op.matmul(ints, ints), ints @ ints)
    batched = np.ones((2, 256, 256), np.float32)
    assert np.array_equal(intra_op.matmul(batched, batched), batched @ batched)
    assert _split_calls() == before


def test_one_thread_never_splits(monkeypatch):
    monkeypatch.setattr(intra_op, "_adaptive", False)
    assert intra_op.intra_op_threads() >= 1
    before_threads = intra_op.intra_op_threads()
    intra_op.set_intra_op_threads(1)
    try:
        before = _split_calls()
        a = np.ones((512, 512), np.float32)
        intra_op.matmul(a, a)
        assert _split_calls() == before
    finally:
        intra_op.set_intra_op_threads(before_threads)
    with pytest.raises(ValueError, match="intra-op threads must be >= 1, got 0"):
        intra_op.set_intra_op_threads(0)


def test_a_helper_part_error_reaches_the_caller(two_threads):
    ran = []

    def fails():
        raise RuntimeError("part 2 failed")

    with pytest.raises(RuntimeError, match="part 2 failed"):
        intra_op.run_parallel([lambda: ran.append(1), fails])
    assert ran == [1]
    intra_op.run_parallel([lambda: ran.append(2), lambda: ran.append(3)])  # helpers still serve
    assert sorted(ran) == [1, 2, 3]


def test_concurrent_callers_share_the_helpers(two_threads):
    rng = np.random.default_rng(1)
    mats = [rng.normal(size=(256, 512)).astype(np.float32) for _ in range(4)]
    w = rng.normal(size=(512, 256)).astype(np.float32)
    results = [None] * 4

    def run(i):
        for _ in range(5):
            results[i] = intra_op.matmul(mats[i], w)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for m, r in zip(mats, results):
        np.testing.assert_allclose(r, m @ w, rtol=1e-5, atol=1e-4)


def test_matmul_op_and_its_gradient_split_with_the_same_values(two_threads):
    rng = np.random.default_rng(2)
    xv = rng.normal(size=(128, 784)).astype(np.float32)
    wv = rng.normal(size=(784, 256)).astype(np.float32)
    with tf.Graph().as_default():
        x = tf.constant(xv)
        w = tf.constant(wv)
        y = tf.matmul(x, w)
        gw = tf.gradients(tf.reduce_sum(y * y), w)[0]
        with tf.Session() as sess:
            before = _split_calls()
            yv, gwv = sess.run([y, gw])
            assert _split_calls() >= before + 2   # forward and x^T @ dy
    np.testing.assert_allclose(yv, xv @ wv, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(gwv, xv.T @ (2 * (xv @ wv)), rtol=1e-4, atol=1e-2)


def test_a_forked_child_starts_its_own_helpers(two_threads):
    rng = np.random.default_rng(3)
    a = rng.normal(size=(256, 512)).astype(np.float32)
    b = rng.normal(size=(512, 256)).astype(np.float32)
    intra_op.matmul(a, b)
    pid = os.fork()
    if pid == 0:   # without new helpers the split would wait forever
        ok = np.allclose(intra_op.matmul(a, b), a @ b, rtol=1e-5, atol=1e-4)
        os._exit(0 if ok else 1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    pytest.fail("the forked child's split matmul did not finish in 60 s")


def test_local_session_config_intra_op_threads_splits_big_matmuls(monkeypatch):
    """ConfigProto(intra_op_parallelism_threads=N) on a local session, as TF1 CPU jobs
    set it: big matmuls split over N threads of ours, OpenBLAS on one."""
    blas_to = []
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: blas_to.append(n) or True)
    monkeypatch.setattr(intra_op, "_adaptive", False)   # restored after the test
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before_threads = intra_op.intra_op_threads()
    rng = np.random.default_rng(4)
    xv = rng.normal(size=(256, 512)).astype(np.float32)
    try:
        with tf.Graph().as_default():
            y = tf.matmul(tf.constant(xv), tf.constant(xv.T))
            with tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=2)) as sess:
                assert intra_op.intra_op_threads() == 2 and blas_to == [1]
                before = _split_calls()
                np.testing.assert_allclose(sess.run(y), xv @ xv.T, rtol=1e-4, atol=1e-3)
                assert _split_calls() == before + 1
            intra_op.set_intra_op_threads(before_threads)
            with tf.Session() as sess:   # not set: nothing changes
                sess.run(y)
                assert intra_op.intra_op_threads() == before_threads
    finally:
        intra_op.set_intra_op_threads(before_threads)

"""Who shares a machine's cores for BLAS (distributed/blas_threads.py)."""
import os
import threading
import types

import pytest

from tensorweave.distributed import blas_threads
from tensorweave.distributed.blas_threads import limit_for_shared_machine, tasks_sharing_blas


@pytest.mark.parametrize("local_jobs,job,expected", [
    (["ps", "worker"], "worker", 1),            # the ps waits while the worker computes
    (["ps", "worker"], "ps", 2),
    (["ps", "worker", "worker"], "worker", 2),  # two workers compute at once
    (["ps", "ps", "worker", "worker"], "worker", 2),
    (["ps", "chief", "worker"], "chief", 2),
    (["worker"], "worker", 1),
])
def test_ps_tasks_do_not_count_for_a_computing_task(local_jobs, job, expected):
    assert tasks_sharing_blas(local_jobs, job) == expected


def test_shared_machine_splits_matmuls_over_cores_per_computing_task(monkeypatch):
    """Cores / sharing tasks become intra-op threads; config wins; the one computing
    task of its machine chooses between OpenBLAS's threads and ours as it goes."""
    own, adaptive = [], []
    monkeypatch.setattr(blas_threads, "use_own_threads", lambda n: own.append(n) or True)
    monkeypatch.setattr(blas_threads, "use_adaptive", lambda n: adaptive.append(n) or True)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert limit_for_shared_machine(1) == 8 and adaptive == [8]   # the one computing task
    assert limit_for_shared_machine(2) == 4
    assert limit_for_shared_machine(16) == 1             # never below one thread
    assert limit_for_shared_machine(2, intra_op_threads=3) == 3
    assert own == [4, 1, 3]
    monkeypatch.setattr(blas_threads, "use_own_threads", lambda n: False)
    assert limit_for_shared_machine(2) is None           # environment or not OpenBLAS


def test_own_threads_put_openblas_on_one_thread_unless_the_environment_says(monkeypatch):
    from tensorweave.runtime import intra_op
    blas_to, intra_to = [], []
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: blas_to.append(n) or True)
    monkeypatch.setattr(intra_op, "set_intra_op_threads", intra_to.append)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert intra_op.use_own_threads(2) is True
    assert (blas_to, intra_to) == ([1], [2])
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.setenv(var, "5")
        assert intra_op.use_own_threads(2) is False
        monkeypatch.delenv(var)
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: False)   # not OpenBLAS
    assert intra_op.use_own_threads(2) is False
    assert intra_to == [2]


def test_openblas_of_this_numpy_is_found():
    from tensorweave.runtime import intra_op
    assert intra_op._openblas_libraries(), "NumPy's wheels link OpenBLAS"


@pytest.mark.transports()
def test_server_config_intra_op_threads_the_tf1_way(monkeypatch):
    """`tf.train.Server(cluster, ..., config=tf.ConfigProto(intra_op_parallelism_threads=N))`,
    as TF1 trainers write it, sizes the task's matmul threads even for a lone worker."""
    import tensorweave as tf
    from tensorweave.distributed.topology import free_ports
    from tensorweave.runtime import intra_op
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: True)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = intra_op.intra_op_threads()
    ports = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ports[0]}"],
                                    "worker": [f"localhost:{ports[1]}"]})
    config = tf.ConfigProto(intra_op_parallelism_threads=3, inter_op_parallelism_threads=2)
    server = tf.train.Server(cluster, job_name="worker", task_index=0, config=config)
    try:
        assert server.blas_threads == 3 and intra_op.intra_op_threads() == 3
    finally:
        server.stop()
        intra_op.set_intra_op_threads(before)


@pytest.mark.slow
def test_adaptive_matmuls_follow_the_faster_way_as_the_load_changes(monkeypatch):
    """Per shape, the way timed faster lately runs; now and then the other one is
    timed again (every 15th call, times how much worse it was), so when the load
    changes the choice follows at the next try."""
    import numpy as np

    from tensorweave.runtime import intra_op
    clock = [0.0]
    cost = {"openblas": 10.0, "own": 1.0}          # a loaded machine: OpenBLAS collapses
    ran, blas_to = [], []

    me = threading.get_ident()

    def way(name, real):
        def run(a, b, n):
            if threading.get_ident() == me:  # not a matmul of another test's servers
                ran.append(name)
                clock[0] += cost[name]
            return real(a, b, n)
        return run
    # intra_op's clock only: this process's other threads keep the real one.
    monkeypatch.setattr(intra_op, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    monkeypatch.setattr(intra_op, "_blas_way", way("openblas", intra_op._blas_way))
    monkeypatch.setattr(intra_op, "_split", way("own", intra_op._split))
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: blas_to.append(n) or True)
    monkeypatch.setattr(intra_op, "_costs", {})
    monkeypatch.setattr(intra_op, "_adaptive", False)   # restored after the test
    # What an earlier test's session left OpenBLAS at (it skips setting the same count
    # again): unknown here, so each way's first call sets it.
    monkeypatch.setattr(intra_op, "_blas_now", 0)
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = intra_op.intra_op_threads()
    try:
        assert intra_op.use_adaptive(2)
        a, b = np.ones((256, 128), np.float32), np.ones((128, 256), np.float32)
        for _ in range(160):
            np.testing.assert_array_equal(intra_op.matmul(a, b), a @ b)
        assert ran[:2] == ["openblas", "own"]               # each timed once, then...
        # ...OpenBLAS tried again at call 15 only: 10x worse, next try at 15 + 150.
        assert [i + 1 for i, w in enumerate(ran) if w == "openblas"] == [1, 15]
        assert intra_op.adaptive_choices()[(256, 128, 256)] == "own"
        assert blas_to[0] == 2 and 1 in blas_to             # OpenBLAS on 1 thread for ours
        cost.update(openblas=1.0, own=3.0)                  # the other jobs ended
        for _ in range(40):                                 # calls 161-200
            intra_op.matmul(a, b)
        assert ran[164] == "openblas"                       # the try at call 165...
        assert ran[165:] == ["openblas"] * 35               # ...and it stays
        assert intra_op.adaptive_choices()[(256, 128, 256)] == "openblas"
    finally:
        intra_op.set_intra_op_threads(before)


def test_a_ps_splits_dense_updates_over_the_cores_its_ps_tasks_share(monkeypatch):
    """Workers wait for a ps's updates (one worker, or sync), so a ps uses the cores
    of its machine for them, shared among its ps tasks only; the config wins."""
    set_to = []
    monkeypatch.setattr(blas_threads, "set_update_threads", set_to.append)
    monkeypatch.setattr(blas_threads.os, "cpu_count", lambda: 8)
    assert blas_threads.ps_update_threads(["ps", "worker"], "ps") == 8
    assert blas_threads.ps_update_threads(["ps", "ps", "worker", "worker"], "ps") == 4
    assert blas_threads.ps_update_threads(["ps", "ps", "worker"], "ps", 3) == 3
    assert blas_threads.ps_update_threads(["ps", "worker"], "worker") is None
    assert set_to == [8, 4, 3]


def test_update_threads_default_to_the_matmul_threads(monkeypatch):
    from tensorweave.runtime import intra_op
    monkeypatch.setattr(intra_op, "_threads", 3)
    monkeypatch.setattr(intra_op, "_update_threads", 0)
    assert intra_op.update_threads() == 3
    with pytest.raises(ValueError, match="update threads must be >= 1, got 0"):
        intra_op.set_update_threads(0)


@pytest.mark.transports()
def test_a_ps_server_sizes_its_update_threads_the_tf1_way(monkeypatch):
    """TF1 trainers start a ps as `tf.train.Server(cluster, job_name="ps", ...)`,
    often with `config=tf.ConfigProto(intra_op_parallelism_threads=N)`: without one
    the ps splits big updates over its machine's cores, with one it uses N."""
    import tensorweave as tf
    from tensorweave.distributed.topology import free_ports
    from tensorweave.runtime import intra_op
    monkeypatch.setattr(intra_op, "set_blas_threads", lambda n: True)
    monkeypatch.setattr(intra_op, "_update_threads", 0)   # restored after the test
    monkeypatch.setattr(blas_threads.os, "cpu_count", lambda: 4)
    ports = free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ports[0]}"],
                                    "worker": [f"localhost:{ports[1]}"]})
    before = intra_op.intra_op_threads()
    for config, expected in [(None, 4), (tf.ConfigProto(intra_op_parallelism_threads=1), 1)]:
        server = tf.train.Server(cluster, job_name="ps", task_index=0, config=config)
        try:
            assert intra_op.update_threads() == expected
        finally:
            server.stop()
            intra_op.set_intra_op_threads(before)

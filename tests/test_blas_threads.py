"""Who shares a machine's cores for BLAS (distributed/blas_threads.py)."""
import os

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
    task of its machine keeps OpenBLAS's own threads."""
    own = []
    monkeypatch.setattr(blas_threads, "use_own_threads", lambda n: own.append(n) or True)
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert limit_for_shared_machine(1) is None   # the one computing task: OpenBLAS's own
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

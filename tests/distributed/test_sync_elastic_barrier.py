"""The sync barrier follows the replicas still training (issue 35, beyond TF 1.x).

A SyncReplicasOptimizer step aggregates max(floor, min(num_required, live)) gradients,
live = tokens_per_step minus the replicas that finished or are absent from an elastic
job, num_required = replicas_to_aggregate capped by the tokens the chief issued for the
step (kernels/replica_roster.py). With nothing changing it is TF's replicas_to_aggregate.
The whole job (3 workers, one killed, the job trains on) is
tests/launch/test_launch_elastic_sync.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.membership import Members, write_members
from tensorweave.framework import dtypes
from tensorweave.kernels.accumulator_resource import DenseAccumulator
from tensorweave.kernels.replica_roster import ReplicaRoster
from tensorweave.ops.data_flow.accumulator_ops import FLOOR_ATTR, TOKENS_ATTR
from tensorweave.runtime.resource_mgr import ResourceMgr
from tensorweave.runtime.waiting import Attempt

W = [f"/job:worker/replica:0/task:{i}" for i in range(4)]


def test_the_rule_is_tfs_until_a_replica_finishes_or_leaves():
    roster = ReplicaRoster()
    assert roster.need(3, 3, 1) == 3                     # TF: replicas_to_aggregate
    assert roster.need(2, 3, 1) == 2                     # one backup worker
    assert roster.need(3, None, 1) == 3                  # a program's own accumulator
    roster.set_absent(frozenset({W[2]}))
    assert roster.need(3, 3, 1) == 2 and roster.gone() == 1
    assert roster.need(2, 3, 1) == 2                     # the backup covered the leave
    assert roster.need(3, None, 1) == 3                  # membership is the optimizer's
    roster.departed(W[1])
    roster.departed(W[1])                                # said twice, counted once
    assert roster.need(3, 3, 1) == 1 and roster.need(3, 3, 2) == 2   # the floor holds
    assert roster.need(3, None, 1) == 2                  # older rule: departures only
    roster.departed(W[2])                                # finished and left: once
    assert roster.gone() == 2
    roster.sent(W[1], 7)                                 # a finished replica trains again
    roster.set_absent(frozenset())                       # ... and the left one is back
    assert roster.gone() == 1 and roster.need(3, 3, 1) == 2
    names, steps, _, gone = roster.status()
    assert names == [W[1], W[2]] and steps == [7, -1] and gone == [False, True]


def test_a_joined_worker_counts_once_the_chief_issued_it_a_token():
    roster = ReplicaRoster(absent=frozenset({W[2]}))
    # The chief issued 2 tokens for this step: the take asks min(3, 2).
    assert roster.need(min(3, 2), 3, 1) == 2
    roster.set_absent(frozenset())                       # worker 2 joined mid-step
    assert roster.need(min(3, 2), 3, 1) == 2             # no token of this step is its
    assert roster.need(min(3, 3), 3, 1) == 3             # the next step's tokens were


def _take(acc: DenseAccumulator, need: int, tokens: int | None = 3, floor: int = 1
          ) -> list:
    got: list = []
    acc.submit(Attempt((need, tokens, floor), got.append))
    return got


def test_a_leave_releases_a_take_already_waiting():
    acc = DenseAccumulator("a", dtypes.float32, [2], "MEAN")
    got = _take(acc, 3)
    acc.apply(0, np.array([1.0, 1.0]), replica=W[0])
    acc.apply(0, np.array([3.0, 3.0]), replica=W[1])
    assert got == []                                     # waits for worker 2
    acc.set_absent(frozenset({W[2]}))                    # worker 2 left the job
    np.testing.assert_allclose(got[0], [2.0, 2.0])
    assert acc.global_step == 1
    got = _take(acc, 3)
    acc.apply(0, np.array([9.0, 9.0]), replica=W[0])     # stale: a departed one's token
    acc.apply(1, np.array([1.0, 1.0]), replica=W[0])
    acc.apply(1, np.array([3.0, 3.0]), replica=W[1])
    np.testing.assert_allclose(got[0], [2.0, 2.0])       # 2 fresh ones, the stale dropped


def test_a_plain_accumulator_ignores_membership():
    acc = DenseAccumulator("b", dtypes.float32, [], "MEAN", absent=frozenset({W[2]}))
    got = _take(acc, 2, tokens=None)
    acc.apply(0, np.array(1.0), replica=W[0])
    assert got == []
    acc.replica_departed(W[1])                           # the older rule: one fewer
    assert got and float(got[0]) == 1.0


def test_the_resource_manager_tells_accumulators_and_new_ones_read_it():
    mgr = ResourceMgr()
    acc = mgr.lookup_or_create("", "a", lambda: DenseAccumulator(
        "a", dtypes.float32, [], "MEAN", mgr.absent_tasks))
    got = _take(acc, 2, tokens=2)
    acc.apply(0, np.array(4.0), replica=W[0])
    mgr.set_absent_tasks(frozenset({W[1]}))
    assert float(got[0]) == 4.0 and acc.replicas_gone() == 1
    assert DenseAccumulator("c", dtypes.float32, [], "MEAN",
                            mgr.absent_tasks).replicas_gone() == 1


def test_absent_workers_are_non_members_and_members_without_a_session(tmp_path):
    path = str(tmp_path / "members.json")
    trainers = W[1:4]
    assert Members("").absent(trainers, set()) == frozenset()   # a fixed job: nobody
    write_members(path, [0, 1, 2])
    members = Members(path)
    assert members.absent(trainers, {W[1], W[2]}) == {W[3]}     # slot 3 never started
    assert members.absent(trainers, {W[1]}) == {W[2], W[3]}     # 2 is still starting
    write_members(path, [0, 2])
    assert members.absent(trainers, {W[1], W[2]}) == {W[1], W[3]}


def test_the_optimizer_marks_its_takes_and_checks_its_floor(graph, monkeypatch):
    with pytest.raises(ValueError, match=r"between 1 and replicas_to_aggregate \(2\), got 3"):
        tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2,
                                       min_replicas_to_aggregate=3)
    monkeypatch.setenv("TENSORWEAVE_SYNC_MIN_REPLICAS", "5")
    v = tf.Variable([1.0, 2.0])
    step = tf.train.get_or_create_global_step()
    opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2, 3)
    opt.minimize(tf.reduce_sum(v * v), global_step=step)
    takes = [op for op in graph.get_operations() if op.type == "AccumulatorTakeGradient"]
    assert takes and all(op._attrs[TOKENS_ATTR] == 3 for op in takes)
    assert all(op._attrs[FLOOR_ATTR] == 2 for op in takes)      # the knob, capped at 2

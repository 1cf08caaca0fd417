"""`tf.train.SyncReplicasOptimizer`: synchronous data-parallel training.

Each worker pushes its gradients into one ConditionalAccumulator per variable
(placed with the variable, on its ps task) stamped with the step it computed
them at, then waits for a token. The chief's queue runner takes the average of
`replicas_to_aggregate` fresh gradients per variable, applies it once, bumps
the global step and releases tokens. Gradients from older steps are dropped,
so `total_num_replicas > replicas_to_aggregate` gives backup workers: the
slowest ones' work is discarded instead of waited for.

Beyond TF 1.x: at the end of training the chief serves the replicas still training
(while they make progress, at most TENSORWEAVE_SYNC_SERVE_SECS, 10 s), then closes
the token queue, so a
worker still waiting for a token ends cleanly (OutOfRangeError, which
MonitoredSession treats as the end of input) instead of hanging.

Also beyond TF 1.x: the barrier follows the replicas still training. Each step
aggregates

    max(min_replicas_to_aggregate, min(replicas_to_aggregate, live))

gradients, live = max(total_num_replicas, replicas_to_aggregate) minus the replicas
that finished or left an elastic job (`tensorweave launch --max-workers`); the chief
issues one token per live replica, so a worker that joins gets tokens and one that
leaves stops getting them, and a leave releases a step already waiting for it. With
no replica finishing or leaving, this is TF's rule (replicas_to_aggregate per step).
kernels/replica_roster.py has the details.

Example:
    >>> opt = tf.train.SyncReplicasOptimizer(tf.train.AdagradOptimizer(0.01),
    ...                                      replicas_to_aggregate=2, total_num_replicas=2)
    >>> train_op = opt.minimize(loss, global_step=global_step)
    >>> hook = opt.make_session_run_hook(is_chief)
"""
from __future__ import annotations

import logging
import time
from typing import Any

from tensorweave.base import knobs
from tensorweave.base.waits import Backoff, Wait
from tensorweave.framework import errors
from tensorweave.framework.graph import (
    GraphKeys, add_to_collection, colocate_with, control_dependencies)
from tensorweave.framework.graph import device as device_scope
from tensorweave.framework.graph import name_scope
from tensorweave.framework.indexed_slices import IndexedSlices
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array import fill
from tensorweave.ops.control_flow import group
from tensorweave.ops.array.core_ops import identity, no_op
from tensorweave.data_flow.data_flow_ops import FIFOQueue
from tensorweave.framework.device import device_task
from tensorweave.framework import dtypes
from tensorweave.ops.data_flow.accumulator_ops import (
    ConditionalAccumulator, SparseConditionalAccumulator, from_replica, sync_rule)
from tensorweave.ops.array import expand_dims
from tensorweave.ops.math.math_ops import maximum, minimum
from tensorweave.ops.state.state_ops import assign
from tensorweave.state.variables import Variable, global_variables
from tensorweave.state.variable_initializers import report_uninitialized_variables
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.queue_runner import QueueRunner
from tensorweave.train.session_run_hook import SessionRunHook
from tensorweave.train.sync_replicas_hook import SyncReplicasOptimizerHook
from tensorweave.train.sync_replicas_watch import ReplicaWatch

log = logging.getLogger("tensorweave.sync_replicas")
# Ops the chief runs when training ends normally (tensorweave-specific collection).
END_OF_TRAINING_OPS = "tensorweave_end_of_training_ops"
# Ops every worker runs when its own training ends normally.
REPLICA_DONE_OPS = "tensorweave_replica_done_ops"
# The optimizers whose chief, before closing its token queue, serves the other replicas.
SYNC_OPTIMIZERS = "tensorweave_sync_replicas_optimizers"
# How long a finished chief goes on serving replicas that are still training.
SERVE_SECS_ENV = knobs.SYNC_SERVE_SECS.name
DEFAULT_SERVE_SECS = knobs.SYNC_SERVE_SECS.default


def serve_secs() -> float:
    """How long a finished chief serves the replicas still training (SERVE_SECS_ENV)."""
    return knobs.SYNC_SERVE_SECS.get()


class SyncReplicasOptimizer(Optimizer):
    """Aggregates gradients from replicas and applies them once per global step.

    Args:
        opt: the optimizer that applies the averaged gradients.
        replicas_to_aggregate: gradients averaged per variable per step.
        total_num_replicas: workers pushing gradients (default: replicas_to_aggregate);
            more than replicas_to_aggregate means backup workers.
        use_locking, name: as for other optimizers.
        min_replicas_to_aggregate: (tensorweave-specific) the fewest gradients a step
            aggregates when replicas finish or leave an elastic job; with fewer live
            it waits. None reads TENSORWEAVE_SYNC_MIN_REPLICAS (1), capped at
            replicas_to_aggregate.

    Raises:
        ValueError: apply_gradients without a global step, a token count that cannot
            make progress, or a floor outside [1, replicas_to_aggregate].

    Example:
        >>> opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
        ...                                      replicas_to_aggregate=3,
        ...                                      min_replicas_to_aggregate=2)
    """

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: int | None = None, variable_averages: Any = None,
                 variables_to_average: Any = None, use_locking: bool = False,
                 name: str = "sync_replicas", *,
                 min_replicas_to_aggregate: int | None = None) -> None:
        super().__init__(use_locking, name)
        if total_num_replicas is None:
            total_num_replicas = replicas_to_aggregate
        if replicas_to_aggregate < 1 or total_num_replicas < 1:
            raise ValueError(f"replicas_to_aggregate ({replicas_to_aggregate}) and "
                             f"total_num_replicas ({total_num_replicas}) must be >= 1")
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total_num_replicas)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._floor = _floor(min_replicas_to_aggregate, self._replicas_to_aggregate)
        self._gradients_applied = False
        self._global_step: Any = None
        self._sync_token_queue: FIFOQueue | None = None
        self._chief_queue_runner: QueueRunner | None = None
        self._accumulators: list[tuple[Any, str]] = []
        self.local_step_init_op: Any = None
        self.chief_init_op: Operation | None = None
        self.ready_for_local_init_op: Tensor | None = None

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Any:
        """Returns the worker's train op: push gradients, then wait for a token."""
        if global_step is None:
            raise ValueError("SyncReplicasOptimizer.apply_gradients needs global_step: it "
                             "stamps gradients with it to drop stale ones.")
        if self._gradients_applied:
            raise ValueError("apply_gradients() may be called only once per "
                             "SyncReplicasOptimizer.")
        grads_and_vars = [(g, v) for g, v in grads_and_vars]
        if not grads_and_vars:
            raise ValueError("Must supply at least one (gradient, variable) pair.")
        self._global_step = global_step
        gs_dtype = global_step.dtype.base_dtype
        self._make_local_step(global_step, gs_dtype)
        chief_init_ops = [self.local_step_init_op]
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

        train_ops: list[Any] = []
        aggregated: list[Any] = []
        var_list: list[Any] = []
        with name_scope(name or self.get_name()):
            chief_init_ops.append(self._make_num_required(global_step.device))
            for grad, var in grads_and_vars:
                var_list.append(var)
                with device_scope(var.device):
                    aggregated.append(self._accumulate(grad, var, train_ops))
            aggregated = _after_every_take(aggregated, var_list)
            with device_scope(global_step.device), name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)),
                                                      global_step)
                queue = FIFOQueue(-1, gs_dtype, shapes=[[]], name="sync_token_q",
                                  shared_name="sync_token_q")
                self._sync_token_queue = queue
                with control_dependencies(train_ops):
                    token = queue.dequeue()
                train_op = assign(self._local_step, token)
                sync_op = self._issue_tokens(queue, update_op, global_step)
                self._chief_queue_runner = QueueRunner(
                    queue, [sync_op], cancel_op=queue.close(cancel_pending_enqueues=True))
            for accum, dev in self._accumulators:
                with device_scope(dev):
                    chief_init_ops.append(accum.set_global_step(global_step,
                                                                name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
            self._gradients_applied = True
            self._add_end_ops(queue)
        return train_op

    def _make_num_required(self, device: str) -> Operation:
        """The chief's take_grad asks replicas_to_aggregate gradients, capped by the tokens
        it issued for this step (a worker that joined is counted from the first step
        whose tokens included it: no step waits for a gradient nobody holds a token
        for). Returns the op resetting the cap (to every token) at the chief's init."""
        with device_scope(device), name_scope(""):
            self._tokens_issued = Variable(self._tokens_per_step, trainable=False,
                                           collections=[], dtype=dtypes.int32,
                                           name="sync_rep_tokens_issued")
            self._num_required = minimum(self._tokens_issued.read_value(),
                                         self._replicas_to_aggregate)
        return self._tokens_issued.initializer

    def _issue_tokens(self, queue: FIFOQueue, update_op: Any, global_step: Any) -> Operation:
        """After the update: one token per replica still training (at least one), as the
        first accumulator counts them (replicas that finished or left an elastic job get
        none, else the queue fills with stale tokens), and that count as the next
        step's cap."""
        # Counted by an accumulator beside the token queue when there is one (no
        # transfer between tasks per step); every accumulator learns the same roster.
        accum = next((a for a, dev in self._accumulators if dev == global_step.device),
                     self._accumulators[0][0])
        with control_dependencies([update_op]):
            gone = accum.replicas_gone()
            n_tokens = maximum(self._tokens_per_step - gone, 1)
            tokens = fill(expand_dims(n_tokens, 0), global_step)
            return group(queue.enqueue_many((tokens,)), assign(self._tokens_issued, n_tokens),
                         name="sync_issue_tokens")

    def _make_local_step(self, global_step: Any, gs_dtype: Any) -> None:
        """This worker's local step (the global step its gradients are for), on the
        worker device of the scope, which also names this replica."""
        anchor = no_op(name="sync_local_anchor")  # takes the worker device of the scope
        self._replica = _replica_name(anchor.device)
        with device_scope(anchor.device):
            self._local_step = Variable(0, trainable=False, dtype=gs_dtype,
                                        collections=[GraphKeys.LOCAL_VARIABLES],
                                        name="sync_rep_local_step")
        self.local_step_init_op = assign(self._local_step, global_step)

    def _add_end_ops(self, queue: FIFOQueue) -> None:
        """The ops that end training: the chief's queue close, each replica's departure,
        and the status op the sync replica watch reads."""
        with colocate_with(queue.queue_ref):
            self._end_op = queue.close(cancel_pending_enqueues=True)
        # The Supervisor runs these when the chief ends training normally.
        add_to_collection(END_OF_TRAINING_OPS, self._end_op)
        departures: list[Any] = []
        for accum, dev in self._accumulators:
            with device_scope(dev):
                departures.append(from_replica(accum.replica_departed(), self._replica))
        self._departed_op = group(*departures, name="replica_departed")
        # Every worker runs this when it ends normally: the others stop waiting for it.
        add_to_collection(REPLICA_DONE_OPS, self._departed_op)
        add_to_collection(SYNC_OPTIMIZERS, self)
        # Who a waiting step waits for (made here: a Supervisor finalizes the graph).
        self._replica_status = self._accumulators[0][0].replica_status()
        self._gone_count = self._accumulators[0][0].replicas_gone()

    def _accumulate(self, grad: Any, var: Any, train_ops: list[Any]) -> Any:
        shared = var.name + "/grad_accum"
        if grad is None:
            return None
        if isinstance(grad, Tensor):
            accum: Any = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                               shared_name=shared)
            train_ops.append(from_replica(accum.apply_grad(grad, local_step=self._local_step),
                                          self._replica))
            out: Any = accum.take_grad(self._num_required)
            sync_rule(out, self._tokens_per_step, self._floor)
        elif isinstance(grad, IndexedSlices):
            accum = SparseConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                 shared_name=shared)
            train_ops.append(from_replica(
                accum.apply_indexed_slices_grad(grad, local_step=self._local_step),
                self._replica))
            out = accum.take_indexed_slices_grad(self._num_required)
            sync_rule(out.indices, self._tokens_per_step, self._floor)
        else:
            raise ValueError(f"Unknown gradient type {type(grad).__name__} for {var.name}")
        self._accumulators.append((accum, var.device))
        return out

    def _require_applied(self, what: str) -> None:
        if not self._gradients_applied:
            raise ValueError(f"SyncReplicasOptimizer.apply_gradient should be called before "
                             f"{what}: call minimize() or apply_gradients() first.")

    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner the chief runs: apply aggregated gradients, release tokens."""
        self._require_applied("get_chief_queue_runner")
        return self._chief_queue_runner  # type: ignore[return-value]

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """Op putting `num_tokens` (default replicas_to_aggregate) tokens in the queue."""
        self._require_applied("get_init_tokens_op")
        needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) "
                             f"< {needed} (replicas_to_aggregate - total_num_replicas)")
        if num_tokens <= 0:
            return no_op(name="no_init_tokens")
        with device_scope(self._global_step.device), name_scope(""):
            tokens = fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,))  # type: ignore[union-attr]

    def end_of_training_op(self) -> Operation:
        """Closes the token queue: workers waiting for a token stop (OutOfRangeError)."""
        self._require_applied("end_of_training_op")
        return self._end_op

    def wait_for_other_replicas(self, session: Any, timeout_secs: float,
                                idle_secs: float = 3.0) -> int:
        """Before the chief closes the token queue: serves the replicas still training.

        Waits until every replica has finished (run its departure op) while the chief's
        queue runner keeps applying their gradients, but only as long as they make
        progress: it stops when the global step has not moved for `idle_secs` (or 5x
        the slowest step seen while waiting), or after `timeout_secs` in all
        (`serve_secs()`, 10 s unless TENSORWEAVE_SYNC_SERVE_SECS says). A replica
        that is absent or stuck is not waited for. Returns how many replicas were left.

        Without it a slower worker of a sync job, a few steps behind the chief, got
        OutOfRangeError from its next `sess.run` when the chief finished first.
        """
        wait = Wait("for the other replicas to finish", timeout_secs,
                    backoff=Backoff(cap=0.25))  # the chief's exit waits on this: poll briskly
        start = last_move = time.monotonic()
        slowest, step = 0.0, None
        while True:
            try:
                departed, now_step = session.run([self._gone_count, self._global_step])
            except (errors.OpError, RuntimeError):  # the ps or the session is gone
                return 0
            left = self._total_num_replicas - int(departed)
            now = time.monotonic()
            if left <= 0:
                return 0
            if step is not None and now_step != step:
                slowest = max(slowest, now - last_move)
                last_move = now
            step = now_step
            if now - last_move > max(idle_secs, 5 * slowest) or wait.expired():
                log.warning("Closing the sync token queue with %d of %d replicas not "
                            "finished (served them %.1f s, no progress for %.1f s): they stop "
                            "with OutOfRangeError. %s sets how long a finished chief serves "
                            "them.", left, self._total_num_replicas, now - start,
                            now - last_move, SERVE_SECS_ENV)
                return left
            wait.sleep()

    def replica_watch(self, may_give_up: bool) -> ReplicaWatch:
        """A watch naming the replicas a waiting step waits for (sync_replicas_watch)."""
        self._require_applied("replica_watch")
        return ReplicaWatch(self._replica_status, self._global_step,
                            self._replicas_to_aggregate, self._total_num_replicas,
                            may_give_up=may_give_up)

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> SessionRunHook:
        """The hook that initializes local steps, tokens and the chief's queue runner."""
        return SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list[Any]:
        return self._opt.variables()


def _floor(given: int | None, replicas_to_aggregate: int) -> int:
    """The fewest gradients a step aggregates: `given`, else the knob capped at
    replicas_to_aggregate (a job-wide setting must not stall a smaller optimizer)."""
    if given is None:
        return min(knobs.SYNC_MIN_REPLICAS.get(), replicas_to_aggregate)
    if not 1 <= given <= replicas_to_aggregate:
        raise ValueError(f"min_replicas_to_aggregate must be between 1 and "
                         f"replicas_to_aggregate ({replicas_to_aggregate}), got {given}")
    return int(given)


def _replica_name(device: str) -> str:
    """The task a replica's ops run on ("/job:worker/replica:0/task:1"), for reports."""
    try:
        return device_task(device)
    except ValueError:  # no job or task in the scope: name what there is
        return device


def _after_every_take(aggregated: list[Any], var_list: list[Any]) -> list[Any]:
    """Each aggregated gradient, available only once every accumulator has given its
    own: the chief's step then updates no variable while it still waits in a
    take_grad. Otherwise an update it already made holds its ps's update gate
    (runtime/update_gate.py) for as long as a later take_grad waits (for good once
    the workers stopped between two pushes), and a save there fails after its pause
    timeout. The step applies the same values either way: it completes only after
    every take_grad has."""
    takes = [t.values.op if isinstance(t, IndexedSlices) else t.op
             for t in aggregated if t is not None]
    out: list[Any] = []
    for agg, var in zip(aggregated, var_list):
        if agg is None:
            out.append(None)
            continue
        with device_scope(var.device), control_dependencies(takes):
            if isinstance(agg, IndexedSlices):
                out.append(IndexedSlices(identity(agg.values), identity(agg.indices),
                                         agg.dense_shape))
            else:
                out.append(identity(agg))
    return out

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
from tensorweave.base.waits import Backoff, Wait, wait_until
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
from tensorweave.ops.data_flow.accumulator_ops import (
    ConditionalAccumulator, SparseConditionalAccumulator, from_replica)
from tensorweave.ops.array import expand_dims
from tensorweave.ops.math.math_ops import maximum
from tensorweave.ops.state.state_ops import assign, assign_add
from tensorweave.state.variables import Variable, global_variables
from tensorweave.state.variable_initializers import report_uninitialized_variables
from tensorweave.train.optimizer import Optimizer
from tensorweave.train.queue_runner import QueueRunner
from tensorweave.train.session_run_hook import SessionRunHook
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

    Raises:
        ValueError: apply_gradients without a global step, or a token count that
            cannot make progress.
    """

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: int | None = None, variable_averages: Any = None,
                 variables_to_average: Any = None, use_locking: bool = False,
                 name: str = "sync_replicas") -> None:
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
            for grad, var in grads_and_vars:
                var_list.append(var)
                with device_scope(var.device):
                    aggregated.append(self._accumulate(grad, var, train_ops))
            aggregated = _after_every_take(aggregated, var_list)
            gs_device = global_step.device
            with device_scope(gs_device), name_scope(""):
                update_op = self._opt.apply_gradients(list(zip(aggregated, var_list)),
                                                      global_step)
                queue = FIFOQueue(-1, gs_dtype, shapes=[[]], name="sync_token_q",
                                  shared_name="sync_token_q")
                self._sync_token_queue = queue
                with control_dependencies(train_ops):
                    token = queue.dequeue()
                train_op = assign(self._local_step, token)
                # Replicas that finished for good get no more tokens (else the queue fills
                # with stale ones and the rest can never hand in a fresh gradient).
                self._departed = Variable(0, trainable=False, collections=[],
                                          name="sync_rep_departed")
                chief_init_ops.append(self._departed.initializer)
                self._departed_count = self._departed.read_value()
                with control_dependencies([update_op]):
                    n_tokens = maximum(self._tokens_per_step - self._departed.read_value(), 1)
                    tokens = fill(expand_dims(n_tokens, 0), global_step)
                    sync_op = queue.enqueue_many((tokens,))
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
        departures: list[Any] = [assign_add(self._departed, 1)]
        for accum, dev in self._accumulators:
            with device_scope(dev):
                departures.append(from_replica(accum.replica_departed(), self._replica))
        self._departed_op = group(*departures, name="replica_departed")
        # Every worker runs this when it ends normally: the others stop waiting for it.
        add_to_collection(REPLICA_DONE_OPS, self._departed_op)
        add_to_collection(SYNC_OPTIMIZERS, self)
        # Who a waiting step waits for (made here: a Supervisor finalizes the graph).
        self._replica_status = self._accumulators[0][0].replica_status()

    def _accumulate(self, grad: Any, var: Any, train_ops: list[Any]) -> Any:
        shared = var.name + "/grad_accum"
        if grad is None:
            return None
        if isinstance(grad, Tensor):
            accum: Any = ConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                               shared_name=shared)
            train_ops.append(from_replica(accum.apply_grad(grad, local_step=self._local_step),
                                          self._replica))
            out: Any = accum.take_grad(self._replicas_to_aggregate)
        elif isinstance(grad, IndexedSlices):
            accum = SparseConditionalAccumulator(grad.dtype, shape=var.get_shape(),
                                                 shared_name=shared)
            train_ops.append(from_replica(
                accum.apply_indexed_slices_grad(grad, local_step=self._local_step),
                self._replica))
            out = accum.take_indexed_slices_grad(self._replicas_to_aggregate)
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
                departed, now_step = session.run([self._departed_count, self._global_step])
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
        return _SyncReplicasOptimizerHook(self, is_chief, num_tokens)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> list[str]:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list[Any]:
        return self._opt.variables()


def _replica_name(device: str) -> str:
    """The task a replica's ops run on ("/job:worker/replica:0/task:1"), for reports."""
    try:
        return device_task(device)
    except ValueError:  # no job or task in the scope: name what there is
        return device


class _SyncReplicasOptimizerHook(SessionRunHook):
    """Runs the local init, the chief's initial tokens and its queue runner, and
    watches the steps for missing replicas (sync_replicas_watch)."""

    def __init__(self, opt: SyncReplicasOptimizer, is_chief: bool, num_tokens: int) -> None:
        self._opt = opt
        self._is_chief = is_chief
        self._num_tokens = num_tokens

    def begin(self) -> None:
        opt = self._opt
        opt._require_applied("creating the session")
        self._local_init_op = opt.chief_init_op if self._is_chief else opt.local_step_init_op
        self._ready_op = opt.ready_for_local_init_op
        self._q_runner = opt.get_chief_queue_runner() if self._is_chief else None
        self._init_tokens = opt.get_init_tokens_op(self._num_tokens) if self._is_chief \
            else None
        self._end_op = opt.end_of_training_op() if self._is_chief else None
        # Every replica says whom its waiting step waits for; only the chief gives up.
        self._watch = opt.replica_watch(may_give_up=self._is_chief)

    def after_create_session(self, session: Any, coord: Any) -> None:
        not_ready: list = []

        def ready() -> bool:
            not_ready[:] = list(session.run(self._ready_op))
            return not not_ready
        # The chief may still be initializing the model.
        wait_until(ready, "for the model to be ready for SyncReplicasOptimizer's local init",
                   hint="Is the chief running, and did it initialize the model?",
                   backoff=Backoff(cap=0.25), error=RuntimeError,
                   detail=lambda: f"uninitialized: {not_ready[:10]}")
        session.run(self._local_init_op)
        if self._init_tokens is not None:
            session.run(self._init_tokens)
        if self._q_runner is not None:
            self._q_runner.create_threads(session, coord=coord, daemon=True, start=True)
        self._watch.start(session, coord)

    def before_run(self, run_context: Any) -> None:
        self._watch.step_started()

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self._watch.step_ended()

    def end(self, session: Any) -> None:
        if self._watch.gave_up is not None:
            # Not a normal end (the token queue was closed because the chief gave up):
            # raised here, the hooks after this one (telling the ps the job is done)
            # do not run, so a restarted chief finds its ps still serving.
            raise self._watch.gave_up
        try:
            session.run(self._opt._departed_op)
            if self._end_op is not None:
                self._opt.wait_for_other_replicas(session, serve_secs())
                session.run(self._end_op)
        except errors.OpError as e:  # the ps may already be gone: nothing to release
            log.debug("end-of-training ops of sync replicas failed: %s", e)


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

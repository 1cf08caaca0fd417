"""Per-task update gate: lets a checkpoint see every variable of a task at one moment.

TF 1.x saved each variable while training kept updating the others, so a
checkpoint of async training mixed values (and optimizer slots) from different
steps. Here every task (every ResourceMgr) has one `UpdateGate`:

- update kernels (Assign*, Scatter*, the optimizers' Apply*) hold the gate in
  *shared* mode while they change a variable in place, through
  `gated_update(variable_resource)`;
- a save pauses the gate (*exclusive*): `pause` blocks new updates and waits
  until no update holds the gate, the save copies the variables, then `resume`.

A shared hold belongs to a *step*, not to one kernel: the first update kernel of
a step on a task takes the hold and the step keeps it until its part of the step
on that task ends (the runtime calls `StepState.end()`, or the step is cancelled).
So a step's updates on one task, e.g. `tf.group(tf.assign_add(a, 1),
tf.assign_add(b, 1))`, are seen by a save either all or not at all. Kernels find
their step through the VariableV2 kernel, which runs earlier in the same step and
thread and calls `note_variable`.

Guarantee (precisely):
- On one task, a snapshot taken while the gate is paused equals the state after
  some set of whole steps (as far as their updates on that task go) and before
  all others: no step is half-applied on that task, and a variable and its
  slots (updated by one fused Apply op) always match.
- Across tasks, the Saver pauses every task in one fixed order (sorted device
  names, so two concurrent saves cannot deadlock) and copies only once all are
  paused. Each task's snapshot then holds whole steps (as above), but a step
  whose updates span two tasks may be in one task's snapshot and not in the
  other's: it updated B before B was paused while its update on A was blocked
  by A's pause. Async training has no global step boundary across tasks, so
  cross-task consistency is per step *per task*; keep a variable's slots and
  values that must agree (e.g. a counter and its sum) on one task.

Safety: a step that never ends (its StepState kept alive by a held exception)
would block saves: `pause` gives up after `timeout_s` with DeadlineExceededError
naming the task. A pause whose save step died is dropped after `lease_s`.

Pausing several tasks in order can deadlock across tasks: a step holding task B
may wait (inside its part on B) for an update on task A, which A's pause blocks.
So every pause after the first one is *contended*: it waits only `window` (0.25 s,
doubling after each contended failure on this task, reset by a success) and then
raises AbortedError carrying `CONTENDED`; the save step fails, which ends its
earlier pauses, and the Saver retries after a short random back-off until its
own timeout.

Example:
    >>> gate = update_gate(resource_mgr)
    >>> owner = gate.pause(timeout_s=30)    # no update runs on this task now
    >>> ...copy the variables...
    >>> gate.resume(owner)
"""
from __future__ import annotations

import itertools
import threading
import time
import weakref
from typing import Any

from tensorweave.framework import errors

_tokens = itertools.count(1)
# Marks the AbortedError of a contended pause that gave up: the save may retry.
CONTENDED = "[contended pause]"
_FIRST_WINDOW_S = 0.25
_tls = threading.local()
# Weak so that a dropped session's resource manager takes its gate with it.
_GATES: weakref.WeakKeyDictionary[Any, UpdateGate] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()
# id(VariableResource) -> its task's gate. VariableResource has __slots__ and no
# __weakref__, so this is keyed by id; VariableV2 refreshes it every step, before any
# update of that variable in the step, so a reused id is overwritten before use.
_VAR_GATE: dict[int, UpdateGate] = {}
# step -> token of its shared holds (one token per step, shared by its gates).
_STEP_TOKENS: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
_STEP_LOCK = threading.Lock()


class UpdateGate:
    """A reader-writer gate: many updating steps, or one pausing save.

    Args:
        name: the task or device it guards, used in error messages.
        lease_s: a pause older than this no longer blocks updates (its save died).
    """

    def __init__(self, name: str = "", lease_s: float = 60.0) -> None:
        self.name = name
        self.lease_s = lease_s
        self._cond = threading.Condition()
        self._holders: dict[int, int] = {}  # token -> number of nested holds
        self._paused_by: int | None = None
        self._paused_at = 0.0
        self._contended_fails = 0   # contended pauses given up in a row (sets the window)
        self.updates = 0  # steps that took a hold: a copy taken at the same count is current
        # Per variable (or table) name: [updates, bytes of the variable updated], for the
        # task's metrics (distributed/task_metrics.py reads it at scrape time).
        self.variable_updates: dict[str, list[int]] = {}
        self._count_lock = threading.Lock()

    def count_update(self, resource: Any) -> None:
        """Counts one update of `resource` (a dense update's bytes: its value's size)."""
        name = getattr(resource, "name", "")
        nbytes = getattr(getattr(resource, "value", None), "nbytes", 0)
        with self._count_lock:
            counts = self.variable_updates.get(name)
            if counts is None:
                self.variable_updates[name] = [1, nbytes]
            else:
                counts[0] += 1
                counts[1] += nbytes

    def update_counts(self) -> dict[str, tuple[int, int]]:
        """Per variable name: (updates, bytes) so far (a copy)."""
        with self._count_lock:
            return {name: (c[0], c[1]) for name, c in self.variable_updates.items()}

    # ---- shared side (updates) -----------------------------------------------------
    def acquire_shared(self, token: int) -> bool:
        """Takes a shared hold for `token`; True if it is new (False: re-entered).

        Blocks while another owner has the gate paused, except for a token that
        already holds it (its step must be able to finish, or pause would wait
        for it forever).
        """
        with self._cond:
            if token in self._holders:
                self._holders[token] += 1
                return False
            while self._paused_by is not None and not self._lease_expired():
                self._cond.wait(timeout=0.5)
            self._holders[token] = 1
            self.updates += 1
            return True

    def release_shared(self, token: int, all_holds: bool = True) -> None:
        """Drops `token`'s hold (all nested holds by default); unknown tokens are ignored."""
        with self._cond:
            n = self._holders.get(token)
            if n is None:
                return
            if all_holds or n <= 1:
                del self._holders[token]
                self._cond.notify_all()
            else:
                self._holders[token] = n - 1

    # ---- exclusive side (saves) ----------------------------------------------------
    def pause(self, owner: int | None = None, timeout_s: float = 60.0,
              contended: bool = False) -> int:
        """Blocks new updates and waits until none is in progress; returns the owner token.

        Args:
            contended: the caller already paused other tasks (see the module
                docstring): wait at most this gate's contended window.

        Raises:
            DeadlineExceededError: if updates are still in progress after
                `timeout_s` (names the task; the pause is undone).
            AbortedError: (contended only) still in progress after the window;
                the message carries `CONTENDED`.
        """
        owner = next(_tokens) if owner is None else owner
        if contended:
            window = min(timeout_s, _FIRST_WINDOW_S * 2 ** min(self._contended_fails, 10))
            try:
                self.pause(owner, window)
            except errors.DeadlineExceededError as e:
                self._contended_fails += 1
                raise errors.AbortedError(
                    None, None, f"{CONTENDED} {e.message.split('. ')[0]} within {window:g} s "
                    "while the save held tasks earlier in its order: a step here may be "
                    "waiting on one of them. The save undoes its pauses and retries."
                ) from None
            self._contended_fails = 0
            return owner
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._paused_by not in (None, owner) and not self._lease_expired():
                self._wait_until(deadline, "another save to finish")
            self._paused_by, self._paused_at = owner, time.monotonic()
            try:
                while any(t != owner for t in self._holders):
                    self._wait_until(deadline, f"{len(self._holders)} updating step(s)")
            except BaseException:
                self._paused_by = None
                self._cond.notify_all()
                raise
        return owner

    def resume(self, owner: int) -> None:
        """Lets updates run again (no-op unless `owner` holds the pause)."""
        with self._cond:
            if self._paused_by == owner:
                self._paused_by = None
                self._cond.notify_all()

    @property
    def paused(self) -> bool:
        with self._cond:
            return self._paused_by is not None and not self._lease_expired()

    def _lease_expired(self) -> bool:
        return time.monotonic() - self._paused_at > self.lease_s

    def _wait_until(self, deadline: float, what: str) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise errors.DeadlineExceededError(
                None, None, f"Could not pause updates on {self.name or 'this task'}: still "
                f"waiting for {what}. A step may be blocked, or an exception from a failed "
                "step is being kept alive; retry the save, or raise its timeout.")
        self._cond.wait(timeout=min(left, 0.5))


def update_gate(resource_mgr: Any, name: str = "") -> UpdateGate:
    """The update gate of the task (device) that owns `resource_mgr`.

    Example:
        >>> gate = update_gate(ctx.resources, ctx.device)
    """
    with _GATES_LOCK:
        gate = _GATES.get(resource_mgr)
        if gate is None:
            gate = _GATES[resource_mgr] = UpdateGate(name)
        elif name and not gate.name:
            gate.name = name
        return gate


def note_variable(resource: Any, resource_mgr: Any, step: Any, device: str = "") -> None:
    """Called by the VariableV2 kernel: ties `resource` to its task's gate and this
    thread's current step (update kernels of the step run later in the same thread)."""
    _VAR_GATE[id(resource)] = update_gate(resource_mgr, device)
    _tls.step = weakref.ref(step) if step is not None else None


def step_token(step: Any) -> int:
    """The token that stands for `step` in every gate (its holds and its pauses)."""
    with _STEP_LOCK:
        token = _STEP_TOKENS.get(step)
        if token is None:
            token = _STEP_TOKENS[step] = next(_tokens)
    return token


def gated_update(resource: Any) -> "_GatedUpdate":
    """Context manager for update kernels: holds `resource`'s task gate in shared mode.

    Within a step the hold lasts until the step ends (see the module docstring);
    outside one (a kernel called directly) it lasts for the `with` block only.

    Example:
        >>> with gated_update(var):
        ...     np.add(var.value, delta, out=var.value)
    """
    return _GatedUpdate(resource)


class _GatedUpdate:
    """`gated_update`'s context manager (a class: update kernels enter one per call)."""

    __slots__ = ("_resource", "_release", "_gate")

    def __init__(self, resource: Any) -> None:
        self._resource = resource
        self._release: tuple[UpdateGate, int] | None = None
        self._gate: UpdateGate | None = None

    def __enter__(self) -> None:
        gate = _VAR_GATE.get(id(self._resource))
        if gate is None:
            return
        self._gate = gate
        ref = getattr(_tls, "step", None)
        step = ref() if ref is not None else None
        if step is None:
            token = next(_tokens)
            gate.acquire_shared(token)
            self._release = (gate, token)
        else:
            _hold_for_step(gate, step)

    def __exit__(self, *exc: Any) -> None:
        if self._gate is not None:  # counted after: a first assign's value exists now
            self._gate.count_update(self._resource)
        if self._release is not None:
            gate, token = self._release
            self._release = None
            gate.release_shared(token)


def _hold_for_step(gate: UpdateGate, step: Any) -> None:
    held = getattr(step, "held_gates", None)  # StepState's: the gates this step holds
    if held is not None and gate in held:
        return  # this step's later updates on this task: the hold it took still stands
    token = step_token(step)
    if gate.acquire_shared(token):
        # First hold of this step on this task: release when the step ends here (the
        # runtime calls step.end()), is cancelled, or, as a last resort, is freed.
        def release(_e: Any = None, g: UpdateGate = gate, t: int = token) -> None:
            if held is not None:
                held.discard(g)
            g.release_shared(t)
        step.add_end_callback(release)
        step.register_cancel(release)
        weakref.finalize(step, gate.release_shared, token)
        if held is not None:
            held.add(gate)
    else:
        gate.release_shared(token, all_holds=False)  # keep exactly one hold per step


__all__ = ["CONTENDED", "UpdateGate", "gated_update", "note_variable", "step_token", "update_gate"]

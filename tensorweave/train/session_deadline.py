"""How long session creation and recovery may wait for the cluster, and how it says so.

TF 1.x's monitored sessions retried session creation forever while a ps was down
(and a waiting worker slept 30 s between checks). Here every such wait is bounded:
it gives up after `session_deadline_secs(config)` (the environment variable
`TENSORWEAVE_SESSION_DEADLINE_SECS` when set, else `ConfigProto.operation_timeout_in_ms`
when set, else `base.waits.DEFAULT_WAIT_SECS`, 60 s, the default of every wait for
the cluster) with an `UnavailableError` that names the tasks that did not
answer, and says at WARNING what it is waiting for meanwhile.

Example:
    >>> wait = ClusterWait("grpc://localhost:2222", tf.ConfigProto(operation_timeout_in_ms=5000))
    >>> wait.deadline_secs
    5.0
"""
from __future__ import annotations

from typing import Any

from tensorweave.base import knobs
from tensorweave.base.waits import DEFAULT_WAIT_SECS, Wait, cluster_wait_secs
from tensorweave.framework import errors
from tensorweave.framework.device import tasks_named
from tensorweave.train.hook_utils import log

__all__ = ["DEADLINE_ENV", "DEFAULT_SESSION_DEADLINE_SECS", "MAX_RECOVERIES_IN_A_ROW",
           "ClusterWait", "session_deadline_secs"]

DEFAULT_SESSION_DEADLINE_SECS = DEFAULT_WAIT_SECS
DEADLINE_ENV = knobs.SESSION_DEADLINE_SECS.name
# A step that fails with a preemption error right after each fresh session is not a
# preemption any more; stop re-creating sessions after this many in a row.
MAX_RECOVERIES_IN_A_ROW = 5
_LOG_EVERY_SECS = 5.0


def session_deadline_secs(config: Any = None) -> float:
    """Seconds that creating (or re-creating) a session may wait for unreachable tasks.

    `TENSORWEAVE_SESSION_DEADLINE_SECS` when it is set (the one knob for this wait
    alone), else `config.operation_timeout_in_ms` when set (it also bounds each
    step, as in TF), else 60: `base.waits.cluster_wait_secs`, the rule a session's
    wait for its tasks follows too.

    Raises:
        ValueError: if the environment variable is not a positive number.
    """
    ms = getattr(config, "operation_timeout_in_ms", 0) if config is not None else 0
    return cluster_wait_secs(ms / 1000.0 if ms else None)


class ClusterWait:
    """One bounded wait for the cluster (a `base.waits.Wait`): WARNING lines, a named give-up.

    Args:
        target: the session target, for the messages.
        config: the session's `ConfigProto` (its operation_timeout_in_ms sets the deadline).
        what: what is being waited for, e.g. "to create a session".
    """

    def __init__(self, target: str, config: Any = None, what: str = "to create a session"
                 ) -> None:
        self.target = target or "the in-process target"
        self.what = what
        self.deadline_secs = session_deadline_secs(config)
        self._wait = Wait(f"{what} on {self.target}", self.deadline_secs,
                          error=_unavailable, log_every_s=_LOG_EVERY_SECS)

    @property
    def attempts(self) -> int:
        return self._wait.attempts

    def restart(self) -> None:
        """Starts the clock again (the cluster answered in between)."""
        self._wait.restart()

    def elapsed(self) -> float:
        return self._wait.elapsed()

    def failed(self, error: BaseException) -> None:
        """Counts a failed attempt; raises `give_up(error)` once the deadline has passed
        (or `error` itself when an inner wait already gave up)."""
        if getattr(error, "gave_up_waiting", False):
            raise error  # an inner wait already spent the deadline and said why
        self._wait.attempts += 1
        if self._wait.expired():
            raise self.give_up(error)

    def retry_or_raise(self, error: BaseException) -> None:
        """After a failed attempt: sleeps the back-off and returns, or raises
        `UnavailableError` naming the missing tasks once the deadline has passed."""
        self.failed(error)
        if self._wait.should_log():
            missing = ", ".join(tasks_named(str(error))) or "the cluster"
            log.warning("Still waiting for %s %s on %s (%s: %s); retrying for up to %.0fs "
                        "more.", missing, self.what, self.target, type(error).__name__,
                        _first_line(error), self._wait.remaining())
        self._wait.sleep()

    def give_up(self, error: BaseException) -> errors.UnavailableError:
        """The error that ends the wait: names the tasks, the deadline and how to raise it.

        An outer wait that meets this error re-raises it instead of waiting again."""
        missing = tasks_named(str(error))
        who = (f"task{'s' if len(missing) > 1 else ''} {', '.join(missing)} did not answer"
               if missing else "the cluster did not answer")
        hint = (("" if "Check that" in str(error) else "Check that those servers are running "
                 "and reachable at the addresses in the ClusterSpec. ")
                + "To wait longer, set ConfigProto(operation_timeout_in_ms=...) or "
                f"{DEADLINE_ENV}.")
        err = self._wait.give_up(f"{who}. Last error: {type(error).__name__}: "
                                 f"{_first_line(error)}", hint)
        assert isinstance(err, errors.UnavailableError)
        err.__cause__ = error
        err.gave_up_waiting = True  # type: ignore[attr-defined]
        return err


def _unavailable(message: str) -> errors.UnavailableError:
    return errors.UnavailableError(None, None, message)


def _first_line(error: BaseException) -> str:
    text = getattr(error, "message", None) or str(error)
    return text.strip().splitlines()[0] if text.strip() else type(error).__name__

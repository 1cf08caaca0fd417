"""Bounded waits: the one back-off policy and deadline that every poll loop uses.

Whatever tensorweave waits for (tasks to answer, the chief to initialize the model,
replicas to finish, a contended save to get through) it waits the same way: a
`Wait` with a deadline (`DEFAULT_WAIT_SECS` unless the caller has a better one),
polled with the `Backoff` policy (exponential from `first`, capped, optionally
jittered), and a give-up message that says what was awaited, for how long, and what
to do. Nothing waits forever unless TF 1.x defines the wait as unbounded (then
`timeout_s=None`, and each poll fails by itself when the cluster goes away).

Where the awaited thing is in this process, pass the `threading.Event` that marks it
to `Wait.pause` (or `wait_until`): the wait then ends when the event is set, not at
the next poll.

This module imports nothing of tensorweave above `base`, so it cannot know `tf.errors`:
a caller chooses its error type with `error=` (a callable taking the message).

Example:
    >>> ready = threading.Event()
    >>> ready.set()
    >>> wait_until(ready.is_set, "for the flag", timeout_s=1.0, event=ready)
    True
    >>> wait_until(lambda: False, "for nothing", timeout_s=0.01, hint="Set it.")
    Traceback (most recent call last):
    ...
    tensorweave.base.waits.WaitTimeout: Gave up waiting for nothing after 0s ...
"""
from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from tensorweave.base import knobs

__all__ = ["DEFAULT_WAIT_SECS", "Backoff", "Wait", "WaitTimeout", "cluster_wait_secs",
           "wait_until"]

T = TypeVar("T")

DEFAULT_WAIT_SECS = 60.0
"""How long a wait for the cluster lasts when nothing says otherwise (tf.Session's wait
for its tasks, session creation and recovery): the README's "no unbounded waits"."""


def cluster_wait_secs(timeout_s: float | None = None) -> float:
    """How long a wait for the cluster's tasks lasts (a session's first steps, session
    creation and recovery): `TENSORWEAVE_SESSION_DEADLINE_SECS` when set (the one knob
    for these waits), else `timeout_s` (ConfigProto.operation_timeout_in_ms or the
    step's own timeout) when > 0, else `DEFAULT_WAIT_SECS`.

    Raises:
        ValueError: the environment variable is not a number of seconds > 0.

    Example:
        >>> cluster_wait_secs(), cluster_wait_secs(2.5)
        (60.0, 2.5)
    """
    value = knobs.SESSION_DEADLINE_SECS.read()
    if value is not None:
        return value
    return timeout_s if timeout_s is not None and timeout_s > 0 else DEFAULT_WAIT_SECS


class WaitTimeout(TimeoutError):
    """A `Wait` passed its deadline (the default error; callers usually pass their own)."""


@dataclass(frozen=True)
class Backoff:
    """The delays between polls: `first`, then times `factor`, at most `cap`.

    With `jitter`, each delay is a random 10-100% of the nominal one, so that
    processes retrying the same contended thing do not retry in step.

    Example:
        >>> list(itertools.islice(Backoff(0.1, 2.0, 0.5).delays(), 5))
        [0.1, 0.2, 0.4, 0.5, 0.5]
    """

    first: float = 0.05
    factor: float = 2.0
    cap: float = 1.0
    jitter: bool = False

    def __post_init__(self) -> None:
        if not (self.first >= 0 and self.factor >= 1 and self.cap >= self.first):
            raise ValueError(f"A back-off needs first >= 0, factor >= 1 and cap >= first; got "
                             f"first={self.first}, factor={self.factor}, cap={self.cap}.")

    def delays(self) -> Iterator[float]:
        """The delays before the 1st, 2nd, ... retry."""
        return (self.delay(n) for n in itertools.count(1))

    def delay(self, attempt: int) -> float:
        """The delay before retry number `attempt` (1-based): first * factor**(attempt-1),
        at most cap.

        Example:
            >>> Backoff(1.0, 2.0, 30.0).delay(3), Backoff(1.0, 2.0, 30.0).delay(99)
            (4.0, 30.0)
        """
        try:
            nominal = min(self.first * self.factor ** max(attempt - 1, 0), self.cap)
        except OverflowError:  # factor**attempt beyond a float: long past the cap
            nominal = self.cap
        return nominal * random.uniform(0.1, 1.0) if self.jitter else nominal


class Wait:
    """One bounded wait: its clock, its back-off, its give-up message.

    Args:
        what: what is awaited, worded to follow "waiting": "for tasks to answer",
            "to create a session on grpc://ps0:2222".
        timeout_s: the deadline in seconds from now (negative: already passed); None
            waits without one.
        hint: what to do about it, appended to the give-up message ("Raise ...").
        backoff: the poll policy (the default `Backoff()` unless the caller must
            answer faster or slower).
        error: builds the exception raised on giving up from its message.
        log_every_s: how often `should_log` says yes.
        first_log_s: when `should_log` first says yes (0: at its first call), so that
            a wait that usually ends soon says nothing.

    Example:
        >>> wait = Wait("for the ps", timeout_s=0.05, hint="Start it.")
        >>> while True:  # each pass: one failed attempt at reaching the ps
        ...     _ = wait.pause("it did not answer")
        Traceback (most recent call last):
        ...
        tensorweave.base.waits.WaitTimeout: Gave up waiting for the ps after 0s ...
    """

    def __init__(self, what: str, timeout_s: float | None = DEFAULT_WAIT_SECS, *,
                 hint: str = "", backoff: Backoff | None = None,
                 error: Callable[[str], BaseException] = WaitTimeout,
                 log_every_s: float = 5.0, first_log_s: float = 0.0) -> None:
        if timeout_s is not None and timeout_s != timeout_s:
            raise ValueError(f"The wait {what!r} needs a timeout in seconds (or None), "
                             f"got {timeout_s!r}.")
        # A deadline already passed (a negative time left) gives up at the first pause.
        timeout_s = None if timeout_s is None else max(0.0, float(timeout_s))
        self.what, self.timeout_s, self.hint = what, timeout_s, hint
        self.backoff = backoff or Backoff()
        self.error = error
        self.log_every_s, self.first_log_s = log_every_s, first_log_s
        self.restart()

    def restart(self) -> None:
        """Starts the clock and the back-off again (e.g. the awaited thing answered)."""
        self._start = time.monotonic()
        self._delays = self.backoff.delays()
        self._next_log = self._start + self.first_log_s
        self.attempts = 0

    def elapsed(self) -> float:
        return time.monotonic() - self._start

    def remaining(self) -> float:
        """Seconds left before the deadline (inf without one; never below 0)."""
        if self.timeout_s is None:
            return float("inf")
        return max(0.0, self.timeout_s - self.elapsed())

    def expired(self) -> bool:
        return self.timeout_s is not None and self.elapsed() >= self.timeout_s

    def pause(self, detail: str | Callable[[], str] = "",
              event: threading.Event | None = None) -> bool:
        """After a failed attempt: raises `give_up(detail)` if the deadline has passed,
        else sleeps the next back-off delay (at most the time left).

        Args:
            detail: what is still missing, for the give-up message (a callable is
                called only then).
            event: ends the pause as soon as it is set (clear it before the attempt
                it wakes, or a set event makes the polls back-to-back).

        Returns:
            Whether `event` was set.
        """
        self.attempts += 1
        if self.expired():
            raise self.give_up(detail() if callable(detail) else detail)
        return self.sleep(event)

    def sleep(self, event: threading.Event | None = None) -> bool:
        """Sleeps the next back-off delay, at most the time left (no count, no give-up);
        with `event`, returns as soon as it is set, and returns whether it is."""
        delay = min(next(self._delays), self.remaining())
        if event is not None:
            return event.wait(delay)
        time.sleep(delay)
        return False

    def should_log(self) -> bool:
        """True once `first_log_s` has passed, then once per `log_every_s` (or at once
        after `log_soon`): when to say "still waiting"."""
        now = time.monotonic()
        if now < self._next_log:
            return False
        self._next_log = now + self.log_every_s
        return True

    def log_soon(self) -> None:
        """Makes the next `should_log` say yes (something changed worth saying now)."""
        self._next_log = 0.0

    def message(self, detail: str = "", hint: str | None = None) -> str:
        """"Gave up waiting <what> after <n>s (<k> attempts; deadline <d>s): <detail>. <hint>"."""
        attempts = max(self.attempts, 1)
        deadline = "" if self.timeout_s is None else f"; deadline {self.timeout_s:g}s"
        text = (f"Gave up waiting {self.what} after {self.elapsed():.0f}s ({attempts} "
                f"attempt{'s' if attempts != 1 else ''}{deadline})")
        if detail:
            text += f": {detail.rstrip()}"
        if not text.endswith((".", "!", "?")):
            text += "."
        hint = self.hint if hint is None else hint
        return f"{text} {hint}" if hint else text

    def give_up(self, detail: str = "", hint: str | None = None) -> BaseException:
        """The exception that ends the wait (built by `error`), for the caller to raise;
        `hint` replaces the wait's own."""
        return self.error(self.message(detail, hint))


def wait_until(condition: Callable[[], T], what: str,
               timeout_s: float | None = DEFAULT_WAIT_SECS, *, hint: str = "",
               backoff: Backoff | None = None,
               error: Callable[[str], BaseException] = WaitTimeout,
               event: threading.Event | None = None,
               detail: Callable[[], str] | None = None) -> T:
    """Polls `condition()` until it returns something true, and returns that.

    Args:
        condition: the check; an exception it raises ends the wait.
        what, timeout_s, hint, backoff, error: as for `Wait`.
        event: set when the condition may have become true (ends a pause early).
        detail: says, at the give-up, what was still missing.

    Raises:
        The exception `error` builds, once `timeout_s` has passed.

    Example:
        >>> wait_until(lambda: 42, "for the answer")
        42
    """
    wait = Wait(what, timeout_s, hint=hint, backoff=backoff, error=error)
    while True:
        result = condition()
        if result:
            return result
        wait.pause(detail or "", event)

"""The Saver's run of a consistent-snapshot save, retried while a contended pause gives up.

A save pauses the tasks holding variables in sorted order (`ops/io/io_ops.build_save`).
A pause after the first gives up early (`AbortedError` marked `update_gate.CONTENDED`)
when a step it waits for may itself wait on an earlier-paused task; the failed save
step ends the earlier pauses, that step finishes, and the save is run again here.
The retries follow the one back-off policy (`base.waits`), jittered so that two
savers do not retry in step, until the Saver's `pause_timeout_s`.

Example:
    >>> prefix = run_save(sess, save_tensor.name, {filename.name: "/tmp/model.ckpt-1"})
"""
from __future__ import annotations

from typing import Any

from tensorweave.base.waits import Backoff, Wait
from tensorweave.framework import errors
from tensorweave.runtime.update_gate import CONTENDED

__all__ = ["run_save"]

# Each retry waits a random 10-100% of a delay doubling from 50 ms up to 1 s: the steps
# it let through get time to finish, and two savers do not retry in step.
_RETRY = Backoff(first=0.05, cap=1.0, jitter=True)


def _deadline(message: str) -> errors.DeadlineExceededError:
    return errors.DeadlineExceededError(None, None, message)


def run_save(sess: Any, fetch: Any, feed: dict, timeout_s: float = 60.0) -> Any:
    """`sess.run(fetch, feed)` for a `build_save` graph, retried while a pause is contended.

    Args:
        sess: the session (anything with `run(fetches, feed_dict)`).
        fetch: the save graph's prefix tensor (or its name).
        feed: the feed (the checkpoint's file name).
        timeout_s: how long to keep retrying (the Saver's `pause_timeout_s`).

    Returns:
        What the run returns: the checkpoint prefix.

    Raises:
        DeadlineExceededError: still contended after `timeout_s`, naming the task.
        AbortedError: any other abort, at once.
    """
    wait = Wait("for the save's pauses to get through", timeout_s, backoff=_RETRY,
                error=_deadline, hint="Raise the Saver's pause_timeout_s, or look for a step "
                "that never ends.")
    while True:
        try:
            return sess.run(fetch, feed)
        except errors.AbortedError as e:
            if CONTENDED not in e.message:
                raise
            detail = (f"{e.message.replace(CONTENDED, '').strip().rstrip('.')}: steps kept "
                      "holding the task")
        wait.pause(detail)  # outside the except: the give-up is not "during" the abort

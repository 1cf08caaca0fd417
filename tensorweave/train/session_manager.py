"""`tf.train.SessionManager`: create a session whose model is ready to use.

The chief calls `prepare_session` (restore the latest checkpoint, or run the init op),
other workers call `wait_for_session` (wait until the chief made the model ready).
"Ready" means the ready op (by default `tf.report_uninitialized_variables()`) returns
an empty list.

Beyond TF 1.x, which slept `recovery_wait_secs` (30 s) between readiness checks, a
waiting worker polls every 50-250 ms, so it starts about a second after the chief
made the model ready (a 1 s settle lets the chief do what TF1 programs do right after
creating their session, before others start; TF's 30 s poll ordered that by accident),
and a worker that gives up raises `DeadlineExceededError` naming what is still not
initialized. While the cluster itself cannot be reached (a ps is down), the
worker gives up after the session deadline (`session_deadline.session_deadline_secs`:
about a minute, or `ConfigProto.operation_timeout_in_ms`) with `UnavailableError`
naming the tasks, instead of waiting out `max_wait_secs`; its "still waiting" line is
a WARNING.

Also beyond TF 1.x: restoring from `checkpoint_dir`, the chief restores the newest
checkpoint that verifies (`checkpoint_management.latest_valid_checkpoint`: every
tensor's checksum); a damaged or incomplete one is logged at WARNING with what is
wrong, moved aside (`<prefix>.damaged-<n>.*`, never deleted), dropped from the
`checkpoint` state file, and the next older one is tried. With none left the model
is initialized. An explicit `checkpoint_filename_with_path` is restored as given.

Example:
    >>> sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
    >>> if is_chief:
    ...     sess = sm.prepare_session(server.target, init_op=tf.global_variables_initializer())
    ... else:
    ...     sess = sm.wait_for_session(server.target, max_wait_secs=600)
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorweave.base import knobs
from tensorweave.base.waits import Backoff, Wait
from tensorweave.client.session import Session
from tensorweave.framework import errors
from tensorweave.framework.device import tasks_named
from tensorweave.framework.graph import get_default_graph
from tensorweave.train import checkpoint_management, incremental_checkpoints
from tensorweave.train.hook_utils import log
from tensorweave.train.session_deadline import ClusterWait

# Errors that mean "the cluster is not (yet or any more) reachable"; a waiting worker
# treats them as "not ready yet" instead of failing.
_TRANSIENT_ERRORS = (errors.UnavailableError, errors.AbortedError)
_FAST_POLL_MAX_SECS = 0.25
_LOG_EVERY_SECS = 10.0
# A worker that had to wait for the chief starts this long after the model became ready
# (or after recovery_wait_secs, if shorter). TF 1.x's 30 s poll let the chief finish what
# TF1 programs do right after creating their session (assign their initial values to the
# ps, a warm start) before any other worker began; programs rely on that order.
_SETTLE_SECS = 1.0


def _op_name(op: Any) -> str:
    return "None" if op is None else getattr(op, "name", repr(op))


def check_ready(op: Any, sess: Any) -> tuple[bool, str | None]:
    """Runs a ready op; (True, None) if it reports nothing uninitialized.

    Raises:
        tf.errors.FailedPreconditionError: for a failure other than an uninitialized value.
    """
    if op is None:
        return True, None
    try:
        value = sess.run(op)
    except errors.FailedPreconditionError as e:
        if "uninitialized" not in str(e):
            raise
        return False, str(e)
    value = np.asarray(value) if value is not None else None
    if value is None or value.dtype == np.int32 or value.size == 0:
        return True, None
    names = ", ".join(v.decode() if isinstance(v, bytes) else str(v) for v in value.ravel())
    return False, "Variables not initialized: " + names


def _poll(recovery_wait_secs: float, fastest_cap: float) -> Backoff:
    """The readiness/checkpoint polls: back off up to `fastest_cap`, or up to
    `recovery_wait_secs` if that is shorter (at least 10 ms: never a spin)."""
    cap = max(min(fastest_cap, recovery_wait_secs), 0.01)
    return Backoff(first=min(0.05, cap), cap=cap)


class SessionManager:
    """Creates sessions that restore from a checkpoint, initialize, or wait for readiness.

    Args:
        local_init_op: run in every new session once `ready_for_local_init_op` passes
            (e.g. local variables and tables).
        ready_op: a 1-D string tensor naming what is not ready; empty when ready.
        ready_for_local_init_op: like ready_op, checked before running local_init_op.
        graph: the graph the sessions run (default: the default graph).
        recovery_wait_secs: seconds between checks for a checkpoint to appear (waiting
            workers poll readiness much faster, see the module docstring).
        local_init_run_options: `RunOptions` for running local_init_op.
        local_init_feed_dict: feeds for local_init_op.

    Raises:
        ValueError: for ready_for_local_init_op without local_init_op.

    Example:
        >>> sm = tf.train.SessionManager(ready_op=tf.report_uninitialized_variables())
        >>> sess = sm.prepare_session("", init_op=tf.global_variables_initializer())
    """

    def __init__(self, local_init_op: Any = None, ready_op: Any = None,
                 ready_for_local_init_op: Any = None, graph: Any = None,
                 recovery_wait_secs: float = 30, local_init_run_options: Any = None,
                 local_init_feed_dict: Any = None) -> None:
        if ready_for_local_init_op is not None and local_init_op is None:
            raise ValueError("If you pass a ready_for_local_init_op you must also pass a "
                             "local_init_op (SessionManager(local_init_op=...)).")
        self._local_init_op = local_init_op
        self._ready_op = ready_op
        self._ready_for_local_init_op = ready_for_local_init_op
        self._graph = graph if graph is not None else get_default_graph()
        self._recovery_wait_secs = recovery_wait_secs
        self._local_init_run_options = local_init_run_options
        self._local_init_feed_dict = local_init_feed_dict
        self._target: str | None = None
        # How the last session was made ready, for recovery's WARNING line.
        self.last_session_origin: str | None = None
        self._restored_from: str | None = None
        self._not_ready_msg: str | None = None

    # ---- chief ---------------------------------------------------------------------
    def prepare_session(self, master: str, init_op: Any = None, saver: Any = None,
                        checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config: Any = None, init_feed_dict: Any = None,
                        init_fn: Callable[[Any], None] | None = None) -> Session:
        """A session on `master` with the model restored or initialized, and ready.

        Restores the newest intact checkpoint of `checkpoint_dir` (damaged ones are
        moved aside, see the module docstring) or the given file when there is
        one; otherwise runs `init_op` and then `init_fn(sess)`. Then runs the
        local init op and checks readiness.

        Raises:
            RuntimeError: if nothing can initialize the model, or it is not ready after.
            ValueError: for both checkpoint_dir and checkpoint_filename_with_path.

        Example:
            >>> sess = sm.prepare_session(server.target, init_op=init_op,
            ...                           saver=saver, checkpoint_dir="/tmp/train")
        """
        live = self._live_model(master, config)
        if live is not None:
            return live
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        if not restored:
            if init_op is None and not init_fn and self._local_init_op is None:
                raise RuntimeError("Model is not initialized and no init_op or init_fn or "
                                   "local_init_op was given, and there is no checkpoint to "
                                   "restore: pass init_op=, init_fn= or local_init_op=.")
            if init_op is not None:
                sess.run(init_op, feed_dict=init_feed_dict)
            if init_fn:
                init_fn(sess)
            self.last_session_origin = "initialized the model (no checkpoint to restore)"
        else:
            self.last_session_origin = f"restored checkpoint {self._restored_from}"
        ok, msg = self._try_run_local_init_op(sess)
        if not ok:
            raise RuntimeError(f"Init operations did not make model ready for local_init."
                               f" Init op: {_op_name(init_op)}, init fn: {init_fn}, "
                               f"error: {msg}")
        ready, msg = check_ready(self._ready_op, sess)
        if not ready:
            raise RuntimeError(f"Init operations did not make model ready. Init op: "
                               f"{_op_name(init_op)}, init fn: {init_fn}, local_init_op: "
                               f"{_op_name(self._local_init_op)}, error: {msg}")
        return sess

    def _live_model(self, master: str, config: Any) -> Session | None:
        """With ps state replication on (TENSORWEAVE_PS_REPLICATION), a session on a model
        that is already ready: its variables are live on the ps tasks (a ps restarted from
        its replica, or only the chief restarted), so nothing is restored or initialized
        over them. None when replication is off or the model is not ready (a job's first
        start, or a ps that found no replica: the checkpoint path follows)."""
        if not knobs.PS_REPLICATION.get() or self._ready_op is None:
            return None
        sess = Session(master, graph=self._graph, config=config)
        try:
            ready, _ = check_ready(self._ready_op, sess)
            ok = ready and self._try_run_local_init_op(sess)[0]
        except errors.OpError:  # unreachable: the checkpoint path waits and says so
            ok = False
        if not ok:
            sess.close()
            return None
        log.warning("The model's variables are live on the ps tasks (ps state replication): "
                    "this session restores no checkpoint and runs no init op over them.")
        self.last_session_origin = ("the model was live on its ps tasks (ps state "
                                    "replication): nothing restored")
        return sess

    def recover_session(self, master: str, saver: Any = None,
                        checkpoint_dir: str | None = None,
                        checkpoint_filename_with_path: str | None = None,
                        wait_for_checkpoint: bool = False, max_wait_secs: float = 7200,
                        config: Any = None) -> tuple[Session, bool]:
        """A session, and whether it was restored from a checkpoint into a ready model.

        Example:
            >>> sess, ok = sm.recover_session(target, saver=saver, checkpoint_dir=d)
        """
        sess, restored = self._restore_checkpoint(
            master, saver, checkpoint_dir, checkpoint_filename_with_path,
            wait_for_checkpoint, max_wait_secs, config)
        ok, msg = self._try_run_local_init_op(sess)
        if not restored:
            return sess, False
        where = checkpoint_dir or checkpoint_filename_with_path
        if not ok:
            log.info("Restoring model from %s did not make it ready for local init: %s",
                     where, msg)
            return sess, False
        ready, msg = check_ready(self._ready_op, sess)
        if not ready:
            log.info("Restoring model from %s did not make it ready: %s", where, msg)
            return sess, False
        log.info("Restored model from %s", where)
        self.last_session_origin = f"restored checkpoint {self._restored_from}"
        return sess, True

    def _restore_checkpoint(self, master: str, saver: Any, checkpoint_dir: str | None,
                            checkpoint_filename_with_path: str | None,
                            wait_for_checkpoint: bool, max_wait_secs: float,
                            config: Any) -> tuple[Session, bool]:
        if checkpoint_dir and checkpoint_filename_with_path:
            raise ValueError(f"Can not provide both checkpoint_dir and "
                             f"checkpoint_filename_with_path (got {checkpoint_dir!r} and "
                             f"{checkpoint_filename_with_path!r}); pass one.")
        self._target = master
        self._restored_from = None
        sess = Session(master, graph=self._graph, config=config)
        if not saver or not (checkpoint_dir or checkpoint_filename_with_path):
            return sess, False
        if checkpoint_filename_with_path:
            saver.restore(sess, checkpoint_filename_with_path)
            self._restored_from = checkpoint_filename_with_path
            return sess, True
        assert checkpoint_dir  # one of the two is set (checked above)
        wait = Wait(f"for a checkpoint in {checkpoint_dir}", max_wait_secs,
                    backoff=_poll(self._recovery_wait_secs, 1.0), log_every_s=_LOG_EVERY_SECS)
        path = self._restore_newest_valid(sess, saver, checkpoint_dir)
        while not path:
            if not wait_for_checkpoint or wait.expired():
                return sess, False
            if wait.should_log():
                log.warning("Still waiting for a checkpoint to appear in %s (giving up in "
                            "%.0fs).", checkpoint_dir, wait.remaining())
            wait.sleep()
            path = self._restore_newest_valid(sess, saver, checkpoint_dir)
        self._restored_from = path
        self._recover_checkpoint_list(saver, checkpoint_dir)
        return sess, True

    @staticmethod
    def _restore_newest_valid(sess: Session, saver: Any, checkpoint_dir: str) -> str | None:
        # Restores the newest checkpoint that verifies; damaged or incomplete ones are
        # logged, moved aside and dropped from the state file (tensorweave's own: TF
        # 1.x raises and the chief crash-loops on the same file). None: nothing left.
        tried: set[str] = set()
        while True:
            path = checkpoint_management.latest_valid_checkpoint(checkpoint_dir,
                                                                 set_aside_damaged=True)
            if path is None:
                return None
            if path in tried:   # it could not be moved aside: do not loop on it
                raise errors.DataLossError(None, None, f"Checkpoint {path} fails to restore "
                                           "and could not be moved aside; move or delete "
                                           "its files by hand.")
            tried.add(path)
            newer = SessionManager._restore_incremental(sess, saver, checkpoint_dir, path)
            if newer:
                return newer
            try:
                saver.restore(sess, path)
                return path
            except errors.DataLossError as e:   # changed on disk since it verified
                checkpoint_management.set_aside_checkpoint(path, e.message,
                                                           checkpoint_dir=checkpoint_dir)

    @staticmethod
    def _restore_incremental(sess: Session, saver: Any, checkpoint_dir: str, full: str
                             ) -> str | None:
        # The newest incremental checkpoint built on `full` (DeepRec's): the full one
        # plus the changes saved since. A damaged chain falls back to `full` alone.
        newer = incremental_checkpoints.newest_incremental(checkpoint_dir, full)
        if newer is None:
            return None
        try:
            saver.restore(sess, newer)
        except errors.DataLossError as e:
            log.warning("Incremental checkpoint %s fails to restore (%s); restoring the full "
                        "checkpoint %s it builds on instead", newer, e.message, full)
            return None
        log.info("Restored the incremental checkpoint %s (full checkpoint %s and the "
                 "changes saved since)", newer, full)
        return newer

    @staticmethod
    def _recover_checkpoint_list(saver: Any, checkpoint_dir: str) -> None:
        # Lets the saver keep deleting old checkpoints (max_to_keep) across restarts.
        recover = getattr(saver, "recover_last_checkpoints", None)
        if recover is None:
            return
        state = checkpoint_management.get_checkpoint_state(checkpoint_dir)
        if state is not None:
            recover(list(state.all_model_checkpoint_paths))

    # ---- non-chief -----------------------------------------------------------------
    def wait_for_session(self, master: str, config: Any = None,
                         max_wait_secs: float | None = float("Inf")) -> Session:
        """A session on `master` once the model is ready (initialized by the chief).

        Polls readiness every 50-250 ms; once the model is ready, a worker that had to
        wait starts after a 1 s settle (at most `recovery_wait_secs`). A cluster that
        cannot be reached counts as "not ready" for up to the session deadline (about a
        minute, or `config.operation_timeout_in_ms`), so a restarting task is ridden out.

        Raises:
            tf.errors.DeadlineExceededError: after `max_wait_secs`, naming what is
                still uninitialized.
            tf.errors.UnavailableError: the cluster stayed unreachable for the whole
                session deadline; names the tasks that did not answer.

        Example:
            >>> sess = sm.wait_for_session(server.target, max_wait_secs=600)
        """
        self._target = master
        max_wait = float("inf") if max_wait_secs is None else float(max_wait_secs)
        ready = Wait("for the model to be ready", max_wait,
                     backoff=_poll(self._recovery_wait_secs, _FAST_POLL_MAX_SECS),
                     log_every_s=_LOG_EVERY_SECS, first_log_s=_LOG_EVERY_SECS)
        unreachable = ClusterWait(master, config, "for the model to be ready")
        sess: Session | None = None
        msg: str | None = "no readiness check has completed yet"
        waited = False
        while True:
            if sess is None:
                sess = Session(master, graph=self._graph, config=config)
            try:
                if self._check_worker_ready(sess):
                    if waited:
                        time.sleep(min(_SETTLE_SECS, self._recovery_wait_secs,
                                       ready.remaining()))
                    return sess
                waited = True
                unreachable.restart()  # the cluster answered: the chief is not done yet
                msg = self._not_ready_msg
            except _TRANSIENT_ERRORS as e:
                # A task may be restarting; start over with a fresh session, for a while.
                msg = f"{type(e).__name__}: {e}"
                self._safe_close(sess)
                sess = None
                waited = True
                unreachable.failed(e)  # UnavailableError once the session deadline passed
                if unreachable.attempts == 1:  # say so at once, then every 10 s
                    ready.log_soon()
            if ready.expired():
                self._safe_close(sess)
                raise errors.DeadlineExceededError(
                    None, None, f"Session was not ready after waiting {max_wait:g} secs "
                    f"(target {master!r}): {msg}. Is the chief (is_chief=True) running, and "
                    "did it initialize the model? Raise max_wait_secs to wait longer.")
            if ready.should_log():
                self._log_still_waiting(master, msg or "")
            ready.sleep()

    def _check_worker_ready(self, sess: Session) -> bool:
        """Runs local init and the ready op; True when ready (else the reason is kept)."""
        ok, msg = self._try_run_local_init_op(sess)
        if ok:
            ok, msg = check_ready(self._ready_op, sess)
        self._not_ready_msg = msg
        if ok:
            self.last_session_origin = "the model was ready (made so by the chief)"
        return ok

    @staticmethod
    def _log_still_waiting(master: str, msg: str) -> None:
        missing = tasks_named(msg)
        if missing:
            log.warning("Still waiting for %s (unreachable) for the model to be ready on %s: "
                        "%s", ", ".join(missing), master, msg.splitlines()[0][:300])
        else:
            log.warning("Still waiting for the model to be ready on %s (is the chief running "
                        "and has it initialized the model?): %s", master, msg[:300])

    def _try_run_local_init_op(self, sess: Any) -> tuple[bool, str | None]:
        if self._local_init_op is None:
            return True, None
        ok, msg = check_ready(self._ready_for_local_init_op, sess)
        if not ok:
            return False, msg
        log.debug("Running local_init_op.")
        sess.run(self._local_init_op, feed_dict=self._local_init_feed_dict,
                 options=self._local_init_run_options)
        return True, None

    @staticmethod
    def _safe_close(sess: Any) -> None:
        if sess is None:
            return
        try:
            sess.close()
        except Exception:  # noqa: BLE001 - closing a broken session must not mask why
            pass


__all__ = ["SessionManager"]

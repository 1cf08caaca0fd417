"""Task restarts for `tensorweave launch --restart`: the policy and its book-keeping.

A policy per role (ps, worker, chief, evaluator), as Kubernetes and Kubeflow's
TFJob spell them (`launch/manifest.py` writes the same policies into manifests):

* ``never``: a task that ends stays ended (the default; the job is judged as
  before).
* ``on-failure``: a task that exits non-zero or is killed by a signal (one the
  launcher did not send) is started again with the same command, TF_CONFIG and
  port, after an exponential back-off (`backoff` seconds, doubling, at most
  `backoff_max`), at most `max_restarts` times per task. A restarted ps comes
  back on its port with empty variables: the workers' MonitoredTrainingSessions
  meet AbortedError/UnavailableError, re-create their sessions, and the chief
  restores the last checkpoint. A task that exits 0 is done.
* ``always``: on-failure, and a task that exits 0 while the job still runs is
  restarted too (a ps of a program that returns from `server.join()` early).
  But every task of a finished job exits 0 (our ps tasks too, once the chief
  tells them the job is done, moments before the chief itself exits), so a
  clean exit is first given `CLEAN_EXIT_SETTLE_S` (or the back-off, if longer):
  if meanwhile the job is decided or a training task ends with exit 0, the exit
  was the job's end and nothing is restarted. Clean-exit restarts count against
  `max_restarts` too, so a program that keeps exiting 0 cannot loop forever.

Nothing is restarted once the job is decided (the chief, or every worker,
succeeded), after Ctrl-C/SIGTERM/--timeout, or when the launcher stopped the
task itself.

Example:
    >>> policy = RestartPolicy(parse_restart("on-failure,ps=always"), max_restarts=2)
    >>> policy.policy("ps"), policy.policy("worker")
    ('always', 'on-failure')
    >>> [policy.delay(n) for n in (1, 2, 3)]
    [1.0, 2.0, 4.0]
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from tensorweave.base.waits import Backoff
from tensorweave.launch.process import describe_exit

__all__ = ["CLEAN_EXIT_SETTLE_S", "POLICIES", "ROLES", "PendingRestart", "RestartBook",
           "RestartPolicy", "kubernetes_restart_policy", "parse_restart"]

NEVER, ON_FAILURE, ALWAYS = "never", "on-failure", "always"
POLICIES = (NEVER, ON_FAILURE, ALWAYS)
ROLES = ("ps", "worker", "chief", "evaluator", "ps_standby")
# How long a clean exit under `always` waits for the job's end before it is restarted.
CLEAN_EXIT_SETTLE_S = 5.0

_FORMS = ("use never, on-failure or always (for every role), ROLE=POLICY pairs such as "
          "ps=always,worker=on-failure (unnamed roles: never), or both, e.g. "
          "on-failure,ps=always")


def _check_policy(value: str, spec: str) -> str:
    if value not in POLICIES:
        raise ValueError(f"--restart {spec!r}: {value!r} is not a restart policy; {_FORMS}.")
    return value


def parse_restart(spec: str) -> dict[str, str]:
    """Reads a `--restart` value into a policy for every role.

    Args:
        spec: "on-failure", "ps=always,worker=on-failure", or "on-failure,ps=always"
            (a bare policy is the default for the roles not named).

    Returns:
        role -> policy for the roles named, and "*" -> the default when one is given.

    Raises:
        ValueError: naming the offending part (unknown policy or role, a role given
            twice, two defaults, an empty part).

    Example:
        >>> parse_restart("on-failure,ps=always")
        {'*': 'on-failure', 'ps': 'always'}
    """
    default: str | None = None
    named: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            raise ValueError(f"--restart {spec!r} has an empty part; {_FORMS}.")
        role, sep, value = part.partition("=")
        if not sep:
            if default is not None:
                raise ValueError(f"--restart {spec!r} gives two policies for every role "
                                 f"({default!r} and {part!r}); give one.")
            default = _check_policy(part, spec)
            continue
        role, value = role.strip(), value.strip()
        if role not in ROLES:
            raise ValueError(f"--restart {spec!r}: {role!r} is not a role; roles are "
                             f"{', '.join(ROLES)}.")
        if role in named:
            raise ValueError(f"--restart {spec!r} names {role!r} twice.")
        named[role] = _check_policy(value, spec)
    return {**({"*": default} if default else {}), **named}


@dataclass(frozen=True)
class RestartPolicy:
    """Which tasks are restarted, how often and how soon.

    Args:
        per_role: role -> never | on-failure | always, "*" -> the policy of the roles
            not named (see `parse_restart`; default never).
        max_restarts: restarts allowed per task over the whole job.
        backoff: seconds before a task's first restart; doubled for each next one.
        backoff_max: the back-off's cap in seconds.

    Raises:
        ValueError: for a negative count or delay, or an unknown role or policy.
    """

    per_role: dict[str, str] = field(default_factory=dict)
    max_restarts: int = 3
    backoff: float = 1.0
    backoff_max: float = 30.0

    def __post_init__(self) -> None:
        if self.max_restarts < 0:
            raise ValueError(f"--max-restarts {self.max_restarts} must be 0 or more.")
        if self.backoff < 0 or self.backoff_max < self.backoff:
            raise ValueError(f"--restart-backoff {self.backoff:g} and --restart-backoff-max "
                             f"{self.backoff_max:g} must satisfy 0 <= backoff <= max.")
        for role, value in self.per_role.items():
            if (role != "*" and role not in ROLES) or value not in POLICIES:
                raise ValueError(f"restart policy {role}={value} is not ROLE=POLICY with a "
                                 f"role of {ROLES} and a policy of {POLICIES}.")

    def policy(self, role: str) -> str:
        """The policy of `role`: its own, else the default, else "never"."""
        return self.per_role.get(role, self.per_role.get("*", NEVER))

    @property
    def enabled(self) -> bool:
        """Whether any task may ever be restarted."""
        return any(p != NEVER for p in self.per_role.values()) and self.max_restarts > 0

    def delay(self, restart_number: int) -> float:
        """Seconds to wait before restart number `restart_number` (1-based) of a task."""
        return Backoff(self.backoff, 2.0, self.backoff_max).delay(restart_number)

    def check_roles(self, roles: set[str]) -> None:
        """Refuses a policy for a role the cluster does not have (a typo, or a missing
        --chief / --evaluator), instead of ignoring it."""
        extra = [r for r in self.per_role if r != "*" and r not in roles]
        if extra:
            raise ValueError(f"--restart names {', '.join(extra)}, which this cluster does not "
                             f"have (its roles: {', '.join(sorted(roles))}); add --chief or "
                             "--evaluator, or drop it.")

    def describe(self) -> str:
        """E.g. "ps=always, worker=on-failure" (the roles that are restarted)."""
        return ", ".join(f"{r}={self.policy(r)}" for r in ROLES
                         if self.policy(r) != NEVER) or "never"


_KUBERNETES = {NEVER: "Never", ON_FAILURE: "OnFailure", ALWAYS: "Always"}


def kubernetes_restart_policy(policy: str, job_pod: bool) -> str:
    """The pod `restartPolicy` that carries a launch policy into a manifest.

    Args:
        policy: never | on-failure | always.
        job_pod: True for the pod of a `batch/v1` Job, which Kubernetes allows only
            OnFailure or Never: there `always` becomes OnFailure. That keeps what
            matters to a ps (restarted in place, same DNS name, after any failure);
            an exit 0 ends a Job's task, which is how our tasks end a finished job.

    Example:
        >>> kubernetes_restart_policy("on-failure", job_pod=False)
        'OnFailure'
    """
    if job_pod and policy == ALWAYS:
        return "OnFailure"
    return _KUBERNETES[policy]


@dataclass
class PendingRestart:
    """A task waiting for its back-off to pass."""

    name: str
    due: float
    number: int  # this task's restart count once it has happened
    reason: str  # "killed by SIGKILL", "exit code 0", ...
    clean: bool  # exited 0 (always): dropped if the job ends meanwhile


class RestartBook:
    """Decides, per task exit, whether to restart, and keeps the counts and reasons
    the launcher reports (on its messages and the progress line).

    Args:
        policy: the restart policy.
    """

    def __init__(self, policy: RestartPolicy) -> None:
        self.policy = policy
        self.counts: dict[str, int] = {}
        self.last_reason: dict[str, str] = {}
        self.pending: dict[str, PendingRestart] = {}

    def on_exit(self, name: str, role: str, returncode: int, now: float) -> str | None:
        """Schedules a restart of task `name` if its policy wants one.

        Returns:
            The message to report: "restarting ... in Ns (restart k of N)", or
            "... not restarting it" when the restarts are used up; None when the
            policy does not restart this exit (the caller judges it as before).
        """
        policy = self.policy.policy(role)
        if policy == NEVER or (returncode == 0 and policy != ALWAYS):
            return None
        reason = describe_exit(returncode)
        used = self.counts.get(name, 0)
        if used >= self.policy.max_restarts:
            if returncode == 0:
                return None  # a clean exit that may not be restarted is simply the task's end
            return (f"{name} {reason} after {used} restart(s), the most --max-restarts "
                    f"{self.policy.max_restarts} allows; not restarting it")
        delay = self.policy.delay(used + 1)
        if returncode == 0:
            delay = max(delay, CLEAN_EXIT_SETTLE_S)
        self.pending[name] = PendingRestart(name, now + delay, used + 1, reason, returncode == 0)
        if returncode == 0:
            return (f"{name} exited 0 while the job runs; restarting it in {delay:g}s unless "
                    f"the job ends meanwhile, restart {used + 1} of "
                    f"{self.policy.max_restarts} (--restart {role}={policy})")
        return (f"restarting {name} ({reason}) in {delay:g}s, restart {used + 1} of "
                f"{self.policy.max_restarts} (--restart {role}={policy})")

    def due(self, now: float) -> list[PendingRestart]:
        """The pending restarts whose back-off has passed, removed from `pending`."""
        ready = [p for p in self.pending.values() if p.due <= now]
        for p in ready:
            del self.pending[p.name]
        return ready

    def started(self, pending: PendingRestart) -> None:
        """Records that `pending` was carried out."""
        self.counts[pending.name] = pending.number
        self.last_reason[pending.name] = pending.reason

    def cancel(self) -> list[PendingRestart]:
        """Drops every pending restart (the job has ended); returns them."""
        dropped = list(self.pending.values())
        self.pending.clear()
        return dropped

    def waiting(self, names: set[str]) -> bool:
        """Whether any task of `names` is waiting to be restarted."""
        return any(n in names for n in self.pending)

    def summary(self) -> str:
        """For the progress line, e.g. "restarted ps 0 x1 (killed by SIGKILL), worker 1
        restarting in 2s"; "" when nothing was restarted."""
        done = [f"{n} x{c} ({self.last_reason[n]})" for n, c in self.counts.items() if c]
        parts = (["restarted " + ", ".join(done)] if done else [])
        parts += [f"{p.name} restarting in {max(p.due - time.monotonic(), 0):.0f}s"
                  for p in self.pending.values()]
        return ", ".join(parts)

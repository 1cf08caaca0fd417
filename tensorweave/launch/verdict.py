"""How `tensorweave launch` judges a job's end, as Kubeflow's TFJob judges it.

The tasks that decide a job are the chief if there is one, else every worker, and an
evaluator (TFJob's default success policy). Once every deciding task has exited 0 the job
has succeeded, whatever the ps tasks do after: their fates are reported, never counted. A
task that fails before that is the job's failure: the first one stops the job (unless
`keep_going`), and the first deciding task's code is the exit code.

In an elastic job (`--max-workers`, launch/elastic.py) workers come and go, so only the
chief decides (the chief job, else worker 0, the seed programs' chief), with an
evaluator: another worker that ends, however it ends, has left the job; its fate is
reported on the last line, never turned into a failure.

`JobVerdict` keeps that record; `Launcher` (launch/launcher.py) feeds it the tasks' exits
and owns the processes.

Example:
    >>> verdict = JobVerdict()
    >>> verdict.decided(tasks)          # doctest: +SKIP
    >>> code, message = verdict.outcome(tasks)  # doctest: +SKIP
"""
from __future__ import annotations

from tensorweave.launch.process import TaskProcess, describe_exit, exit_code_of

__all__ = ["JobVerdict"]


class JobVerdict:
    """The record that decides a launched job's exit code.

    Attributes:
        first_failure: the exit code that stops the job (a training task's first, else
            the first of any task's); None while nothing has failed.
        deciding_failure: the first deciding task's failure, the job's exit code.
        fates: task name -> how it ended, reported for the serving tasks.
        left: an elastic job's workers that left it (not by finishing) -> how.
    """

    def __init__(self, elastic: bool = False) -> None:
        self.elastic = elastic
        self.first_failure: int | None = None
        self.deciding_failure: int | None = None
        self.fates: dict[str, str] = {}
        self.left: dict[str, str] = {}  # elastic job: worker name -> how it left
        self._training_failed = False

    def deciding(self, tasks: list[TaskProcess]) -> list[TaskProcess]:
        """The tasks whose success is the job's: the chief if there is one, else every
        worker (worker 0 alone in an elastic job); an evaluator too (TFJob's default
        success policy)."""
        jobs = {tp.task.job for tp in tasks}
        leader = "chief" if "chief" in jobs else "worker"
        return [tp for tp in tasks
                if (tp.task.job == leader and not (self.elastic and tp.task.index))
                or (tp.task.is_training and tp.task.job != "worker")]

    def decided(self, tasks: list[TaskProcess]) -> bool:
        """Whether every deciding task has exited 0: the job has succeeded."""
        return all(tp.returncode == 0 for tp in self.deciding(tasks))

    def record_failure(self, tp: TaskProcess, tasks: list[TaskProcess]) -> None:
        """Counts `tp`'s non-zero exit, which happened before the job was decided."""
        code = exit_code_of(tp.returncode or 1)
        if self.first_failure is None or (tp.task.is_training and not self._training_failed):
            self.first_failure = code
        self._training_failed = self._training_failed or tp.task.is_training
        if tp in self.deciding(tasks) and self.deciding_failure is None:
            self.deciding_failure = code

    def record_overstay(self, serving: list[TaskProcess], grace: float) -> None:
        """Notes the fate of ps tasks stopped `grace` seconds after training ended."""
        for tp in serving:
            how = describe_exit(tp.returncode) if tp.returncode is not None else "stopped"
            self.fates[tp.task.name] = f"stopped after --ps-grace {grace:g}s ({how})"

    def outcome(self, tasks: list[TaskProcess]) -> tuple[int, str]:
        """The exit code once every task has ended, and the line that reports it: the
        deciding tasks' verdict, with each serving task's fate beside it."""
        fates = [f"{tp.task.name} {self.fates[tp.task.name]}" for tp in tasks
                 if not tp.task.is_training and tp.task.name in self.fates]
        fates += [f"{name} {how}" for name, how in self.left.items()]
        code = self.deciding_failure if self.deciding_failure is not None else 0
        verdict = ("the chief" if "chief" in {tp.task.job for tp in tasks}
                   else "worker 0 (the chief)" if self.elastic else "every worker")
        if code == 0:
            return 0, (f"all tasks finished: {verdict} succeeded"
                       + (f"; {'; '.join(fates)}" if fates else "") + "; exit code 0")
        return code, f"exit code {code}" + (f" ({'; '.join(fates)})" if fates else "")

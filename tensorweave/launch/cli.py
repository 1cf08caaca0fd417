"""The `tensorweave` command: `launch`, `scale`, `server`, `manifest` and `dashboard`.

Example:
    $ tensorweave launch --ps 1 --workers 2 --pass-flags -- python examples/trainer.py
    $ tensorweave server --job ps --task 0 --cluster '{"ps": ["h0:2222"], "worker": ["h1:2222"]}'
    $ tensorweave manifest --ps 1 --workers 2 --image me/train:1 -- python /app/trainer.py
    $ tensorweave launch --tls --pass-flags -- python examples/trainer.py   # mutual TLS
    $ tensorweave launch --workers 1 --max-workers 3 --logdir /tmp/run -- python t.py
    $ tensorweave scale /tmp/run --workers 3
    $ tensorweave dashboard --cluster '{"ps": ["h0:2222"], "worker": ["h1:2222"]}'
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

__all__ = ["build_parser", "main"]

_EPILOG_COMMAND = "Everything after '--' is the program each task runs, with its arguments."


def _launch_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "launch", help="run a program as a whole cluster on this machine",
        description="Start one process of COMMAND per task (ps, workers, optional chief) on "
                    "free loopback ports, each with TF_CONFIG set for its task; prefix their "
                    "output with [job index], show training progress, stop them all on "
                    "Ctrl-C. " + _EPILOG_COMMAND,
        usage="tensorweave launch [options] -- COMMAND [ARGS...]")
    p.add_argument("--ps", type=int, default=1, metavar="N", help="ps tasks (default 1)")
    p.add_argument("--workers", type=int, default=2, metavar="M",
                   help="worker tasks (default 2)")
    p.add_argument("--max-workers", type=int, metavar="M",
                   help="an elastic job: the ClusterSpec has M worker slots, --workers of "
                        "them start, `tensorweave scale` starts and stops the others, and a "
                        "worker other than the chief that ends leaves the job instead of "
                        "failing it (async training)")
    p.add_argument("--chief", action="store_true",
                   help="add a separate 'chief' job of one task to TF_CONFIG")
    p.add_argument("--evaluator", action="store_true",
                   help="add an evaluator task (TF_CONFIG task type 'evaluator', not in the "
                        "cluster) for tf.estimator.train_and_evaluate")
    p.add_argument("--ps-standby", type=int, default=0, metavar="N",
                   help="add N tasks of a 'ps_standby' job (bare servers) that hold live "
                        "replicas of the ps tasks' state, and turn replication on: a ps "
                        "restarted (--restart ps=on-failure) carries on from its replica, "
                        "not the last checkpoint (docs/robustness.md)")
    p.add_argument("--pass-flags", action="store_true",
                   help="also append --ps_hosts --worker_hosts --job_name --task_index (the "
                        "seed programs' flags; worker 0 is the chief)")
    p.add_argument("--logdir", metavar="DIR",
                   help="write each task's full output to DIR/<job>-<index>.log")
    p.add_argument("--timeout", type=float, metavar="SECS",
                   help="stop everything after SECS seconds (exit code 124)")
    p.add_argument("--ps-grace", type=float, default=60.0, metavar="SECS",
                   help="how long ps tasks may run after the last worker ended before they "
                        "are stopped and reported (default 60)")
    p.add_argument("--kill-grace", type=float, default=10.0, metavar="SECS",
                   help="seconds between SIGTERM and SIGKILL when stopping tasks (default 10)")
    p.add_argument("--keep-going", action="store_true",
                   help="when a task fails, let the others run on instead of stopping them")
    p.add_argument("--progress-interval", type=float, default=5.0, metavar="SECS",
                   help="seconds between progress lines when stderr is not a terminal "
                        "(default 5)")
    p.add_argument("--no-progress", action="store_true", help="do not show the progress line")
    _restart_arguments(p)
    from tensorweave.launch.dashboard.entry import add_launch_flags
    add_launch_flags(p)
    p.set_defaults(run=_run_launch, takes_command=True)


def _restart_spec(value: str) -> dict[str, str]:
    from tensorweave.launch.restart import parse_restart

    try:
        return parse_restart(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _restart_arguments(p: argparse.ArgumentParser) -> None:
    """--restart and friends (launch/restart.py has the semantics)."""
    p.add_argument("--restart", type=_restart_spec, default={}, metavar="POLICY",
                   help="restart tasks that end while the job runs: never (default), "
                        "on-failure, always, or per role, e.g. ps=always,worker=on-failure; "
                        "a restarted ps comes back on its port, the chief restores the last "
                        "checkpoint")
    p.add_argument("--max-restarts", type=int, default=3, metavar="N",
                   help="restarts allowed per task (default 3); then the job fails")
    p.add_argument("--restart-backoff", type=float, default=1.0, metavar="SECS",
                   help="wait before a task's first restart, doubled for each next one "
                        "(default 1)")
    p.add_argument("--restart-backoff-max", type=float, default=30.0, metavar="SECS",
                   help="the longest wait between restarts (default 30)")


def _server_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "server", help="run one bare server task of a multi-machine cluster",
        description="Start a tensorweave server for one task and serve until the chief "
                    "reports the job done (exit 0) or SIGTERM/SIGINT stops it. Without "
                    "--cluster/--job/--task they come from TF_CONFIG.")
    p.add_argument("--job", help="this task's job name, e.g. ps (default: TF_CONFIG task.type)")
    p.add_argument("--task", type=int, metavar="INDEX",
                   help="this task's index in its job (default: TF_CONFIG task.index)")
    p.add_argument("--cluster", metavar="JSON",
                   help="the cluster as JSON {\"ps\": [\"host:port\", ...], \"worker\": "
                        "[...]} or @FILE (default: TF_CONFIG cluster)")
    p.add_argument("--bind-all", action="store_true",
                   help="listen on every interface, not only the task address's host")
    p.add_argument("--keep-running", action="store_true",
                   help="do not exit when the job is done (TF 1.x behaviour)")
    p.add_argument("--done-grace", type=float, default=60.0, metavar="SECS",
                   help="after the job is done, how long to wait for open worker sessions "
                        "(default 60)")
    p.set_defaults(run=_run_server, takes_command=False)


def _scale_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "scale", help="change the number of workers of a running elastic launch",
        description="Ask a running `tensorweave launch --max-workers M` to run N workers: "
                    "it starts the lowest empty worker slots or stops the highest running "
                    "workers (SIGTERM). Without --workers, print the job's workers.")
    p.add_argument("job", metavar="JOB", help="the launch's --logdir, or the id it printed")
    p.add_argument("--workers", type=int, metavar="N", help="workers to run from now on")
    p.set_defaults(run=_run_scale, takes_command=False)


def _run_scale(args: argparse.Namespace, command: list[str]) -> int:
    from tensorweave.launch.control import request

    payload: dict = ({"op": "status"} if args.workers is None
                     else {"op": "scale", "workers": args.workers})
    reply = request(args.job, payload)
    if not reply.get("ok"):
        raise ValueError(str(reply.get("error")))
    pids = reply.get("pids", {})
    print(f"tensorweave scale: {reply['message']}; running: "
          + (", ".join(f"worker {i} (pid {pids[i]})" for i in sorted(pids, key=int))
             or "none"))
    return 0


def _manifest_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "manifest", help="write Kubernetes manifests (Kubeflow TFJob and/or plain objects)",
        description="Write multi-document YAML that runs COMMAND as a ps/worker cluster on "
                    "Kubernetes: a Kubeflow TFJob (the operator sets TF_CONFIG), or plain "
                    "headless Services plus one Job per task with TF_CONFIG written in. "
                    + _EPILOG_COMMAND,
        usage="tensorweave manifest [options] --image IMAGE -- COMMAND [ARGS...]")
    p.add_argument("--ps", type=int, default=1, metavar="N", help="ps tasks (default 1)")
    p.add_argument("--workers", type=int, default=2, metavar="M",
                   help="worker tasks (default 2)")
    p.add_argument("--chief", action="store_true", help="add a Chief role of one task")
    p.add_argument("--ps-standby", type=int, default=0, metavar="N",
                   help="(--kind plain) add N ps_standby tasks, bare servers that hold live "
                        "replicas of the ps tasks' state, and turn replication on in every "
                        "task (docs/robustness.md)")
    p.add_argument("--evaluator", action="store_true",
                   help="add an Evaluator role of one task (tf.estimator.train_and_evaluate; "
                        "model_dir must be storage that every task shares)")
    p.add_argument("--image", required=True, help="container image holding the program")
    p.add_argument("--port", type=int, default=2222, help="task port (default 2222)")
    p.add_argument("--name", default="tensorweave", help="job name, a DNS label")
    p.add_argument("--namespace", default="default", help="Kubernetes namespace")
    p.add_argument("--kind", choices=("tfjob", "plain", "both"), default="tfjob",
                   help="tfjob (needs the Kubeflow training operator), plain (core "
                        "Kubernetes only) or both (default tfjob)")
    p.add_argument("--pass-flags", action="store_true",
                   help="(plain only) append the seed flags --ps_hosts --worker_hosts "
                        "--job_name --task_index to each task's arguments")
    p.add_argument("--restart-policy", default=None,
                   choices=("OnFailure", "Never", "Always", "ExitCode"),
                   help="pod restart policy of every role (default OnFailure; ExitCode is "
                        "TFJob only)")
    p.add_argument("--restart", type=_restart_spec, default=None, metavar="POLICY",
                   help="restart policy per role as tensorweave launch takes it (never, "
                        "on-failure, always, or e.g. ps=always,worker=on-failure), instead of "
                        "--restart-policy; plain Jobs write always as OnFailure")
    p.add_argument("--max-restarts", type=int, default=None, metavar="N",
                   help="restarts per task: each plain Job's backoffLimit (default 3 with "
                        "--restart, else 6), summed over the tasks into the TFJob's")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="extra environment variable for every container (repeatable)")
    p.add_argument("--no-prometheus", action="store_true",
                   help="leave out the prometheus.io/scrape, port and path annotations of the "
                        "task pods (docs/kubernetes.md#prometheus-and-grafana)")
    p.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout")
    p.set_defaults(run=_run_manifest, takes_command=True)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the `tensorweave` command (COMMAND after '--' excluded)."""
    parser = argparse.ArgumentParser(
        prog="tensorweave", description="Run tensorweave (TF 1.x) programs as clusters.")
    sub = parser.add_subparsers(dest="subcommand",
                                metavar="{launch,scale,server,manifest,dashboard,certs}")
    sub.required = True
    _launch_parser(sub)
    _scale_parser(sub)
    _server_parser(sub)
    _manifest_parser(sub)
    from tensorweave.launch.dashboard.entry import add_dashboard_parser
    add_dashboard_parser(sub)
    _credential_flags(sub)
    return parser


def _credential_flags(sub: argparse._SubParsersAction) -> None:
    """Authentication and TLS (launch/credentials.py): flags and `tensorweave certs`."""
    from tensorweave.launch import credentials

    credentials.add_launch_flags(sub.choices["launch"])
    credentials.add_server_flags(sub.choices["server"])
    credentials.add_server_flags(sub.choices["dashboard"])  # the token and TLS to scrape with
    credentials.add_manifest_flags(sub.choices["manifest"])
    credentials.add_certs_parser(sub)
    from tensorweave.launch.file_flags import add_allow_dir_flag, add_allow_from_flag
    for name in ("launch", "server"):
        add_allow_dir_flag(sub.choices[name])
        add_allow_from_flag(sub.choices[name])


def _run_launch(args: argparse.Namespace, command: list[str]) -> int:
    from tensorweave.launch.launcher import Launcher, LaunchOptions
    from tensorweave.launch.restart import RestartPolicy

    options = LaunchOptions(
        ps=args.ps, workers=args.workers, chief=args.chief, evaluator=args.evaluator,
        pass_flags=args.pass_flags, ps_standby=args.ps_standby, max_workers=args.max_workers,
        logdir=args.logdir, timeout=args.timeout, ps_grace=args.ps_grace,
        kill_grace=args.kill_grace, keep_going=args.keep_going,
        progress_interval=args.progress_interval, progress=not args.no_progress,
        dashboard=args.dashboard, dashboard_host=args.dashboard_host,
        restart=RestartPolicy(args.restart, max_restarts=args.max_restarts,
                              backoff=args.restart_backoff,
                              backoff_max=args.restart_backoff_max))
    from tensorweave.launch.credentials import run_with_credentials
    from tensorweave.launch.file_flags import apply_allow_dirs, apply_allow_from
    apply_allow_dirs(args)  # the tasks inherit TENSORWEAVE_ALLOW_DIRS
    apply_allow_from(args)  # and TENSORWEAVE_ALLOW_FROM
    return run_with_credentials(args, options, Launcher(command, options).run)


def _run_server(args: argparse.Namespace, command: list[str]) -> int:
    from tensorweave.launch.server_cli import configure_logging, resolve_task, serve

    from tensorweave.launch.credentials import apply_server_flags
    configure_logging()
    apply_server_flags(args)
    from tensorweave.launch.file_flags import apply_allow_dirs, apply_allow_from
    apply_allow_dirs(args)
    apply_allow_from(args)
    cluster, job, index = resolve_task(args.cluster, args.job, args.task)
    return serve(cluster, job, index, bind_all=args.bind_all,
                 exit_when_done=not args.keep_running, done_grace=args.done_grace)


def _run_manifest(args: argparse.Namespace, command: list[str]) -> int:
    from tensorweave.launch.manifest import ManifestOptions, build_manifests, to_yaml

    if args.restart is not None and args.restart_policy is not None:
        raise ValueError("give --restart (per role) or --restart-policy (every role), not "
                         "both.")
    env = {}
    for item in args.env:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"--env {item!r} must be NAME=VALUE.")
        env[name] = value
    options = ManifestOptions(
        ps=args.ps, workers=args.workers, image=args.image, command=command,
        chief=args.chief, evaluator=args.evaluator, port=args.port, name=args.name,
        namespace=args.namespace,
        kind=args.kind, pass_flags=args.pass_flags,
        restart_policy=args.restart_policy or "OnFailure", restart=args.restart,
        max_restarts=args.max_restarts, env=env, ps_standby=args.ps_standby,
        prometheus=not args.no_prometheus)
    header = "# Generated by: tensorweave manifest\n"
    if args.kind != "plain":
        header += ("# Worker replicas of a running TFJob: fewer is fine (async training goes "
                   "on); more cannot join, as the ps pods keep their TF_CONFIG: see "
                   "docs/kubernetes.md#changing-the-number-of-workers.\n")
    if args.kind == "both":
        header += ("# Both designs follow: apply only ONE of them (the TFJob, or the Services "
                   "and Jobs), or the program runs twice.\n")
    from tensorweave.launch.credentials import secure_manifests
    docs = secure_manifests(build_manifests(options), args, args.name, args.namespace)
    if docs and docs[0]["kind"] == "Secret":
        header += (f"# The Secret {docs[0]['metadata']['name']} holds the job's generated auth "
                   "token: keep this file private (--insecure: no token).\n")
    text = to_yaml(docs, header)
    if args.out:
        # It may hold a token: readable by its owner only, as `tensorweave certs` writes.
        with open(os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(text)
        print(f"tensorweave manifest: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the `tensorweave` command; returns its exit code.

    Args:
        argv: the arguments (without the program name); None reads sys.argv.

    Example:
        >>> main(["manifest", "--image", "img", "--", "python", "t.py"])  # doctest: +SKIP
        0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after the first "--" is the tasks' command, never our options.
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1:]
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.takes_command and not command:
        parser.error(f"{args.subcommand}: no COMMAND; put the program after '--', e.g. "
                     f"tensorweave {args.subcommand} ... -- python train.py")
    if not args.takes_command and command:
        parser.error(f"{args.subcommand} takes no command after '--' (got {command}).")
    try:
        return int(args.run(args, command))
    except ValueError as e:
        print(f"tensorweave {args.subcommand}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130

#!/usr/bin/env bash
# One entry point for people and CI: sets up .venv (Python 3.11+) on first use.
#   ./dev.sh train          a real training run: 1 ps + 2 workers on this machine (see README)
#   ./dev.sh train-local    the same model in one process, one tf.Session
#   ./dev.sh test [ARGS]    the checks below, then the test suite (ARGS go to pytest)
#   ./dev.sh check          only the checks: import layers, ruff, mypy
#   ./dev.sh protos         regenerate *_pb2.py and *_pb2.pyi from the .proto files
#   ./dev.sh bench          the benchmarks under bench/
set -euo pipefail
cd "$(dirname "$0")"
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.tensorweave-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  # --no-compile: a fresh venv's setup was 15 s, a third of it compiling every installed
  # module; the few the suite imports are compiled when first imported (see below).
  .venv/bin/python -m pip install -q --no-compile -e ".[test]"
  touch "$stamp"
fi
# Bytecode: each test starts task processes, and each imports tensorweave's ~575 modules; with
# no __pycache__ every one compiles them all again (1.0 s of CPU each, 0.45 s from .pyc: the
# suite spent half its CPU there). Images often set PYTHONDONTWRITEBYTECODE=1; this clone's
# __pycache__ folders (ignored by git) are written anyway.
unset PYTHONDONTWRITEBYTECODE
# The fast checks `test` runs before pytest (a few seconds; mypy keeps a cache):
# import layers (contracts in pyproject.toml), ruff, mypy, sizes, ops/ modules, TENSORWEAVE_*
# variables read only by tensorweave/base/knobs.py, docs/configuration.md generated from it.
# mypy (the longest, ~12 s without its cache) runs beside the others: each alone uses one core.
checks() {
  local out dir
  dir=$(mktemp -d)
  .venv/bin/mypy >"$dir/mypy" 2>&1 &
  local mypy=$!
  { out=$(.venv/bin/lint-imports --no-logo --no-cache 2>&1) || { echo "$out"; false; } &&
    echo "import layers: ${out##*$'\n'}" &&
    .venv/bin/ruff check --quiet . &&
    .venv/bin/python tools/sizes.py &&
    .venv/bin/python tools/check_ops_modules.py &&  # ops/ holds op definitions only
    .venv/bin/python tools/check_env_reads.py &&
    .venv/bin/python tools/gen_configuration_doc.py --check; } || { wait $mypy; rm -rf "$dir"; return 1; }
  wait $mypy || { cat "$dir/mypy"; rm -rf "$dir"; return 1; }
  cat "$dir/mypy"
  rm -rf "$dir"
}
cmd=${1:-test}
shift || true
case "$cmd" in
  train)
    # The main job: seed 002's trainer on a local cluster of 1 ps + 2 workers (real
    # processes on loopback), on the shipped handwritten digits; TensorBoard logs in
    # logs/train (see README).
    rm -rf logs/train
    exec .venv/bin/tensorweave launch --ps 1 --workers 2 --pass-flags --logdir logs/train \
      -- .venv/bin/python examples/trainer.py --train_steps=1500 --hidden=128 \
         --checkpoint_dir=logs/train --log_every=250 "$@" ;;
  train-local) exec .venv/bin/python examples/train_local.py "$@" ;;
  check) checks || exit 1 ;;
  test)
    checks || exit 1
    exec .venv/bin/python -m pytest "$@" ;;
  protos)
    # Regenerates the *_pb2.py modules and their mypy stubs (*_pb2.pyi) from the .proto files,
    # in a venv of their own: the pinned protoc (pyproject's "dev" extra) writes gencode old
    # enough for the low end of the protobuf range, and .venv keeps its own protobuf.
    [ -x .venv-protos/bin/python ] || "$PY" -m venv .venv-protos
    .venv-protos/bin/python -m pip install -q -e ".[dev]"
    PATH="$PWD/.venv-protos/bin:$PATH" .venv-protos/bin/python -m grpc_tools.protoc -I. \
      --python_out=. --mypy_out=. \
      tensorweave/framework/proto/*.proto tensorweave/distributed/protocol/*.proto ;;
  bench) exec .venv/bin/python -m bench "$@" ;;
  *) echo "usage: ./dev.sh train|train-local|test|check|protos|bench [args]" >&2; exit 2 ;;
esac

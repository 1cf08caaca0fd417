"""`import tensorweave` loads what every process needs, not what few use: each task and
program process pays its import (the suite starts ~430 of them). tf.estimator,
tf.distribute, tf.test, tf.keras, tf.layers, tf.feature_column and the tf.contrib parts load
when first named; Pillow, tarfile and
urllib when an image or a download first needs them; the distributed runtime with the
first Server or grpc:// session. The collector is paused while the package loads, and
left as it was found."""
from __future__ import annotations

import json
import subprocess
import sys

LAZY = ["tensorweave.estimator", "tensorweave.distribute", "tensorweave.testing.tf_test",
        "tensorweave.keras", "tensorweave.layers", "tensorweave.feature_column",
        "tensorweave.contrib.layers", "tensorweave.contrib.slim", "tensorweave.contrib.training",
        "tensorweave.distributed.server", "PIL.Image", "tarfile", "urllib.request"]


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport json, sys\n"
                          f"print(json.dumps([m for m in {LAZY!r} if m in sys.modules]))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.splitlines()[-1]))


def test_import_tensorweave_leaves_the_rarely_used_parts_unloaded():
    assert _loaded_after("import tensorweave as tf") == set()


def test_each_part_loads_when_first_named():
    code = ("import tensorweave as tf\n"
            "tf.estimator.RunConfig; tf.distribute.cluster_resolver; tf.test.TestCase\n"
            "tf.contrib.layers.fully_connected; tf.contrib.slim; tf.contrib.training\n"
            "tf.keras.layers.Dense; tf.layers.dense; tf.feature_column.numeric_column\n"
            "from tensorweave import estimator\n"
            "assert 'estimator' in dir(tf) and 'layers' in dir(tf.contrib)")
    assert _loaded_after(code) >= {"tensorweave.estimator", "tensorweave.distribute",
                                   "tensorweave.testing.tf_test", "tensorweave.contrib.layers",
                                   "tensorweave.contrib.slim", "tensorweave.contrib.training",
                                   "tensorweave.keras", "tensorweave.layers",
                                   "tensorweave.feature_column"}


def test_compat_v1_names_the_lazy_parts_too():
    code = ("import tensorweave as tf\n"
            "assert tf.compat.v1.layers.dense is tf.layers.dense\n"
            "assert tf.compat.v1.keras is tf.keras")
    assert _loaded_after(code) >= {"tensorweave.keras", "tensorweave.layers"}


def test_the_collector_is_left_as_it_was_found():
    """On stays on, off stays off (a program that turned it off keeps it off), and a
    failed import leaves it on (here: a module of the package cannot be imported)."""
    def gc_after(code: str) -> str:
        return subprocess.run([sys.executable, "-c", code + "\nimport gc; print(gc.isenabled())"],
                              capture_output=True, text=True, check=True,
                              timeout=120).stdout.split()[-1]
    assert gc_after("import tensorweave") == "True"
    assert gc_after("import gc; gc.disable(); import tensorweave") == "False"
    failing = ("import sys\n"
               "sys.modules['tensorweave.nn'] = None  # importing it raises ImportError\n"
               "try:\n"
               "    import tensorweave\n"
               "except ImportError:\n"
               "    print('failed')\n")
    assert gc_after(failing) == "True"
    assert "failed" in subprocess.run([sys.executable, "-c", failing], capture_output=True,
                                      text=True, check=True, timeout=120).stdout


def test_a_grpc_session_loads_the_distributed_runtime_by_itself():
    """No Server in this process: the grpc:// session finds its backend all the same (it
    fails to reach a port where nothing listens, which is the point: not NotFoundError)."""
    code = ("import tensorweave as tf\n"
            "from tensorweave.distributed.topology import free_ports\n"
            "port = free_ports(1)[0]\n"
            "try:\n"
            "    tf.Session(f'grpc://127.0.0.1:{port}', config=tf.ConfigProto("
            "operation_timeout_in_ms=500)).run(tf.constant(1))\n"
            "except tf.errors.NotFoundError as e:\n"
            "    raise SystemExit(f'no backend: {e}')\n"
            "except tf.errors.OpError:\n"
            "    pass")
    assert "tensorweave.distributed.server" in _loaded_after(code)

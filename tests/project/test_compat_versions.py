"""tf.compat (as_bytes/as_text, tf.compat.v1 as the whole TF1 API), tf.__version__ /
tf.VERSION / tf.version, and the eager-mode switches TF 1.13+ programs call."""
import pathlib
import subprocess
import sys

import pytest

import tensorweave as tf
from suite_paths import REPO_ROOT


def test_compat_v1_is_the_top_level_api():
    assert tf.compat.v1.Session is tf.Session
    assert tf.compat.v1.train.AdamOptimizer is tf.train.AdamOptimizer
    assert tf.compat.v1.placeholder is tf.placeholder and tf.compat.v1.compat is tf.compat
    assert "Session" in dir(tf.compat.v1)
    with pytest.raises(AttributeError, match="does not offer tf.no_such_thing"):
        tf.compat.v1.no_such_thing  # noqa: B018 - the lookup is what raises


def test_import_compat_v1_as_tf_runs_a_tf1_program():
    code = (
        "import tensorweave.compat.v1 as tf\n"
        "tf.disable_v2_behavior()\n"
        "tf.disable_eager_execution()\n"
        "x = tf.placeholder(tf.float32, [None, 2])\n"
        "w = tf.get_variable('w', initializer=tf.constant([[1.0], [2.0]]))\n"
        "y = tf.matmul(x, w)\n"
        "with tf.Session() as s:\n"
        "    s.run(tf.global_variables_initializer())\n"
        "    print(s.run(y, {x: [[3.0, 4.0]]}).tolist(), tf.executing_eagerly())\n")
    root = REPO_ROOT
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=root, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[[11.0]] False"


def test_text_helpers():
    assert tf.compat.as_bytes("ids") == b"ids" and tf.compat.as_bytes(bytearray(b"a")) == b"a"
    assert tf.compat.as_text(b"\xc3\xa9") == "\u00e9" and tf.compat.as_str("x") == "x"
    assert tf.compat.as_str_any(b"a") == "a" and tf.compat.as_str_any(3) == "3"
    assert tf.compat.path_to_str(pathlib.Path("/a/b")) == "/a/b"
    assert isinstance(3, tf.compat.integral_types)
    assert isinstance(b"", tf.compat.bytes_or_text_types)
    with pytest.raises(TypeError, match="got 3"):
        tf.compat.as_bytes(3)
    with pytest.raises(TypeError, match="got None"):
        tf.compat.as_text(None)


def test_versions_and_modes():
    assert tf.__version__ == tf.VERSION == tf.version.VERSION == "1.15.0"
    assert tf.__version__.startswith("1.") and tf.version.TENSORWEAVE_VERSION
    assert tf.GRAPH_DEF_VERSION == tf.Graph().as_graph_def().versions.producer
    assert tf.executing_eagerly() is False
    assert tf.disable_eager_execution() is None and tf.disable_v2_behavior() is None
    with pytest.raises(ValueError, match="no eager execution"):
        tf.enable_eager_execution()
    with pytest.raises(ValueError, match="TF 1.x API only"):
        tf.enable_v2_behavior()

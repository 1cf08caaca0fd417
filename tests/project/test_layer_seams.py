"""The seams between layers: what a higher layer registers with a lower one.

The import rules themselves are checked by `lint-imports` (contracts in
pyproject.toml) before pytest runs; these tests check that the registrations
behave: session backends by URL scheme, the default session, and the gradients
function that If/While gradients call.
"""
import ast
import subprocess
import sys

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.client import session as session_mod
from tensorweave.framework import op_def
from tensorweave.framework.tensor import default_session

pytestmark = pytest.mark.usefixtures("graph")


class RecordingRuntime:
    """A session backend that answers every fetch with its own target string."""

    created: list[str] = []

    def __init__(self, target, graph, config):
        self.target = target
        RecordingRuntime.created.append(target)

    def run(self, feed_tensors, feed_values, fetch_tensors, targets, step):
        return [np.array(self.target.encode(), dtype=object) for _ in fetch_tensors]

    def close(self):
        pass


@pytest.fixture
def fake_scheme(monkeypatch):
    # By "module:attribute": the client imports the backend only on first use.
    monkeypatch.setitem(session_mod._BACKENDS, "twfake", f"{__name__}:RecordingRuntime")
    RecordingRuntime.created.clear()
    return "twfake"


def test_a_backend_registered_by_name_serves_its_scheme(fake_scheme):
    c = tf.constant(1.0)
    with tf.Session("twfake://somewhere:1") as sess:
        assert sess.run(c) == b"twfake://somewhere:1"
    assert RecordingRuntime.created == ["twfake://somewhere:1"]
    # Resolved once, then kept as the class itself.
    assert session_mod._BACKENDS["twfake"] is RecordingRuntime


def test_an_unknown_scheme_names_the_target_and_the_accepted_forms():
    with pytest.raises(tf.errors.NotFoundError, match=r"nope://x:1.*grpc://host:port"):
        tf.Session("nope://x:1")


def test_grpc_is_registered_by_the_distributed_layer_without_the_client_importing_it():
    assert "grpc" in session_mod._BACKENDS
    tree = ast.parse(open(session_mod.__file__).read())
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)] + \
        [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m and m.startswith("tensorweave.distributed")]


def test_tensor_eval_finds_the_default_session_the_client_registered():
    c = tf.constant(3.0)
    assert default_session() is None
    with tf.Session() as sess, sess.as_default():
        assert default_session() is sess
        assert c.eval() == 3.0
    assert default_session() is None


def test_eval_without_a_default_session_says_how_to_get_one():
    c = tf.constant(3.0)
    with pytest.raises(ValueError, match="no default session is registered.*as_default"):
        c.eval()


def test_cond_gradient_uses_the_registered_gradients_function(monkeypatch):
    calls = []
    real = op_def._symbolic_gradients

    def counting(ys, xs, grad_ys=None):
        calls.append(len(ys))
        return real(ys, xs, grad_ys=grad_ys)

    monkeypatch.setattr(op_def, "_symbolic_gradients", counting)
    x = tf.placeholder(tf.float32, [])
    y = tf.cond(x > 0, lambda: x * x, lambda: -x)
    (g,) = tf.gradients(y, [x])
    assert calls, "the If gradient did not go through the registered function"
    with tf.Session() as sess:
        assert sess.run(g, {x: 3.0}) == 6.0
        assert sess.run(g, {x: -2.0}) == -1.0


def test_without_autodiff_a_body_gradient_asks_for_it(monkeypatch):
    monkeypatch.setattr(op_def, "_symbolic_gradients", None)
    with pytest.raises(RuntimeError, match="import tensorweave.autodiff.gradients"):
        op_def.symbolic_gradients([], [])


def test_importing_tensorweave_does_not_import_the_session_backend_module():
    # The grpc backend module is imported on the first grpc:// session, not before
    # (run in a fresh interpreter so earlier tests do not count).
    code = ("import sys, tensorweave; "
            "print('tensorweave.distributed.session' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"

"""Op and scope names TF 1.x refuses are refused here, with TF's phrase.

TF checks an op's full name against `[A-Za-z0-9.][A-Za-z0-9_.\\-/]*` ("'a b' is not
a valid node name") and a name scope's name when it is opened: at the root by the
same rule, inside another scope by `[A-Za-z0-9_.\\-/]*` ("... is not a valid scope
name"). Variables open a scope of their name, so `tf.get_variable('a b')` fails
there. Summary tags are cleaned, not refused (tests/summary/test_summary_clean_tag.py).
"""
from __future__ import annotations

from typing import Any, Callable

import pytest

import tensorweave as tf


def _in_scope(outer: str, inner: str) -> str:
    with tf.name_scope(outer):
        with tf.name_scope(inner) as scope:
            return scope


def _variable_scope(name: str) -> str:
    with tf.variable_scope(name) as scope:
        return scope.name


REFUSED: list[tuple[str, Callable[[], Any], str]] = [
    ("constant with a space", lambda: tf.constant(1, name="a b"), "not a valid node name"),
    ("op name starting with _", lambda: tf.constant(1, name="_c"), "not a valid node name"),
    # identity opens its name scope first (as TF 1.x's op wrappers do): the scope rule refuses it
    ("op name with >", lambda: tf.identity(1, name="a>b"), "not a valid scope name"),
    ("placeholder", lambda: tf.placeholder(tf.float32, name="x:0"), "not a valid node name"),
    ("get_variable", lambda: tf.get_variable("a b", [1]), "not a valid scope name"),
    ("Variable", lambda: tf.Variable(1.0, name="e f"), "not a valid scope name"),
    ("root name_scope", lambda: _in_scope("a b", "x"), "not a valid scope name"),
    ("root name_scope starting with _", lambda: _in_scope("_y", "x"),
     "not a valid scope name"),
    ("re-entered scope", lambda: _in_scope("a b/", "x"), "not a valid scope name"),
    ("nested name_scope", lambda: _in_scope("outer", "a b"), "not a valid scope name"),
    ("variable_scope", lambda: _variable_scope("a b"), "not a valid scope name"),
]


@pytest.mark.parametrize("what, build, phrase", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_as_tf_does(what: str, build: Callable[[], Any], phrase: str) -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=phrase) as info:
            build()
    assert "must match" in str(info.value) or "has to match" in str(info.value), what


def test_names_tf_accepts() -> None:
    with tf.Graph().as_default():
        assert _in_scope("outer", "_inner") == "outer/_inner/"  # '_' allowed when nested
        with tf.name_scope("o"):
            assert tf.constant(1, name="_c").op.name == "o/_c"  # full name starts with 'o'
        assert tf.constant(1, name=".x-y/z_1").op.name == ".x-y/z_1"
        assert tf.constant(1, name="x/").op.name == "x"  # a scope's name names the op
        assert tf.get_variable("v.1-2", [1]).op.name == "v.1-2"


def test_error_names_the_op_type() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"'a b' is not a valid node name \(creating a "
                                             r"Const op\)"):
            tf.constant(1, name="a b")


def test_summary_tags_are_still_cleaned() -> None:
    with tf.Graph().as_default():
        summary = tf.summary.scalar("local3/weight_loss (raw)", tf.constant(1.0))
        assert " " not in summary.op.name


def test_a_refused_name_leaves_no_graph_or_scope_entered():
    before = tf.get_default_graph()
    for _, build, message in REFUSED:
        with pytest.raises(ValueError, match=message):
            build()
        with pytest.raises(ValueError, match="not a valid scope name"):
            with tf.name_scope("a b"):
                pass
        assert tf.get_default_graph() is before
    g = tf.get_default_graph()
    assert tf.get_variable_scope().name == "" and g.get_name_scope() == ""
    assert tf.constant(1.0, name="after").op.name == "after"
    tf.reset_default_graph()  # refuses while a graph is still entered

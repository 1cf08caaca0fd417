"""Summary names TF 1.x cleans instead of refusing, and the tags it writes for them."""
import logging

import pytest

import tensorweave as tf
from tensorweave.summary.summary import clean_tag


def _tag(summary_tensor):
    """The tag constant a summary op was built with."""
    with tf.Session() as sess:
        return sess.run(summary_tensor.op.inputs[0]).decode()


@pytest.fixture(autouse=True)
def _fresh_graph():
    tf.reset_default_graph()


def test_clean_tag_replaces_invalid_characters_and_leading_slashes():
    assert clean_tag("local3/weight_loss (raw)") == "local3/weight_loss__raw_"
    assert clean_tag("//lead") == "lead"
    assert clean_tag("ok-name/x.y_1") == "ok-name/x.y_1"
    assert clean_tag(None) is None


def test_scalar_with_an_invalid_name_is_cleaned_and_logged(caplog):
    with caplog.at_level(logging.INFO, logger="tensorweave"):
        s = tf.summary.scalar("local3/weight_loss (raw)", tf.constant(1.0))
    assert s.op.name == "local3/weight_loss__raw_"
    assert _tag(s) == "local3/weight_loss__raw_"
    assert any("weight_loss (raw) is illegal" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("fn,arg", [
    (tf.summary.histogram, [1.0, 2.0]),
    (tf.summary.tensor_summary, 1.0),
    (tf.summary.text, "hello"),
])
def test_every_summary_kind_cleans_its_name(fn, arg):
    s = fn("bad name!", tf.constant(arg))
    assert s.op.name == "bad_name_"
    assert _tag(s) == "bad_name_"


def test_family_prefixes_the_tag_and_is_cleaned_too():
    a = tf.summary.scalar("x", tf.constant(1.0), family="fam")
    assert (a.op.name, _tag(a)) == ("fam/x", "fam/fam/x")
    with tf.name_scope("outer"):
        b = tf.summary.scalar("y z", tf.constant(1.0), family="f m")
    assert (b.op.name, _tag(b)) == ("outer/f_m/y_z", "f_m/outer/f_m/y_z")


def test_repeated_names_get_unique_tags_and_merge_cleans_its_name():
    a = tf.summary.scalar("loss (raw)", tf.constant(1.0))
    b = tf.summary.scalar("loss (raw)", tf.constant(2.0))
    assert [_tag(a), _tag(b)] == ["loss__raw_", "loss__raw__1"]
    m = tf.summary.merge([a, b], name="my merge!")
    assert m.op.name == "my_merge_/my_merge_"
    with tf.Session() as sess:
        summ = tf.Summary.FromString(sess.run(m))
    assert [v.tag for v in summ.value] == ["loss__raw_", "loss__raw__1"]


def test_node_names_still_refuse_invalid_characters():
    # Only summary names are cleaned; a name scope with a space is an error, as in TF.
    with pytest.raises(ValueError, match="a b"):
        with tf.name_scope("a b"):
            pass

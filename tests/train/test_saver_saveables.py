"""Custom saveables (TF's BaseSaverBuilder.SaveableObject protocol) through tf.train.Saver."""
from __future__ import annotations

import pytest

import tensorweave as tf
from tensorweave.train.saver import BaseSaverBuilder

pytestmark = pytest.mark.usefixtures("fresh_graph")


class _Counter(BaseSaverBuilder.SaveableObject):
    """Saves a variable as two tensors (value, value*10); restores from the first."""

    def __init__(self, var: tf.Variable, name: str) -> None:
        self.var = var
        specs = [BaseSaverBuilder.SaveSpec(var.value(), "", name + "/value"),
                 BaseSaverBuilder.SaveSpec(var.value() * 10, "", name + "/times10")]
        super().__init__(var, specs, name)

    def restore(self, restored_tensors, restored_shapes):
        value, times10 = restored_tensors
        return tf.assign(self.var, value + 0 * times10)


@pytest.mark.parametrize("fmt", ["tensorweave", "tensorflow"])
def test_saveables_save_their_tensors_and_restore_through_restore(tmp_path, fmt):
    counter = tf.Variable(7.0, name="counter")
    plain = tf.Variable(1.0, name="plain")
    saveable = _Counter(counter, "ctr")
    saver = tf.train.Saver([saveable, plain], checkpoint_format=fmt)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "s"))
        reader = tf.train.NewCheckpointReader(prefix)
        assert sorted(reader.get_variable_to_shape_map()) == ["ctr/times10", "ctr/value",
                                                               "plain"]
        assert reader.get_tensor("ctr/times10") == 70.0
        sess.run([counter.assign(0.0), plain.assign(0.0)])
        saver.restore(sess, prefix)
        assert sess.run([counter, plain]) == [7.0, 1.0]


def test_saveables_from_the_collection_and_their_errors(tmp_path):
    counter = tf.Variable(3.0, name="c")
    tf.add_to_collection(tf.GraphKeys.SAVEABLE_OBJECTS, _Counter(counter, "ctr"))
    saver = tf.train.Saver()   # global variables and SAVEABLE_OBJECTS
    with tf.Session() as sess:
        sess.run(counter.initializer)
        prefix = saver.save(sess, str(tmp_path / "c"))
    assert sorted(tf.train.NewCheckpointReader(prefix).get_variable_to_shape_map()) == [
        "c", "ctr/times10", "ctr/value"]
    with pytest.raises(AssertionError, match="explicit dtype and device"):
        BaseSaverBuilder.SaveSpec(lambda: counter.value(), "", "x")
    sliced = BaseSaverBuilder.SaveableObject(
        counter, [BaseSaverBuilder.SaveSpec(counter.value(), "4 0,2", "part")], "sliced")
    with pytest.raises(ValueError, match="whole tensors"):
        tf.train.Saver([sliced])
    with pytest.raises(ValueError, match="abstract"):
        BaseSaverBuilder.SaveableObject(counter, [], "n").restore([], None)


def test_variable_saveable_subclass_restores_into_a_mirror(tmp_path):
    primary = tf.Variable(42.0, name="primary", use_resource=True)
    mirror = tf.Variable(15.0, name="mirror")

    class Mirroring(BaseSaverBuilder.ResourceVariableSaveable):
        def restore(self, restored_tensors, restored_shapes):
            (value,) = restored_tensors
            return tf.group(primary.assign(value), mirror.assign(value))

    saver = tf.train.Saver([Mirroring(primary, "", "primary")])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        prefix = saver.save(sess, str(tmp_path / "m"))
        sess.run([primary.assign(43.0), mirror.assign(44.0)])
        saver.restore(sess, prefix)
        assert sess.run([primary, mirror]) == [42.0, 42.0]

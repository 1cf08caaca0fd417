"""tf.keras.utils.get_source_inputs: the Input tensors behind a Keras tensor."""
import tensorweave as tf


def test_source_inputs_in_order_each_once_through_shared_branches():
    tf.reset_default_graph()
    a = tf.keras.Input((3,))
    b = tf.keras.Input((3,))
    y = tf.keras.layers.Add()([a, tf.keras.layers.Dense(3)(b)])
    z = tf.keras.layers.Dense(2)(tf.keras.layers.Concatenate()([y, a]))
    got = tf.keras.utils.get_source_inputs(z)
    assert len(got) == 2 and got[0] is a and got[1] is b
    assert tf.keras.utils.get_source_inputs(a)[0] is a


def test_a_tensor_no_keras_layer_made_is_returned_as_is():
    c = tf.constant(1.0)
    assert tf.keras.utils.get_source_inputs(c) is c

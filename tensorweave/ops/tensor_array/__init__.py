"""TensorArrays: `tf.TensorArray` (`tensor_array`), its ops (`tensor_array_ops`) and
the value its flow carries (`value`).
"""

"""The iterator ops that run a `tf.data` pipeline (`iterator_ops`); the Dataset API
itself (descriptions, transforms, `tf.data.Iterator`) is `tensorweave/data/`.
"""

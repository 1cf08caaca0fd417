"""TensorArray ops: TensorArrayFlow* and their gradients (`tensor_array_ops`), on a
variant flow carrying the value of `kernels/tensor_array_value.py`. The `tf.TensorArray`
class built on them is `tensorweave/data_flow/tensor_array.py`.
"""

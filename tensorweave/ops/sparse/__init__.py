"""The sparse op family: SparseTensor ops (to_dense, reorder, reshape, concat, fill empty
rows, slice, add, dense matmul), the sorted-segment reductions and the SparseTensorsMap ops
(`sparse_map_ops`: where the TF1 batchers park SparseTensors). Each op's public
wrapper is beside its stanza; `tensorweave/sparse.py` is the public entry
(`tf.sparse.*`).
"""

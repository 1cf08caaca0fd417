"""Math functions composed from existing ops, defining none (TF's `math_ops` /
`linalg_ops` Python): `stats_ops` (count_nonzero, reduce_variance/std, bincount,
confusion_matrix, ...), `norm_ops` (`tf.norm`), `tensordot_ops` (`tf.tensordot`).
`tensorweave/math.py`, `linalg.py` and `nn.py` re-export them.
"""

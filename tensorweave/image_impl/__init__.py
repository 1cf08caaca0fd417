"""`tf.image` functions composed from existing ops, defining none: `crop_ops` (crops,
pads, `random_crop`), `flip_ops` (flips, `rot90`, `transpose_image`),
`decode_image_ops` (`decode_image`: the codec chosen by the file's header bytes).
Their ops are in `ops/image/`; `tensorweave/image.py` (`tf.image`) re-exports them.
"""

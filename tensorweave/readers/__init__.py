"""TF 1.x's reader classes (`tf.TextLineReader`, `tf.TFRecordReader`, ...) and
`tf.train.match_filenames_once`, built on the reader ops of `ops/io/`.
"""

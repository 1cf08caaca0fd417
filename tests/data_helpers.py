"""Helpers shared by the tf.data reader tests and the TF1 queue input pipeline tests."""
import tensorweave as tf


def drain(sess, nxt):
    """Every element `nxt` yields until the iterator ends."""
    out = []
    while True:
        try:
            out.append(sess.run(nxt))
        except tf.errors.OutOfRangeError:
            return out


def run_queue_runners(fetch, steps=None):
    """Runs `fetch` under started queue runners until OutOfRange (or `steps` times)."""
    out = []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        try:
            while steps is None or len(out) < steps:
                out.append(sess.run(fetch))
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    return out

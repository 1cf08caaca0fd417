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


def write_id_slices(directory, slices, lines):
    """`slices` files part-NN.txt of `lines` consecutive ids each (slice s holds ids
    s*lines .. s*lines+lines-1): a WorkQueue's works whose ids say which slice they are."""
    files = []
    for s in range(slices):
        path = directory / f"part-{s:02d}.txt"
        path.write_text("".join(f"{s * lines + j}\n" for j in range(lines)))
        files.append(str(path))
    return files

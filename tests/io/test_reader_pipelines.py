"""TF1 input pipelines built on readers, written the TF1 way: the CIFAR-10 tutorial's
binary files (string_input_producer -> FixedLengthRecordReader -> decode_raw ->
shuffle_batch) training a small model under a Coordinator and under
MonitoredTrainingSession until num_epochs ends the input, and a TFRecordReader ->
parse_single_example -> tf.train.batch pipeline.
"""
import collections

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.readers.readers import FixedLengthRecordReader, TFRecordReader

pytestmark = pytest.mark.usefixtures("fresh_graph")

HEIGHT, WIDTH, DEPTH = 32, 32, 3
LABEL_BYTES, IMAGE_BYTES = 1, 32 * 32 * 3
RECORDS_PER_FILE, NUM_FILES, NUM_EPOCHS, BATCH = 20, 2, 3, 8


def _write_cifar_files(tmp_path):
    """data_batch_<i>.bin files as CIFAR-10 ships them: records of a label byte then
    the image, channel-major (R plane, G plane, B plane). Class 1 images are bright,
    class 0 dark, so a linear model separates them."""
    rng = np.random.default_rng(0)
    names, labels = [], {}
    for i in range(1, NUM_FILES + 1):
        recs = []
        for j in range(RECORDS_PER_FILE):
            label = (i + j) % 2
            image = rng.integers(0, 100, IMAGE_BYTES) + 150 * label
            recs.append(bytes([label]) + image.astype(np.uint8).tobytes())
            labels[f"data_batch_{i}.bin:{j}"] = label
        path = tmp_path / f"data_batch_{i}.bin"
        path.write_bytes(b"".join(recs))
        names.append(str(path))
    return names, labels


def read_cifar10(filename_queue):
    """As the tutorial's cifar10_input.read_cifar10."""
    class CIFAR10Record:
        pass
    result = CIFAR10Record()
    reader = FixedLengthRecordReader(record_bytes=LABEL_BYTES + IMAGE_BYTES)
    result.key, value = reader.read(filename_queue)
    record_bytes = tf.decode_raw(value, tf.uint8)
    result.label = tf.cast(tf.strided_slice(record_bytes, [0], [LABEL_BYTES]), tf.int32)
    depth_major = tf.reshape(
        tf.strided_slice(record_bytes, [LABEL_BYTES], [LABEL_BYTES + IMAGE_BYTES]),
        [DEPTH, HEIGHT, WIDTH])
    result.uint8image = tf.transpose(depth_major, [1, 2, 0])
    return result


def _inputs(filenames):
    filename_queue = tf.train.string_input_producer(filenames, num_epochs=NUM_EPOCHS)
    read_input = read_cifar10(filename_queue)
    image = tf.cast(read_input.uint8image, tf.float32) / 255.0
    read_input.label.set_shape([1])
    images, labels, keys = tf.train.shuffle_batch(
        [image, read_input.label, read_input.key], batch_size=BATCH, num_threads=4,
        capacity=40, min_after_dequeue=10)
    return images, tf.reshape(labels, [BATCH]), keys


def _model(images, labels):
    pooled = tf.reduce_mean(images, axis=[1, 2])               # [batch, 3]
    w = tf.Variable(tf.zeros([DEPTH, 2]), name="w")
    b = tf.Variable(tf.zeros([2]), name="b")
    logits = tf.matmul(pooled, w) + b
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    train_op = tf.train.GradientDescentOptimizer(2.0).minimize(
        loss, global_step=tf.train.get_or_create_global_step())
    return loss, train_op


def _check_epochs(seen_keys, labels_by_key, seen_labels, tmp_path):
    # every record read exactly NUM_EPOCHS times, its label decoded from its first byte
    keys = [k.decode().replace(f"{tmp_path}/", "") for k in seen_keys]
    assert collections.Counter(keys) == {k: NUM_EPOCHS for k in labels_by_key}
    assert [labels_by_key[k] for k in keys] == list(seen_labels)


def test_cifar10_style_training_with_coordinator_ends_at_num_epochs(tmp_path):
    filenames, labels_by_key = _write_cifar_files(tmp_path)
    images, labels, keys = _inputs(filenames)
    assert images.shape.as_list() == [BATCH, HEIGHT, WIDTH, DEPTH]
    loss, train_op = _model(images, labels)
    losses, seen_keys, seen_labels = [], [], []
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess=sess, coord=coord)
        try:
            while not coord.should_stop():
                _, step_loss, k, y = sess.run([train_op, loss, keys, labels])
                losses.append(step_loss)
                seen_keys += list(k)
                seen_labels += list(y)
        except tf.errors.OutOfRangeError:
            pass  # the tutorial's "Done training -- epoch limit reached"
        finally:
            coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)
        assert all(not t.is_alive() for t in threads)
    total = RECORDS_PER_FILE * NUM_FILES * NUM_EPOCHS
    assert len(losses) == total // BATCH
    _check_epochs(seen_keys, labels_by_key, seen_labels, tmp_path)
    assert np.mean(losses[-3:]) < 0.5 * losses[0]  # it learned


def test_cifar10_style_training_under_monitored_training_session(tmp_path):
    filenames, labels_by_key = _write_cifar_files(tmp_path)
    images, labels, keys = _inputs(filenames)
    loss, train_op = _model(images, labels)
    steps, seen_keys, seen_labels = 0, [], []
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path / "ckpt"),
                                           save_summaries_steps=None) as sess:
        while not sess.should_stop():  # OutOfRangeError at num_epochs ends the loop
            _, k, y = sess.run([train_op, keys, labels])
            steps += 1
            seen_keys += list(k)
            seen_labels += list(y)
    assert steps == RECORDS_PER_FILE * NUM_FILES * NUM_EPOCHS // BATCH
    _check_epochs(seen_keys, labels_by_key, seen_labels, tmp_path)
    assert tf.train.latest_checkpoint(str(tmp_path / "ckpt"))  # the final save happened


def test_tfrecord_reader_parse_single_example_batch(tmp_path):
    files, want = [], []
    for i in range(2):
        path = str(tmp_path / f"train-{i}.tfrecord")
        with tf.python_io.TFRecordWriter(path) as writer:
            for j in range(6):
                x = [float(i), float(j), 0.5, -1.0]
                y = 10 * i + j
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[y]))}))
                writer.write(ex.SerializeToString())
                want.append((x, y))
        files.append(path)
    filename_queue = tf.train.string_input_producer(files, num_epochs=2, shuffle=False)
    _, serialized = TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(serialized, features={
        "x": tf.FixedLenFeature([4], tf.float32), "y": tf.FixedLenFeature([], tf.int64)})
    xb, yb = tf.train.batch([features["x"], features["y"]], batch_size=5,
                            allow_smaller_final_batch=True)
    got_x, got_y = [], []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord=coord)
        try:
            while True:
                x, y = sess.run([xb, yb])
                got_x.append(x)
                got_y.append(y)
        except tf.errors.OutOfRangeError:
            pass
        coord.request_stop()
        coord.join(threads)
    assert [len(y) for y in got_y] == [5, 5, 5, 5, 4]
    np.testing.assert_allclose(np.concatenate(got_x), np.array([x for x, _ in want] * 2))
    assert list(np.concatenate(got_y)) == [y for _, y in want] * 2

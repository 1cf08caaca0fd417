"""TF's checkpoint format (tensor bundle, "V2"): codec, damage detection, Saver use.

tests/data/tf_written/ckpt was written by real TensorFlow (tools/make_tf_fixtures.py).
"""
import os
import shutil
import struct

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework import checkpoint_format, errors, sstable, tensor_bundle
from tensorweave.framework.tensor_bundle_reader import BundleReader
from suite_paths import TEST_DATA

pytestmark = pytest.mark.usefixtures("fresh_graph")

FIXTURE = os.path.join(TEST_DATA, "tf_written", "ckpt")
TF_PREFIX = os.path.join(FIXTURE, "model.ckpt-7")


def _copy_fixture(tmp_path):
    shutil.copytree(FIXTURE, tmp_path / "ckpt")
    return str(tmp_path / "ckpt" / "model.ckpt-7")


def test_reads_what_tensorflow_wrote():
    r = BundleReader(TF_PREFIX)
    assert r.get_variable_to_shape_map() == {
        "counts": [2], "dense/bias": [3], "dense/kernel": [4, 3], "emb": [6, 2],
        "global_step": [], "out/kernel": [3, 2], "scale": [], "vocab": [3]}
    dtypes = r.get_variable_to_dtype_map()
    assert (dtypes["counts"], dtypes["scale"], dtypes["vocab"], dtypes["global_step"]) == \
        (tf.int32, tf.float64, tf.string, tf.int64)
    np.testing.assert_allclose(r.get_tensor("dense/kernel"),
                               np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
    np.testing.assert_array_equal(r.get_tensor("emb"), np.arange(12).reshape(6, 2))
    assert list(r.get_tensor("vocab")) == [b"alpha", b"\x00b", b"\xff"]
    assert r.get_tensor("global_step") == 7 and r.get_tensor("scale") == 2.5
    np.testing.assert_array_equal(r.read_slice("emb", [6, 2], [2, 1], [3, 1]),
                                  [[5], [7], [9]])   # across both saved slices
    r.verify()


def test_writes_byte_identical_files(tmp_path):
    r = BundleReader(TF_PREFIX)
    items = []
    for name in sorted(r.get_variable_to_shape_map()):
        value = r.get_tensor(name)
        if name == "emb":   # TF saved it as two row slices "6 2 0,3:0,2" and "6 2 3,3:0,2"
            items += [("emb", value[:3], ([6, 2], ([0, 0], [3, 2]))),
                      ("emb", value[3:], ([6, 2], ([3, 0], [3, 2])))]
        else:
            items.append((name, value, None))
    out = str(tmp_path / "m")
    tensor_bundle.write_bundle(out, items, [r.get_variable_to_dtype_map()[n]
                                            for n, _, _ in items])
    for suffix in (".index", ".data-00000-of-00001"):
        assert open(out + suffix, "rb").read() == open(TF_PREFIX + suffix, "rb").read()


@pytest.mark.parametrize("value", [
    np.float16(1.5), np.arange(6, dtype=np.float32).reshape(2, 3), np.float64([1e300, -2]),
    np.int8([-1, 2]), np.int16([300]), np.int32([[1], [2]]), np.int64(-(2 ** 40)),
    np.uint8([255, 0]), np.array([True, False]), np.zeros((0, 3), np.float32),
    np.array([b"", b"x" * 200, b"\x00\xff"], dtype=object), np.array(b"scalar", dtype=object),
])
def test_round_trip_dtypes(tmp_path, value):
    prefix = str(tmp_path / "m")
    tensor_bundle.write_bundle(prefix, [("t", value, None)])
    got = BundleReader(prefix).get_tensor("t")
    assert got.shape == np.shape(value)
    if got.dtype == object:
        assert list(got.reshape(-1)) == list(np.asarray(value, dtype=object).reshape(-1))
    else:
        assert got.dtype == np.asarray(value).dtype
        np.testing.assert_array_equal(got, value)


def test_partial_slices_and_errors(tmp_path):
    prefix = str(tmp_path / "m")
    full = np.arange(20, dtype=np.float32).reshape(4, 5)
    tensor_bundle.write_bundle(prefix, [("v", full[:, :2], ([4, 5], ([0, 0], [-1, 2]))),
                                        ("v", full[:, 2:], ([4, 5], ([0, 2], [4, 3])))])
    r = BundleReader(prefix)
    np.testing.assert_array_equal(r.get_tensor("v"), full)
    with pytest.raises(errors.NotFoundError, match="Key nope not found in checkpoint"):
        r.get_tensor("nope")
    tensor_bundle.write_bundle(prefix, [("v", full[:2], ([4, 5], ([0, 0], [2, 5])))])
    with pytest.raises(errors.NotFoundError, match="does not cover"):
        BundleReader(prefix).get_tensor("v")


def test_damaged_data_is_detected(tmp_path):
    prefix = _copy_fixture(tmp_path)
    data = prefix + ".data-00000-of-00001"
    raw = bytearray(open(data, "rb").read())
    raw[5] ^= 0x01
    open(data, "wb").write(bytes(raw))
    r = BundleReader(prefix)
    with pytest.raises(errors.DataLossError, match="checksum mismatch"):
        r.verify()
    open(data, "wb").write(bytes(raw[:40]))
    with pytest.raises(errors.DataLossError, match="truncated"):
        BundleReader(prefix).verify()
    os.remove(data)
    with pytest.raises(errors.DataLossError, match="missing"):
        BundleReader(prefix).get_tensor("dense/kernel")


def test_damaged_index_is_detected(tmp_path):
    prefix = _copy_fixture(tmp_path)
    index = prefix + ".index"
    raw = bytearray(open(index, "rb").read())
    raw[10] ^= 0x40
    open(index, "wb").write(bytes(raw))
    with pytest.raises(errors.DataLossError, match="checksum"):
        BundleReader(prefix)
    open(index, "wb").write(bytes(raw[:20]))
    with pytest.raises(errors.DataLossError, match="not a TensorFlow checkpoint table"):
        BundleReader(prefix)
    with pytest.raises(errors.NotFoundError, match="does not exist"):
        BundleReader(str(tmp_path / "absent"))


def test_table_blocks_and_key_order():
    items = [(b"key%05d" % i, b"v" * (i % 7)) for i in range(3000)]
    data = sstable.build_table(items, block_size=1024)
    assert sstable.read_table(data, "t") == items
    with pytest.raises(ValueError, match="strictly increasing"):
        sstable.build_table([(b"b", b""), (b"a", b"")])


def test_crc_mask_and_ordered_code():
    assert sstable.crc32c(b"123456789") == 0xE3069283   # the CRC32C check value
    for crc in (0, 1, 0xE3069283, 0xFFFFFFFF):
        assert sstable.unmask_crc(sstable.mask_crc(crc)) == crc
        assert sstable.mask_crc(crc) != crc
    # Examples from TF's ordered-code documentation.
    assert tensor_bundle._ordered_int(0x424242) == bytes.fromhex("f0424242")
    assert tensor_bundle._ordered_int(-0x800) == bytes.fromhex("3800")
    assert tensor_bundle._ordered_int(-1) == b"\x7f" and tensor_bundle._ordered_int(2) == b"\x82"
    assert tensor_bundle.slice_key("a\x00", [0], [-1]) == \
        b"\x00" + b"a\x00\xff\x00\x01" + b"\x01\x01" + b"\x80\x7f"


def test_merge_bundles(tmp_path):
    a, b, out = (str(tmp_path / n) for n in ("a/part", "b/part", "merged"))
    tensor_bundle.write_bundle(a, [("x", np.float32([1, 2]), None)])
    tensor_bundle.write_bundle(b, [("y", np.int64(3), None)])
    tensor_bundle.merge_bundles([a, b], out, delete_old_dirs=True)
    r = BundleReader(out)
    assert r.get_tensor("y") == 3 and list(r.get_tensor("x")) == [1, 2]
    assert len(r.files()) == 3 and not os.path.exists(tmp_path / "a")
    with open(out + ".index", "rb") as f:
        f.seek(-8, os.SEEK_END)
        assert struct.unpack("<Q", f.read())[0] == sstable.MAGIC


def test_format_detection(tmp_path):
    v = tf.Variable([1.0, 2.0], name="v")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ours = tf.train.Saver().save(sess, str(tmp_path / "ours"))
        theirs = tf.train.Saver(checkpoint_format="tensorflow").save(sess,
                                                                     str(tmp_path / "tf"))
    assert checkpoint_format.checkpoint_format_of(ours) == "tensorweave"
    assert checkpoint_format.checkpoint_format_of(theirs) == "tensorflow"
    assert isinstance(checkpoint_format.open_reader(theirs), BundleReader)
    assert sorted(os.listdir(tmp_path)) == sorted([
        "checkpoint", "ours-00000-of-00001", "ours.index", "ours.meta",
        "tf.data-00000-of-00001", "tf.index", "tf.meta"])
    del v


def test_tf_format_saver_round_trip_and_retention(tmp_path):
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    names = tf.Variable(np.array([b"a", b"\xff"], dtype=object), name="names")
    emb = tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(3),
                          initializer=tf.ones_initializer())
    step = tf.train.get_or_create_global_step()
    saver = tf.train.Saver(checkpoint_format="tensorflow", max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        paths = [saver.save(sess, str(tmp_path / "model.ckpt"), global_step=i)
                 for i in range(3)]
        assert not os.path.exists(paths[0] + ".index")
        assert not os.path.exists(paths[0] + ".data-00000-of-00001")
        r = BundleReader(paths[-1])
        assert r.get_variable_to_shape_map()["emb"] == [6, 2]
        sess.run([tf.assign(w, tf.zeros([2, 3])), tf.assign(names, ["", ""])] +
                 [tf.assign(p, tf.zeros_like(p)) for p in emb])
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(w), np.arange(6).reshape(2, 3))
        assert list(sess.run(names)) == [b"a", b"\xff"]
        np.testing.assert_array_equal(np.concatenate(sess.run(list(emb))), np.ones((6, 2)))
    del step


def test_our_saver_restores_a_tensorflow_checkpoint(tmp_path):
    """The variables a TF program saved, restored into the same model built here."""
    prefix = _copy_fixture(tmp_path)
    k = tf.get_variable("dense/kernel", [4, 3])
    emb = tf.get_variable("emb", [6, 2], partitioner=tf.fixed_size_partitioner(3))
    vocab = tf.Variable(np.array([b"", b"", b""], dtype=object), name="vocab")
    saver = tf.train.Saver([k, vocab] + list(emb))   # emb re-partitioned: 3 parts, not 2
    with tf.Session() as sess:
        saver.restore(sess, prefix)
        np.testing.assert_allclose(sess.run(k), np.arange(12).reshape(4, 3) / 10, rtol=1e-6)
        np.testing.assert_array_equal(np.concatenate(sess.run(list(emb))),
                                      np.arange(12).reshape(6, 2))
        assert list(sess.run(vocab)) == [b"alpha", b"\x00b", b"\xff"]


@pytest.mark.cluster_shape(ps=2, workers=1)
def test_tf_format_sharded_save_across_ps_tasks(tmp_path, inprocess_cluster):
    """Each ps task saves its variables (TF's sharded layout), MergeV2Checkpoints joins."""
    _spec, servers = inprocess_cluster
    vs = []
    for i, dev in enumerate(["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:1"]):
        with tf.device(dev):
            vs.append(tf.Variable(np.full([2], float(i + 1), np.float32), name=f"v{i}"))
    saver = tf.train.Saver(sharded=True, checkpoint_format="tensorflow")
    graph = tf.get_default_graph()
    assert {op.device for op in graph.get_operations() if op.type == "SaveV2"} == \
        {"/job:ps/task:0", "/job:ps/task:1"}
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=1)
        sess.run([tf.assign(v, tf.zeros([2])) for v in vs])
        saver.restore(sess, path)
        assert [sess.run(v).tolist() for v in vs] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]
    assert sorted(f for f in os.listdir(tmp_path) if f.startswith("model.ckpt-1")) == [
        "model.ckpt-1.data-00000-of-00002", "model.ckpt-1.data-00001-of-00002",
        "model.ckpt-1.index", "model.ckpt-1.meta"]
    assert BundleReader(path).get_tensor("v2").tolist() == [3.0, 3.0]


def test_v1_checkpoint_is_named_as_such(tmp_path):
    path = str(tmp_path / "model.ckpt")
    with open(path, "wb") as f:   # V1: the whole checkpoint is one table file
        f.write(sstable.build_table([(b"global_step", b"")]))
    with pytest.raises(errors.UnimplementedError, match="V1 checkpoint"):
        tf.train.NewCheckpointReader(path)
    tf.Variable(1.0, name="global_step")
    with tf.Session() as sess, pytest.raises(errors.UnimplementedError, match="V1 checkpoint"):
        tf.train.Saver().restore(sess, path)

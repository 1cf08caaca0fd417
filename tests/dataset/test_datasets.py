"""tensorweave.datasets: the shipped digits and the MNIST IDX reader."""
import gzip
import struct

import numpy as np
import pytest

from tensorweave.datasets import load_digits, load_mnist, read_idx


def test_load_digits_shapes_types_and_range():
    x_train, y_train, x_test, y_test = load_digits()
    assert x_train.shape == (1438, 64) and x_test.shape == (359, 64)
    assert y_train.shape == (1438,) and y_test.shape == (359,)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    assert 0.0 <= x_train.min() and x_train.max() == 1.0
    assert set(np.unique(y_train)) == set(range(10)) == set(np.unique(y_test))
    # stratified: every class has ~20% of its images in the test set
    assert np.bincount(y_test).min() >= 35


def test_load_digits_is_deterministic_and_disjoint():
    a, b = load_digits(seed=3), load_digits(seed=3)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    c = load_digits(seed=4)
    assert not np.array_equal(a[0], c[0])
    x_train, _, x_test, _ = load_digits(test_fraction=0.5, seed=1)
    assert len(x_train) + len(x_test) == 1797 and abs(len(x_test) - 898) <= 10
    # train + test is exactly the whole data set: a partition, no image in both or lost
    x_tr, y_tr, x_te, y_te = load_digits(seed=0)
    x_all, y_all, x_none, _ = load_digits(test_fraction=0.0)
    assert len(x_all) == 1797 and len(x_none) == 0

    def rows(x, y):
        return sorted(xi.tobytes() + bytes([yi]) for xi, yi in zip(x, y))
    assert rows(np.concatenate([x_tr, x_te]), np.concatenate([y_tr, y_te])) == rows(x_all, y_all)

def test_load_digits_rejects_bad_fraction():
    with pytest.raises(ValueError, match="test_fraction"):
        load_digits(test_fraction=1.0)


def _write_idx(path, array, code=0x08, compress=False):
    header = struct.pack(">HBB", 0, code, array.ndim) + struct.pack(
        ">" + "I" * array.ndim, *array.shape)
    dtype = {0x08: "u1", 0x0C: ">i4", 0x0D: ">f4"}[code]
    data = header + array.astype(dtype).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)


def _write_mnist(directory, n_train=5, n_test=3, compress=False):
    rng = np.random.default_rng(0)
    arrays = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        suffix = ".gz" if compress else ""
        _write_idx(directory / f"{split}-images-idx3-ubyte{suffix}", images, compress=compress)
        _write_idx(directory / f"{split}-labels-idx1-ubyte{suffix}", labels, compress=compress)
        arrays[split] = images, labels
    return arrays


@pytest.mark.parametrize("compress", [False, True], ids=["raw", "gzip"])
def test_load_mnist_reads_small_idx_files(tmp_path, compress):
    arrays = _write_mnist(tmp_path, compress=compress)
    x_train, y_train, x_test, y_test = load_mnist(str(tmp_path))
    assert x_train.shape == (5, 784) and x_test.shape == (3, 784)
    assert x_train.dtype == np.float32 and y_train.dtype == np.int64
    np.testing.assert_allclose(x_train, arrays["train"][0].reshape(5, -1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(y_test, arrays["t10k"][1])
    images = load_mnist(str(tmp_path), flatten=False)[2]
    assert images.shape == (3, 28, 28)


def test_read_idx_other_types_and_gzip_detected_by_content(tmp_path):
    ints = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    _write_idx(tmp_path / "ints.idx", ints, code=0x0C, compress=True)  # gzip without .gz
    out = read_idx(str(tmp_path / "ints.idx"))
    np.testing.assert_array_equal(out, ints)
    assert out.dtype == np.int32 and out.dtype.isnative
    floats = np.linspace(0, 1, 6, dtype=np.float32)
    _write_idx(tmp_path / "f.idx", floats, code=0x0D)
    np.testing.assert_array_equal(read_idx(str(tmp_path / "f.idx")), floats)


def test_read_idx_errors_name_the_file(tmp_path):
    arrays = _write_mnist(tmp_path)
    labels = str(tmp_path / "train-labels-idx1-ubyte")
    with pytest.raises(ValueError, match=r"train-labels-idx1-ubyte has magic number 2049, "
                                         r"expected 2051.*swapped"):
        read_idx(labels, 2051)
    bad = tmp_path / "not-idx"
    bad.write_bytes(b"PK\x03\x04 some zip file")
    with pytest.raises(ValueError, match="not-idx is not an IDX file"):
        read_idx(str(bad))
    truncated = tmp_path / "truncated"
    full = (tmp_path / "train-images-idx3-ubyte").read_bytes()
    truncated.write_bytes(full[:-10])
    with pytest.raises(ValueError, match="truncated is truncated"):
        read_idx(str(truncated), 2051)
    with pytest.raises(FileNotFoundError, match="missing-file"):
        read_idx(str(tmp_path / "missing-file"))
    (tmp_path / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(FileNotFoundError, match="No t10k-labels-idx1-ubyte file in"):
        load_mnist(str(tmp_path))
    # labels count differs from images count
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte", arrays["t10k"][1][:2])
    with pytest.raises(ValueError, match="3 images but .* holds 2 labels"):
        load_mnist(str(tmp_path))

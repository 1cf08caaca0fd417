"""tf.data.experimental.CsvDataset and make_csv_dataset: names from the header, types
inferred from the first rows (int32 < int64 < float32 < float64 < string), batches of
OrderedDicts with the label split off; values checked against real TF's output."""
import numpy as np
import pytest

import tensorweave as tf


def _all(ds):
    nxt = ds.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        try:
            while True:
                out.append(sess.run(nxt))
        except tf.errors.OutOfRangeError:
            return out


@pytest.fixture()
def csv_dir(tmp_path):
    tf.reset_default_graph()
    (tmp_path / "t1.csv").write_text('a,b,name,y\n1,2.5,x,0\n3,,"q,z",1\n5,1e3,w,1\n')
    (tmp_path / "t2.csv").write_text("a,b,name,y\n7,0.5,v,0\n")
    return tmp_path


def test_make_csv_dataset_infers_names_and_types_and_splits_the_label(csv_dir):
    ds = tf.data.experimental.make_csv_dataset(str(csv_dir / "*.csv"), 2, label_name="y",
                                               num_epochs=1, shuffle=False)
    feats, label = tf.data.get_output_types(ds)
    assert list(feats.items()) == [("a", tf.int32), ("b", tf.float32), ("name", tf.string)]
    assert label == tf.int32
    got = _all(ds)
    assert [list(f["a"]) for f, _ in got] == [[1, 3], [5, 7]]
    assert [list(f["b"]) for f, _ in got] == [[2.5, 0.0], [1000.0, 0.5]]  # '' -> default 0
    assert [list(f["name"]) for f, _ in got] == [[b"x", b"q,z"], [b"w", b"v"]]
    assert [list(y) for _, y in got] == [[0, 1], [1, 0]]


def test_select_columns_given_defaults_and_endless_full_batches(csv_dir):
    ds = tf.data.experimental.make_csv_dataset(
        str(csv_dir / "t1.csv"), 2, select_columns=["name", 0], column_defaults=[[0], [""]],
        shuffle=False)
    assert list(tf.data.get_output_types(ds)) == ["a", "name"]
    assert tf.data.get_output_shapes(ds)["a"].as_list() == [2]  # repeats forever: full
    nxt = ds.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [list(sess.run(nxt)["a"]) for _ in range(3)] == [[1, 3], [5, 1], [3, 5]]


def test_csv_dataset_reads_records_with_required_and_default_columns(csv_dir):
    ds = tf.data.experimental.CsvDataset([str(csv_dir / "t1.csv"), str(csv_dir / "t2.csv")],
                                         [tf.int32, [-1.0], [""], [0]], header=True)
    rows = _all(ds)
    assert [int(r[0]) for r in rows] == [1, 3, 5, 7]
    assert np.allclose([r[1] for r in rows], [2.5, -1.0, 1000.0, 0.5])


def test_csv_errors_name_what_is_wrong(csv_dir):
    with pytest.raises(ValueError, match="no files match"):
        tf.data.experimental.make_csv_dataset(str(csv_dir / "none-*.csv"), 1)
    with pytest.raises(ValueError, match="'z' is not in"):
        tf.data.experimental.make_csv_dataset(str(csv_dir / "*.csv"), 1, label_name="z")
    with pytest.raises(ValueError, match="'nope' specified in select_columns"):
        tf.data.experimental.make_csv_dataset(str(csv_dir / "*.csv"), 1,
                                              select_columns=["nope"])
    with pytest.raises(ValueError, match="without a header line"):
        tf.data.experimental.make_csv_dataset(str(csv_dir / "*.csv"), 1, header=False)
    with pytest.raises(ValueError, match="ignore_errors=True. is not built"):
        tf.data.experimental.make_csv_dataset(str(csv_dir / "*.csv"), 1, ignore_errors=True)

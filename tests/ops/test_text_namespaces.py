"""tf.strings / tf.contrib.lookup / tf.lookup: the public names reach the string ops and
tables, and a TF1 text pipeline (clean, tokenize, vocabulary ids, embeddings) trains."""
import numpy as np

import tensorweave as tf
from tensorweave.lookup import tables, vocab_tables
from tensorweave.ops.strings import string_ops


def test_names_are_the_same_functions():
    assert tf.strings.split is string_ops.split and tf.string_split is string_ops.string_split
    assert tf.strings.strip is tf.string_strip and tf.strings.to_number is tf.string_to_number
    assert tf.strings.join is tf.string_join and tf.strings.substr is tf.substr
    assert tf.contrib.lookup.HashTable is tables.HashTable
    # TF 1.x's StaticHashTable: the same table, taking (initializer, default_value, name).
    assert issubclass(tf.lookup.StaticHashTable, tables.HashTable)
    assert tf.lookup.index_table_from_file is vocab_tables.index_table_from_file


def test_string_join_broadcasts_scalars_and_names_bad_input(graph):
    j = tf.string_join([["a", "b"], "x"], separator="-")
    with tf.Session() as sess:
        assert list(sess.run(j)) == [b"a-x", b"b-x"]
    try:
        tf.string_join([tf.constant([1, 2])])
    except TypeError as e:
        assert "StringJoin" in str(e) and "inputs[0]" in str(e)
    else:
        raise AssertionError("an int tensor was joined")


def test_tf1_text_pipeline_trains(graph, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("good\nbad\nmovie\n")
    lines = tf.placeholder(tf.string, [None])
    tokens = tf.string_split(tf.strings.lower(tf.regex_replace(lines, r"[!.,]", " ")))
    table = tf.contrib.lookup.index_table_from_file(str(vocab), num_oov_buckets=1)
    ids = table.lookup(tokens)
    emb = tf.get_variable("emb", [4, 2], initializer=tf.constant_initializer(0.1))
    w = tf.get_variable("w", [2, 1], initializer=tf.constant_initializer(0.5))
    logits = tf.matmul(tf.nn.embedding_lookup_sparse(emb, ids, None, combiner="mean"), w)
    labels = tf.constant([[1.0], [0.0]])
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits))
    train = tf.train.AdagradOptimizer(0.5).minimize(loss)
    feed = {lines: ["Good movie!", "Bad, BAD movie. Awful"]}
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        got = sess.run(ids, feed)
        before = sess.run(loss, feed)
        for _ in range(20):
            sess.run(train, feed)
        after = sess.run(loss, feed)
    np.testing.assert_array_equal(got.values, [0, 2, 1, 1, 2, 3])  # "awful" is OOV: 3
    np.testing.assert_array_equal(got.dense_shape, [2, 4])
    assert after < before

"""tf.print / tf.strings.format: the text matches what TF 1.15/2.x's tf.print writes for
the same graph (recorded from real TF), streams, and errors."""
import sys

import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")

# (inputs builder, kwargs, what TF printed)
CASES = [
    (lambda: ["x:", tf.constant("hi"), tf.constant(["a", "b"])], {}, 'x: "hi" ["a" "b"]\n'),
    (lambda: [tf.constant([1.0, 2.5, 0.1]), tf.constant(3), tf.range(10)], {},
     "[1 2.5 0.1] 3 [0 1 2 ... 7 8 9]\n"),
    (lambda: [tf.reshape(tf.range(6), [2, 3]), tf.constant([True, False])],
     {"sep": "|", "end": "!\n"}, "[[0 1 2]\n [3 4 5]]|[1 0]!\n"),
    (lambda: [{"a": tf.constant(1), "b": [tf.constant(2.0), "s"]}, 5], {"summarize": 2},
     "{'a': 1, 'b': [2, 's']} 5\n"),
    (lambda: [tf.reshape(tf.range(24), [2, 3, 4])], {"summarize": 1},
     "[[[0 ... 3]\n  ...\n  [8 ... 11]]\n\n [[12 ... 15]\n  ...\n  [20 ... 23]]]\n"),
    (lambda: [tf.constant(1e-7), tf.constant(123456789.0), tf.constant([1.5e10])], {},
     "1e-07 123456792 [1.5e+10]\n"),
]


@pytest.mark.parametrize("build,kwargs,expected", CASES)
def test_prints_what_tf_prints(build, kwargs, expected, capsys):
    op = tf.print(*build(), output_stream=sys.stdout, **kwargs)
    with tf.Session() as sess:
        sess.run(op)
    assert capsys.readouterr().out == expected


def test_print_as_a_control_dependency_and_to_stderr_and_files(capsys, tmp_path):
    x = tf.Variable(1.0)
    log = tmp_path / "log.txt"
    shown = tf.print("x is", x)  # stderr by default, as TF
    logged = tf.print("step", tf.constant(7), output_stream="file://" + str(log))
    with tf.control_dependencies([shown, logged]):
        bump = tf.assign_add(x, 1.0)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(bump)
        sess.run(bump)
    assert capsys.readouterr().err.splitlines() == ["x is 1", "x is 2"]
    assert log.read_text() == "step 7\nstep 7\n"


def test_a_text_with_braces_gets_another_placeholder(capsys):
    op = tf.print("set {}:", tf.constant([1, 2]), output_stream=sys.stdout)
    with tf.Session() as sess:
        sess.run(op)
    assert capsys.readouterr().out == "set {}: [1 2]\n"


def test_strings_format():
    f = tf.strings.format("a {} b {}", [tf.constant([1, 2]), tf.constant("z")])
    long = tf.strings.format("{}", tf.range(8), summarize=-1)
    with tf.Session() as sess:
        assert sess.run(f) == b'a [1 2] b "z"'
        assert sess.run(long) == b"[0 1 2 3 4 5 6 7]"


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="has 2 placeholders '{}' but 1 inputs"):
        tf.strings.format("{} {}", [tf.constant(1)])
    with pytest.raises(ValueError, match="output_stream"):
        tf.print("x", output_stream="somewhere")
    with pytest.raises(ValueError, match="output_stream"):
        tf.print("x", output_stream=open)

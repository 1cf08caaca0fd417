"""tf.py_func / tf.numpy_function: the PyFunc and PyFuncStateless ops calling Python.

Specification: TF 1.x python/kernel_tests/py_func_test.py (dtypes, lists and tuples of
results, strings, no outputs, stateful vs stateless, exception mapping, cleanup with
the graph) and python/ops/script_ops.py; our own values. Where we differ from TF
(results convert within their kind, clearer errors) the test says so.
"""
import re

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def import get_op_def
from tensorweave.ops import script_ops

pytestmark = pytest.mark.usefixtures("graph")
py_func = script_ops.py_func


def _run(fetches, feed=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64, tf.uint8, tf.int8,
                                   tf.uint16, tf.int16, tf.int32, tf.int64, tf.complex64,
                                   tf.complex128])
def test_scalar_in_and_out_of_every_numeric_dtype(dtype):
    x, y = tf.constant(1, dtype=dtype), tf.constant(2, dtype=dtype)
    seen = []

    def add(a, b):
        seen.append((type(a), a.dtype, a.shape))
        return a + b
    z = py_func(add, [x, y], dtype)
    assert isinstance(z, tf.Tensor) and z.dtype == dtype
    got = _run(z)
    assert got == 3 and np.asarray(got).dtype == dtype.as_numpy_dtype
    # As TF: a scalar arrives as a NumPy scalar (PyArray_Return), not a 0-d array.
    assert seen == [(dtype.as_numpy_dtype, np.dtype(dtype.as_numpy_dtype), ())]


def test_bool_and_vector_and_matrix():
    b = py_func(lambda p, q: p and q, [tf.constant(True), tf.constant(False)], tf.bool)
    v = py_func(lambda a: np.cumsum(a), [tf.constant([1, 2, 3], tf.int64)], tf.int64)
    m = py_func(lambda a: a.T @ a, [tf.constant([[1.0, 2.0], [3.0, 4.0]])], tf.float32)
    got_b, got_v, got_m = _run([b, v, m])
    assert not got_b and np.asarray(got_b).dtype == np.bool_
    np.testing.assert_array_equal(got_v, [1, 3, 6])
    np.testing.assert_allclose(got_m, [[10.0, 14.0], [14.0, 20.0]])
    assert got_m.dtype == np.float32


def test_outputs_have_unknown_shapes_until_set_shape():
    x = tf.constant([1.0, 2.0, 3.0])
    y = py_func(lambda a: a * 2, [x], tf.float32)
    assert y.shape.ndims is None
    y.set_shape([3])
    assert y.shape.as_list() == [3]
    np.testing.assert_array_equal(_run(tf.reduce_sum(y)), 12.0)


def test_single_dtype_gives_a_tensor_and_a_list_gives_a_list():
    x = tf.constant(0.0, tf.float64)
    single = py_func(lambda a: a + 1, [x], tf.float64)
    one = py_func(lambda a: a + 1, [x], [tf.float64])
    two_list = py_func(lambda a: [a, a + 1], [x], [tf.float64, tf.float64])
    two_tuple = py_func(lambda a: (a, a + 1), (x,), (tf.float64, tf.float64))
    assert isinstance(single, tf.Tensor)
    assert isinstance(one, list) and len(one) == 1
    assert isinstance(two_list, list) and len(two_list) == 2
    got = _run([single, one, two_list, two_tuple])
    assert got[0] == 1.0 and got[1] == [1.0]
    assert got[2] == [0.0, 1.0] and got[3] == [0.0, 1.0]


def test_multiple_outputs_of_different_dtypes_and_shapes():
    x = tf.placeholder(tf.int32, [None])

    def stats(a):
        return a.sum(), a.astype(np.float32) / a.max(), np.array([b"n=%d" % a.size])
    total, scaled, label = py_func(stats, [x], [tf.int32, tf.float32, tf.string])
    got = _run([total, scaled, label], {x: [1, 2, 4]})
    assert got[0] == 7
    np.testing.assert_allclose(got[1], [0.25, 0.5, 1.0])
    assert got[1].dtype == np.float32
    np.testing.assert_array_equal(got[2], [b"n=3"])


def test_python_literals_and_no_inputs():
    assert _run(py_func(lambda: 42.0, [], tf.float64)) == 42.0
    assert _run(py_func(lambda: 7, [], tf.int64)) == 7


def test_python_float_converts_to_float32_and_int_to_narrower_ints():
    # TF 1.x rejects a float64 result for Tout=float32 ("0-th value returned by pyfunc_0
    # is double, but expects float"); we convert within a kind, as users mean.
    f = py_func(lambda: 1.5, [], tf.float32)
    i = py_func(lambda: [[1, 2, 3]], [], [tf.int8])[0]  # one output: the list
    c = py_func(lambda: 2.0, [], tf.complex64)  # float -> complex loses nothing
    u = py_func(lambda: np.array([0, 255]), [], tf.uint8)  # int64 in uint8's range
    got_f, got_i, got_c, got_u = _run([f, i, c, u])
    assert got_u.dtype == np.uint8 and got_u.tolist() == [0, 255]
    assert np.asarray(got_f).dtype == np.float32 and got_f == 1.5
    assert got_i.dtype == np.int8 and got_i.tolist() == [1, 2, 3]
    assert np.asarray(got_c).dtype == np.complex64 and got_c == 2.0


def test_scalar_string_input_arrives_as_bytes():
    seen = []

    def decode(s):
        seen.append(s)
        return s.decode().upper()
    assert _run(py_func(decode, [tf.constant("abc")], tf.string)) == b"ABC"
    assert seen == [b"abc"] and type(seen[0]) is bytes


def test_strings_in_and_out():
    x = tf.constant(["hello", "hi"])
    seen = []

    def greet(a):
        seen.append((a.dtype, a.tolist()))
        return a + b" there"
    y = py_func(greet, [x], tf.string)
    assert np.asarray(_run(y)).tolist() == [b"hello there", b"hi there"]
    assert seen == [(np.dtype(object), [b"hello", b"hi"])]  # object arrays of bytes


@pytest.mark.parametrize("result, expected", [
    ("你好 世界", "你好 世界".encode("utf8")),          # a str encodes as UTF-8
    (b"raw", b"raw"),
    (np.array([" there"]), [b" there"]),                # numpy unicode arrays
    (np.array([b"fixed", b"len"]), [b"fixed", b"len"]),  # numpy bytes arrays
    (np.array([b" there", " ya"], dtype=object), [b" there", b" ya"]),
])
def test_string_results_become_bytes(result, expected):
    got = _run(py_func(lambda: result, [], tf.string))
    assert np.asarray(got).tolist() == expected


def test_string_list_output_in_a_list_of_outputs():
    words = ["this", "is", "a", "test"]
    (s,) = py_func(lambda: [words], [], [tf.string])  # one output: the list
    assert _run(s).tolist() == [b"this", b"is", b"a", b"test"]


def test_no_outputs_runs_for_side_effects_and_returns_the_op():
    calls = []
    state = np.array([1], np.int64)

    def increment(diff):
        state[:] += diff
        calls.append(int(diff))
    op = py_func(increment, [tf.constant(2, tf.int64)], [])
    assert isinstance(op, tf.Operation) and len(op.outputs) == 0
    assert _run(op) is None
    assert state.tolist() == [3] and calls == [2]
    stateless = py_func(lambda _: None, [tf.constant(3)], [], stateful=False)
    assert isinstance(stateless, tf.Operation) and _run(stateless) is None


def test_stateful_counter_runs_once_per_run_even_fetched_twice():
    producer = iter(range(10))
    x = py_func(lambda: next(producer), [], tf.int64)
    y = x + 0
    with tf.Session() as sess:
        assert sess.run(x) == 0
        assert sess.run([x, y, x]) == [1, 1, 1]  # one call per step
        assert sess.run(x) == 2
    assert x.op.type == "PyFunc" and x.op.op_def.stateful


def test_stateful_py_funcs_are_never_merged():
    counter = {"n": 0}

    def bump():
        counter["n"] += 1
        return counter["n"]
    a = py_func(bump, [], tf.int64)
    b = py_func(bump, [], tf.int64)
    assert a.op.get_attr("token") != b.op.get_attr("token")
    assert sorted(_run([a, b])) == [1, 2]


def test_stateless_op():
    x = py_func(lambda a: a * 3, [tf.constant(2)], tf.int32, stateful=False)
    assert x.op.type == "PyFuncStateless" and not x.op.op_def.stateful
    assert _run(x) == 6


def test_op_attrs_match_tensorflow():
    x = tf.constant([1.0])
    y = py_func(lambda a, b: a, [x, tf.constant(1, tf.int64)], [tf.float32], name="my_fn")[0]
    op = y.op
    assert op.name == "my_fn" and op.type == "PyFunc"
    assert op.get_attr("Tin") == [tf.float32, tf.int64]
    assert op.get_attr("Tout") == [tf.float32]
    assert op.get_attr("token").startswith("pyfunc_")
    assert [t.name for t in op.inputs] == [x.name, op.inputs[1].name]


def test_no_gradient():
    x = tf.constant(1.0)
    y = py_func(lambda a: a * 2, [x], tf.float32)
    assert get_op_def("PyFunc").not_differentiable
    assert get_op_def("PyFuncStateless").not_differentiable
    assert tf.gradients(y, [x]) == [None]


def test_inputs_are_copies_the_function_may_modify():
    c = tf.constant([1.0, -2.0, 3.0])

    def relu_in_place(a):
        a[a < 0] = 0
        return a
    y = py_func(relu_in_place, [c], tf.float32)
    got_y, got_c = _run([y, c])
    np.testing.assert_array_equal(got_y, [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(got_c, [1.0, -2.0, 3.0])


def test_a_returned_array_the_function_keeps_is_not_aliased():
    kept = np.array([1.0, 2.0], np.float32)
    y = py_func(lambda: kept, [], tf.float32)
    got = _run(y + tf.constant([2.0, 3.0]))
    np.testing.assert_array_equal(got, [3.0, 5.0])
    with tf.Session() as sess:
        first = sess.run(y)
        kept[:] = 0  # the function's own state changes after the step
        np.testing.assert_array_equal(first, [1.0, 2.0])


def test_fortran_ordered_result_comes_back_in_c_order():
    val = [[1, 2], [3, 4]]
    got = _run(py_func(lambda: np.array(val, order="F"), [], tf.int64))
    np.testing.assert_array_equal(got, val)


# ---- errors ---------------------------------------------------------------------------
def test_wrong_number_of_results():
    two = py_func(lambda: (1.0, 2.0), [], [tf.float32], name="two_for_one")
    none = py_func(lambda: None, [], tf.float32, name="none_for_one")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"PyFunc op 'two_for_one' calling .*<lambda> .*returned 2 "
                                 r"value\(s\) but Tout declares 1 \(\['float32'\]\).*"
                                 r"np.array"):
            sess.run(two)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="returned 0 value.* declares 1"):
            sess.run(none)


@pytest.mark.parametrize("result, tout, found", [
    ({"foo": 1}, tf.int64, "dict of numpy dtype object"),
    ("abc", tf.int64, "str of numpy dtype <U3"),
    (1.5, tf.int32, "float64, which does not convert to int32"),
    (1 + 2j, tf.float32, "complex128, which does not convert to float32"),
    (1, tf.bool, "int64, which does not convert to bool"),
    (300, tf.uint8, r"values in \[300, 300\], out of the range of uint8"),
    (-1, tf.uint32, r"values in \[-1, -1\], out of the range of uint32"),
    (([[1, 2], [3]],), [tf.int32], "is not an array of int32"),
    (3, tf.string, "cannot be a string tensor"),
    (np.array([], dtype=[("foo", np.float32)]), tf.float32, "cannot become float32"),
])
def test_unconvertible_result(result, tout, found):
    def bad():
        return result
    y = py_func(bad, [], tout, name="bad_result")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError) as info:
        sess.run(y)
    msg = str(info.value)
    assert "PyFunc op 'bad_result' calling test_unconvertible_result.<locals>.bad" in msg
    assert re.search(found, msg), msg
    assert "[[node bad_result (op PyFunc)" in msg


def _raiser(exc_type):
    def inner_exception():
        raise exc_type("blah")

    def raise_exception():
        inner_exception()
    return raise_exception


@pytest.mark.parametrize("py_exc, tf_exc", [
    (ValueError, tf.errors.InvalidArgumentError),
    (TypeError, tf.errors.InvalidArgumentError),
    (StopIteration, tf.errors.OutOfRangeError),
    (MemoryError, tf.errors.ResourceExhaustedError),
    (NotImplementedError, tf.errors.UnimplementedError),
    (KeyError, tf.errors.UnknownError),
    (type("WeirdError", (Exception,), {}), tf.errors.UnknownError),
])
def test_exception_raised_by_func_maps_to_tf_error(py_exc, tf_exc):
    f = py_func(_raiser(py_exc), [], [], name="raising")
    with tf.Session() as sess, pytest.raises(tf_exc) as info:
        sess.run(f)
    msg = str(info.value)
    assert type(info.value) is tf_exc
    assert f"PyFunc op 'raising' calling _raiser.<locals>.raise_exception (defined at " \
           f"{__file__}:" in msg
    assert f"raised {py_exc.__name__}: " in msg and "blah" in msg
    # The function's traceback, outer frame before inner (as TF's message).
    assert re.search(r"in raise_exception.*in inner_exception.*blah", msg, re.DOTALL), msg
    assert "[[node raising (op PyFunc)" in msg


def test_tf_error_raised_by_func_keeps_its_class():
    def fail():
        raise tf.errors.FailedPreconditionError(None, None, "not ready")
    with pytest.raises(tf.errors.FailedPreconditionError, match="raised "
                       "FailedPreconditionError: not ready"):
        _run(py_func(fail, [], tf.int32))


def _kernel_error(op, fetch_inputs=()):
    """Runs `op`'s kernel as the executor would, returning the exception it raises."""
    class Ctx:
        pass
    ctx = Ctx()
    ctx.op, ctx.name, ctx.type, ctx.device = op, op.name, op.type, ""
    attrs = {k: op.get_attr(k) for k in ("token", "Tin", "Tout")}
    with pytest.raises(tf.errors.OpError) as info:
        get_op_def(op.type).kernels["CPU"].fn(ctx, None, list(fetch_inputs), **attrs)
    return info.value


def test_error_cause_is_the_original_exception():
    def parse(s):
        return int(s)
    y = py_func(parse, [tf.constant("x1")], tf.int64, name="parse")
    err = _kernel_error(y.op, [np.array(b"x1", dtype=object)])
    assert isinstance(err, tf.errors.InvalidArgumentError)
    assert isinstance(err.__cause__, ValueError)
    assert "invalid literal for int()" in str(err.__cause__)
    assert "[[node parse (op PyFunc)" in err.message  # attributed: passed on as is


def test_session_run_error_shows_the_funcs_own_traceback():
    # Session errors carry no chained kernel traceback (as TF's); the func's own
    # frames are in the message instead.
    def fail():
        raise ValueError("blah")
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        _run(py_func(fail, [], tf.int32, name="failing"))
    msg = info.value.message
    assert "<locals>.fail (defined at" in msg and "ValueError: blah" in msg
    assert 'in fail\n' in msg and "[[node failing (op PyFunc)" in msg


def test_func_must_be_callable():
    with pytest.raises(TypeError, match="py_func expects a callable"):
        py_func(3, [], tf.int32)

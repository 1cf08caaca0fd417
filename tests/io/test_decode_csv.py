"""decode_csv (the DecodeCSV op): defaults, required columns, quoting, select_cols,
na_value, shapes, and errors that name the record, column and value.

Behaviour after TF's decode_csv_op_test.py.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.op_def import get_op_def
from tensorweave.ops.parsing.csv_ops import decode_csv

pytestmark = pytest.mark.usefixtures("fresh_graph")


def _run(records, defaults, **kw):
    with tf.Session() as sess:
        return sess.run(decode_csv(records, defaults, **kw))


def _fails(error, pattern, records, defaults, **kw):
    with pytest.raises(error, match=pattern):
        _run(records, defaults, **kw)


def test_op_interface_is_tfs():
    op_def = get_op_def("DecodeCSV")
    assert [(i.name, i.is_list) for i in op_def.inputs] == [("records", False),
                                                           ("record_defaults", True)]
    assert set(op_def.attrs) == {"OUT_TYPE", "field_delim", "use_quote_delim", "na_value",
                                 "select_cols"}
    outs = decode_csv(["1,a"], [[0], [""]], field_delim=",")
    op = outs[0].op
    assert op.type == "DecodeCSV"
    assert op.get_attr("OUT_TYPE") == [tf.int32, tf.string]
    assert op.get_attr("use_quote_delim") is True and op.get_attr("select_cols") == []
    assert tf.gradients(tf.cast(outs[0], tf.float32), [tf.constant(1.0)]) == [None]


def test_dtypes_and_values_per_column():
    x, n, big, d, s = _run(["1.5,2,2147483648,-1.79e+308,aa", "0.2,-5,7,1e-3,bb"],
                           [[0.0], [0], np.array([], np.int64), np.array([], np.float64),
                            [""]])
    assert x.dtype == np.float32 and n.dtype == np.int32 and big.dtype == np.int64
    assert d.dtype == np.float64
    np.testing.assert_allclose(x, [1.5, 0.2])
    assert list(n) == [2, -5] and list(big) == [2147483648, 7]
    np.testing.assert_allclose(d, [-1.79e308, 1e-3])
    assert list(s) == [b"aa", b"bb"]


def test_scalar_defaults_and_scalar_record():
    a, b = _run("1,4", [1, 2])
    assert a == 1 and b == 4
    assert [int(v) for v in _run('1,""', [[3], [4]])] == [1, 4]


def test_empty_fields_take_the_defaults():
    x, n, s = _run([",1,", "0.2,3,bcd", "3.0,,"], [[1.0], [0], ["a"]])
    np.testing.assert_allclose(x, [1.0, 0.2, 3.0])
    assert list(n) == [1, 3, 0] and list(s) == [b"a", b"bcd", b"a"]


def test_shapes_follow_the_records():
    (out,) = _run([["1", "2"], ['""', "4"]], [[5]])
    assert out.tolist() == [[1, 2], [5, 4]]
    rec = tf.placeholder(tf.string, [None, 3])
    outs = decode_csv(rec, [[0], [""]])
    assert [o.shape.as_list() for o in outs] == [[None, 3], [None, 3]]


def test_quoted_fields_and_escapes():
    (s,) = _run(['"1.0"', '"ab , c"', '"a\nbc"', '"ab""c"', " abc ", '""""'], [["1"]])
    assert list(s) == [b"1.0", b"ab , c", b"a\nbc", b'ab"c', b" abc ", b'"']
    a, b, c = _run(['"x,y",2,"z"""'], [[""], [0], [""]])
    assert list(a) == [b"x,y"] and list(b) == [2] and list(c) == [b'z"']


def test_quotes_are_plain_characters_without_use_quote_delim():
    (s,) = _run(["1", '"3"', '"', 'a"b'], [[""]], use_quote_delim=False)
    assert list(s) == [b"1", b'"3"', b'"', b'a"b']
    x, n, s = _run([",1,", '3.0,,"'], [[1.0], [0], ["a"]], use_quote_delim=False)
    assert list(n) == [1, 0] and list(s) == [b"a", b'"']


def test_other_delimiter():
    x, n = _run(["1\t1", "0.2\t3", "3.0\t"], [[1.0], [0]], field_delim="\t")
    np.testing.assert_allclose(x, [1.0, 0.2, 3.0])
    assert list(n) == [1, 3, 0]


def test_na_value_is_missing():
    x, n, s = _run(["2.0,NA,aa", "NA,5,bb", "3,6,NA"], [[0.0], [0], [""]], na_value="NA")
    np.testing.assert_allclose(x, [2.0, 0.0, 3.0])
    assert list(n) == [0, 5, 6] and list(s) == [b"aa", b"bb", b""]


def test_select_cols_parse_only_those_columns():
    a, b = _run([",,", "4,5,6"], [[1], [2]], select_cols=[0, 1])
    assert list(a) == [1, 4] and list(b) == [2, 5]
    a, b, c = _run([",,", "4,5,6"], [[0], [1], [2]], select_cols=[0, 1, 2])
    assert (list(a), list(b), list(c)) == ([0, 4], [1, 5], [2, 6])
    # Columns after the last selected one are not parsed (bad quoting there is fine).
    a, c = _run(['1,x,3,"bad"q', "4,y,6"], [[0], [0]], select_cols=[0, 2])
    assert list(a) == [1, 4] and list(c) == [3, 6]


def test_select_cols_errors():
    with pytest.raises(ValueError, match="Length of select_cols and record_defaults do not"):
        decode_csv(["1,2,3"], [[0], [0], [0]], select_cols=[0])
    with pytest.raises(ValueError, match="select_cols is not strictly increasing"):
        decode_csv(["1,2,3"], [[0], [1]], select_cols=[1, 0])
    with pytest.raises(ValueError, match="select_cols contains negative values"):
        decode_csv(["1,2,3"], [[0], [1]], select_cols=[-1, 0])
    _fails(tf.errors.InvalidArgumentError, r"Expect 2 fields but have 1 in record 0",
           ["1,2,3"], [[0], [1]], select_cols=[0, 3])
    _fails(tf.errors.InvalidArgumentError, r"Expect 3 fields but have 2 in record 0",
           [",,", "4,5,6"], [[0], [1], [2]], select_cols=[0, 1, 3])


def test_required_column_missing_names_record_and_field():
    _fails(tf.errors.InvalidArgumentError,
           r"Field 1 is required but missing in record 2!.*'3\.0,'",
           [",1", "0.2,3", "3.0,"], [[1.0], np.array([], np.int32)])
    _fails(tf.errors.InvalidArgumentError, "Field 0 is required but missing in record 0",
           ["NA"], [[]], na_value="NA")  # [] is a required float32 column
    assert _run(["2.5"], [[]])[0].tolist() == [2.5]


def test_wrong_field_count_names_record_expected_and_found():
    _fails(tf.errors.InvalidArgumentError,
           r"Expect 1 fields but have 2 in record 0: b?',1'",
           [",1", "0.2,2"], [[1.0]])
    _fails(tf.errors.InvalidArgumentError, r"Expect 3 fields but have 2 in record 1",
           ["1,2,3", "1,2"], [[0], [0], [0]])
    _fails(tf.errors.InvalidArgumentError, r"Expect 1 fields but have 0 in record 0",
           [""], [[0]])


@pytest.mark.parametrize("records,defaults,pattern", [
    ([",1", "0.2,234a", "3.0,2"], [[1.0], np.array([], np.int32)],
     r"Field 1 in record 1 is not a valid int32: '234a'"),
    (["1", "9999999999999999999999999"], [[1]], r"Field 0 in record 1 is not a valid int32"),
    (["2147483648"], [[1]], r"not a valid int32: '2147483648'"),
    (["+5"], [[1]], r"not a valid int32: '\+5'"),
    (["1.0"], [np.array([0], np.int64)], r"not a valid int64: '1.0'"),
    ([",1", "0.2,2", "3.0adf,3"], [[1.0], [0]], r"Field 0 in record 2 is not a valid float32"),
    (["1_000"], [[0.0]], r"not a valid float32: '1_000'"),
    (["x"], [np.array([0.0])], r"not a valid float64: 'x'"),
])
def test_unparsable_numbers_name_the_field(records, defaults, pattern):
    _fails(tf.errors.InvalidArgumentError, pattern, records, defaults)


def test_numbers_tf_accepts():
    n, x = _run([" 7 , 2.5e1 ", "-3,inf", "0,nan", "1,0x10"], [[0], [0.0]])
    assert list(n) == [7, -3, 0, 1]
    assert x[0] == 25.0 and np.isposinf(x[1]) and np.isnan(x[2]) and x[3] == 16.0


def test_bad_quoting_errors():
    _fails(tf.errors.InvalidArgumentError,
           r"Unquoted fields cannot have quotes/CRLFs inside \(record 2",
           ['"1,a,"', "0.22", 'a"bc'], [["a"]])
    _fails(tf.errors.InvalidArgumentError, "Quoted field has to end with quote followed",
           ['"'], [["default"]])
    _fails(tf.errors.InvalidArgumentError,
           "Quote inside a string has to be escaped by another quote",
           ['"a"b",c'], [[""], [""]])


def test_bad_defaults_are_refused():
    with pytest.raises(ValueError, match="Shape must be at most rank 1 but is rank 2"):
        decode_csv(["1"], [[[0]]])
    with pytest.raises(ValueError, match="column 0 has 2 values"):
        decode_csv(["1"], [[0, 1]])
    with pytest.raises(TypeError, match="column 0 has dtype bool"):
        decode_csv(["1"], [[True]])
    with pytest.raises(ValueError, match="field_delim"):
        decode_csv(["1"], [[0]], field_delim=";;")
    # A default of unknown shape is checked when it is fed.
    d = tf.placeholder(tf.int32, None)
    out = decode_csv(['""', "1"], [d])
    with tf.Session() as sess:
        assert sess.run(out, {d: [9]})[0].tolist() == [9, 1]
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match="should only be 1 default per field but field 0 has 2"):
            sess.run(out, {d: [9, 8]})

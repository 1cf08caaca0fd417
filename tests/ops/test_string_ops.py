"""String ops of TF 1.x text pipelines: StringSplit/StringSplitV2, StringLength,
Substr, StringStrip, StringLower/Upper, RegexReplace/StaticRegexReplace,
RegexFullMatch, StringToNumber, ReduceJoin; and a tokenize -> hash -> embed pipeline.

Specification: TF 1.x python/kernel_tests string_split_op_test.py, substr_op_test.py,
regex_replace_op_test.py, string_strip_op_test.py, string_to_number_op_test.py,
string_length_op_test.py, reduce_join_op_test.py; values computed by hand.
"""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.kernels.fingerprint import hash_buckets
from tensorweave.ops.strings import string_ops as S

pytestmark = pytest.mark.usefixtures("graph")


def run(*fetches, feed=None):
    with tf.Session() as sess:
        out = sess.run(list(fetches), feed)
    return out[0] if len(out) == 1 else out


def assert_sparse(value, indices, values, shape):
    np.testing.assert_array_equal(value.indices.reshape(-1, 2), np.reshape(indices, (-1, 2)))
    assert list(value.values) == values
    np.testing.assert_array_equal(value.dense_shape, shape)


# ---- StringSplit ------------------------------------------------------------------------
def test_string_split_on_spaces_skips_empty_tokens():
    sp = S.string_split(tf.constant(["pigs on the wing", "animals", " a  b "]))
    assert isinstance(sp, tf.SparseTensor)
    assert sp.op.type == "StringSplit"
    assert sp.indices.shape.as_list() == [None, 2] and sp.dense_shape.shape.as_list() == [2]
    assert_sparse(run(sp), [[0, 0], [0, 1], [0, 2], [0, 3], [1, 0], [2, 0], [2, 1]],
                  [b"pigs", b"on", b"the", b"wing", b"animals", b"a", b"b"], [3, 4])


def test_string_split_each_delimiter_character_splits():
    sp = S.string_split(tf.constant(["a,b;c", "d;;e"]), delimiter=",;")
    assert_sparse(run(sp), [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1]],
                  [b"a", b"b", b"c", b"d", b"e"], [2, 3])
    sp = S.string_split(tf.constant(["d;;e", "x"]), delimiter=",;", skip_empty=False)
    assert_sparse(run(sp), [[0, 0], [0, 1], [0, 2], [1, 0]], [b"d", b"", b"e", b"x"], [2, 3])


def test_string_split_empty_delimiter_gives_bytes():
    sp = S.string_split(tf.constant(["hello", "hi", "é"]), delimiter="")
    value = run(sp)
    assert list(value.values) == [b"h", b"e", b"l", b"l", b"o", b"h", b"i", b"\xc3", b"\xa9"]
    np.testing.assert_array_equal(value.dense_shape, [3, 5])
    assert value.indices.tolist()[5:] == [[1, 0], [1, 1], [2, 0], [2, 1]]


def test_string_split_skip_empty_false_keeps_empty_tokens_but_not_empty_strings():
    sp = S.string_split(tf.constant([" a ", "", "b"]), skip_empty=False)
    assert_sparse(run(sp), [[0, 0], [0, 1], [0, 2], [2, 0]], [b"", b"a", b"", b"b"], [3, 3])
    sp = S.string_split(tf.constant(["", ""]))
    assert_sparse(run(sp), np.zeros((0, 2)), [], [2, 0])


def test_string_split_delimiter_as_a_fed_tensor_and_sep_alias():
    d = tf.placeholder(tf.string, [])
    sp = S.string_split(tf.constant(["a|b", "c"]), d)
    assert_sparse(run(sp, feed={d: "|"}), [[0, 0], [0, 1], [1, 0]], [b"a", b"b", b"c"], [2, 2])
    sp = S.string_split(["x-y"], sep="-")
    assert list(run(sp).values) == [b"x", b"y"]


def test_string_split_errors():
    with pytest.raises(TypeError, match="StringSplit: input .*must be a string tensor"):
        S.string_split(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="must be a vector"):
        S.string_split(tf.constant([["a b"]]))
    with pytest.raises(ValueError, match="must be a scalar"):
        S.string_split(tf.constant(["a b"]), tf.constant([" "]))


def test_strings_split_is_python_str_split():
    sp = S.split(tf.constant(["a,,b", "", "c"]), sep=",")
    assert sp.op.type == "StringSplitV2"
    assert_sparse(run(sp), [[0, 0], [0, 1], [0, 2], [1, 0], [2, 0]],
                  [b"a", b"", b"b", b"", b"c"], [3, 3])
    sp = S.split(tf.constant(["  a \t b  ", "a<>b<>c"]))
    assert list(run(sp).values) == [b"a", b"b", b"a<>b<>c"]
    sp = S.split(tf.constant(["a<>b<>c"]), sep="<>", maxsplit=1)
    assert list(run(sp).values) == [b"a", b"b<>c"]


# ---- StringLength -----------------------------------------------------------------------
def test_string_length_bytes_and_utf8_chars():
    x = tf.constant([["hello", ""], ["héllo", "\U0001f604"]])
    got_bytes, got_chars = run(S.length(x), S.length(x, unit="UTF8_CHAR"))
    assert got_bytes.dtype == np.int32 and S.length(x).shape.as_list() == [2, 2]
    np.testing.assert_array_equal(got_bytes, [[5, 0], [6, 4]])
    np.testing.assert_array_equal(got_chars, [[5, 0], [5, 1]])
    assert run(S.length("abc")) == 3
    with pytest.raises(ValueError, match="unit must be one of"):
        S.length(x, unit="UTF16_CHAR")
    with pytest.raises(TypeError, match="StringLength: input .*must be a string"):
        S.length(tf.constant([1.0]))


# ---- Substr -----------------------------------------------------------------------------
def test_substr_scalar_vector_and_matrix_positions():
    assert run(S.substr("Hello", 1, 3)) == b"ell"
    got = run(S.substr(tf.constant(["ten", "eleven", "twelve"]), [1, 2, 3], [2, 3, 10]))
    assert list(got) == [b"en", b"eve", b"lve"]
    got = run(S.substr(tf.constant([["ab", "cd"], ["ef", "gh"]]), 1, 1))
    assert got.tolist() == [[b"b", b"d"], [b"f", b"h"]]


def test_substr_negative_pos_and_len():
    assert list(run(S.substr(tf.constant(["Hello", "World"]), -3, 2))) == [b"ll", b"rl"]
    assert run(S.substr("Hello", 2, -1)) == b"llo"  # negative len: the rest
    assert run(S.substr("Hello", 5, 2)) == b""       # pos == size is allowed


def test_substr_broadcasts_pos_and_len_against_input():
    x = tf.constant([["ten", "eleven"], ["twelve", "thirteen"]])
    got = run(S.substr(x, [1, 2], [1, 3]))  # pos/len [2] broadcast over rows
    assert got.tolist() == [[b"e", b"eve"], [b"w", b"irt"]]
    got = run(S.substr(tf.constant(["abc", "xyz"]), [[0], [1]], [[1], [2]]))  # -> [2, 2]
    assert got.tolist() == [[b"a", b"x"], [b"bc", b"yz"]]
    assert S.substr(x, [1, 2], [1, 3]).shape.as_list() == [2, 2]


def test_substr_utf8_chars():
    s = "H\xc3ll\U0001f604".encode("utf-8")
    got = run(S.substr(tf.constant([s]), [1], [3], unit="UTF8_CHAR"))
    assert got[0].decode("utf-8") == "\xc3ll"
    got = run(S.substr(tf.constant([s]), [-2], [2], unit="UTF8_CHAR"))
    assert got[0].decode("utf-8") == "l\U0001f604"


def test_substr_out_of_range_pos_names_position_and_string():
    x = tf.constant(["good", "bad"])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"pos 4 out of range for string b'bad' at index 1"):
        run(S.substr(x, [1, 4], [1, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"pos -4 out of range"):
        run(S.substr(x, [1, -4], [1, 1]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"pos 4 out of range"):
        run(S.substr(tf.constant(["héé"]), [4], [1], unit="UTF8_CHAR"))


def test_substr_build_errors():
    with pytest.raises(TypeError, match="Substr: pos .* must be int32 or int64"):
        S.substr("test", 3.0, 1)
    with pytest.raises(TypeError, match="Substr: len .* must be int32 or int64"):
        S.substr("test", 3, 1.0)
    with pytest.raises(ValueError, match="pos and len must have the same shape"):
        S.substr(tf.constant(["ab", "cd"]), [0, 1], [1])
    with pytest.raises(TypeError, match="Substr: input"):
        S.substr(tf.constant([3]), 0, 1)


# ---- StringStrip, StringLower, StringUpper ----------------------------------------------
def test_string_strip():
    got = run(S.string_strip(tf.constant([["\t pigs on the wing\n", "animals  "],
                                          ["\r\x0b\x0c", "a b"]])))
    assert got.tolist() == [[b"pigs on the wing", b"animals"], [b"", b"a b"]]
    with pytest.raises(TypeError, match="StringStrip"):
        S.string_strip(tf.constant([1]))


def test_lower_and_upper_ascii_and_utf8():
    x = tf.constant(["HeLLo Wörld", "ÀB"])
    lo, up, lo8, up8 = run(S.lower(x), S.upper(x), S.lower(x, encoding="utf-8"),
                           S.upper(x, encoding="utf-8"))
    assert list(lo) == ["hello wörld".encode(), "Àb".encode()]  # ASCII letters only
    assert list(up) == ["HELLO WöRLD".encode(), "ÀB".encode()]
    assert list(lo8) == ["hello wörld".encode(), "àb".encode()]
    assert list(up8) == ["HELLO WÖRLD".encode(), "ÀB".encode()]
    assert S.lower(x).op.type == "StringLower" and S.upper(x).op.type == "StringUpper"
    with pytest.raises(ValueError, match="only utf-8 or ''"):
        S.lower(x, encoding="latin-1")


# ---- RegexReplace, RegexFullMatch -------------------------------------------------------
def test_regex_replace_static_and_tensor_patterns():
    x = tf.constant(["aaa", "abab", "xyz"])
    static = S.regex_replace(x, "a.", "X")
    assert static.op.type == "StaticRegexReplace"
    assert static.op.get_attr("pattern") in ("a.", b"a.")
    pattern, rewrite = tf.placeholder(tf.string, []), tf.placeholder(tf.string, [])
    dynamic = S.regex_replace(x, pattern, rewrite)
    assert dynamic.op.type == "RegexReplace"
    got_s, got_d = run(static, dynamic, feed={pattern: "a.", rewrite: "X"})
    assert list(got_s) == list(got_d) == [b"Xa", b"XX", b"xyz"]


def test_regex_replace_first_only_and_groups():
    x = tf.constant(["a1b22c333"])
    assert list(run(S.regex_replace(x, r"\d+", "#", replace_global=False))) == [b"a#b22c333"]
    assert list(run(S.regex_replace(x, r"(\d+)", r"<\1>"))) == [b"a<1>b<22>c<333>"]
    assert list(run(S.regex_replace(tf.constant(["john smith"]), r"(\w+) (\w+)",
                                    r"\2, \1 (\0) \\"))) == [b"smith, john (john smith) \\"]


def test_regex_replace_empty_matches_as_re2():
    assert run(S.regex_replace("abc", "", "-")) == b"-a-b-c-"
    assert run(S.regex_replace("abxd", "x*", "-")) == b"-a-b-d-"  # none right after "x"


def test_regex_replace_works_on_utf8_characters_and_any_shape():
    got = run(S.regex_replace(tf.constant([["héllo"], ["ça"]]), "^.", "_"))
    assert got.tolist() == [["_éllo".encode()], [b"_a"]]  # "." is one UTF-8 character


def test_regex_replace_bad_pattern_and_rewrite():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid pattern: a\(b"):
        S.regex_replace(tf.constant(["ab"]), "a(b", "x")
    p = tf.placeholder(tf.string, [])
    y = S.regex_replace(tf.constant(["ab"]), p, "x")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"Invalid pattern: \[a"):
        run(y, feed={p: "[a"})
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid rewrite pattern"):
        S.regex_replace(tf.constant(["ab"]), "(a)", r"\2")
    with pytest.raises(TypeError, match="RegexReplace: input"):
        S.regex_replace(tf.constant([1]), "a", "b")


def test_regex_full_match():
    x = tf.constant([["abc", "ab"], ["xabc", "a7"]])
    static = S.regex_full_match(x, r"a\w")
    assert static.op.type == "StaticRegexFullMatch" and static.dtype == tf.bool
    p = tf.placeholder(tf.string, [])
    dynamic = S.regex_full_match(x, p)
    assert dynamic.op.type == "RegexFullMatch"
    got_s, got_d = run(static, dynamic, feed={p: r"a\w"})
    np.testing.assert_array_equal(got_s, [[False, True], [False, True]])
    np.testing.assert_array_equal(got_d, got_s)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid pattern"):
        S.regex_full_match(x, "(")


# ---- StringToNumber ---------------------------------------------------------------------
def test_string_to_number_floats():
    x = tf.constant(["0", "3", "-1", "1.12", "0xF", "   -10.5", "3.40282e+38", "INF", "1e2 "])
    got = run(S.string_to_number(x))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.float32([0, 3, -1, 1.12, 15, -10.5, 3.40282e+38,
                                                np.inf, 100]))
    got = run(S.string_to_number(tf.constant(["3.40283e+38", "-3.40283e+38", "nan"])))
    assert got[0] == np.inf and got[1] == -np.inf and np.isnan(got[2])  # beyond float32
    got = run(S.string_to_number(tf.constant(["3.40283e+38", "0.1"]), out_type=tf.float64))
    assert got.dtype == np.float64 and got.tolist() == [3.40283e+38, 0.1]


@pytest.mark.parametrize("out_type, np_type, bad", [
    (tf.int32, np.int32, ["2147483648", "-2147483649", "2.9", "10foobar", "1_0", ""]),
    (tf.int64, np.int64, ["9223372036854775808", "2.9", "0x10"]),
])
def test_string_to_number_integers(out_type, np_type, bad):
    x = tf.constant(["0", "3", "-1", "    -10", "+7", str(np.iinfo(np_type).max),
                     str(np.iinfo(np_type).min)])
    got = run(S.string_to_number(x, out_type=out_type))
    assert got.dtype == np_type
    assert got.tolist() == [0, 3, -1, -10, 7, np.iinfo(np_type).max, np.iinfo(np_type).min]
    p = tf.placeholder(tf.string, [None])
    y = S.string_to_number(p, out_type)
    for b in bad:
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=f"StringToNumberOp could not correctly convert string: {b}"):
            run(y, feed={p: ["1", b]})


def test_string_to_number_errors():
    p = tf.placeholder(tf.string, [None])
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="could not correctly convert string: 10foobar"):
        run(S.string_to_number(p), feed={p: ["10foobar"]})
    with pytest.raises(TypeError, match="out_type must be one of"):
        S.string_to_number(p, out_type=tf.int8)
    with pytest.raises(TypeError, match="StringToNumber: string_tensor"):
        S.string_to_number(tf.constant([1.0]))


# ---- ReduceJoin -------------------------------------------------------------------------
def test_reduce_join_axes_order_keep_dims_and_separator():
    a = tf.constant([["a", "b"], ["c", "d"]])
    got = run(S.reduce_join(a, 0), S.reduce_join(a, 1), S.reduce_join(a, -2),
              S.reduce_join(a, 0, keep_dims=True), S.reduce_join(a, 1, keep_dims=True),
              S.reduce_join(a, 0, separator="."), S.reduce_join(a, [0, 1]),
              S.reduce_join(a, [1, 0]), S.reduce_join(a), S.reduce_join(a, []))
    assert list(got[0]) == [b"ac", b"bd"] and list(got[1]) == [b"ab", b"cd"]
    assert list(got[2]) == [b"ac", b"bd"]
    assert got[3].tolist() == [[b"ac", b"bd"]] and got[4].tolist() == [[b"ab"], [b"cd"]]
    assert list(got[5]) == [b"a.c", b"b.d"]
    assert got[6] == b"acbd" and got[7] == b"abcd" and got[8] == b"abcd"
    assert got[9].tolist() == [[b"a", b"b"], [b"c", b"d"]]
    assert S.reduce_join(a, 0, keep_dims=True).shape.as_list() == [1, 2]
    assert S.reduce_join(a).shape.as_list() == []


def test_reduce_join_3d_unknown_rank_and_empty_dims():
    x = np.array([[["a", "b"], ["c", "d"]], [["e", "f"], ["g", "h"]]], dtype=object)
    got = run(S.reduce_join(tf.constant(x), [2, 0], separator="-"))
    assert list(got) == [b"a-b-e-f", b"c-d-g-h"]  # axis 2 (listed first) fastest
    p = tf.placeholder(tf.string)  # unknown rank: axes from Rank/Range at run time
    assert run(S.reduce_join(p), feed={p: x}) == b"abcdefgh"
    e = tf.placeholder(tf.string, [2, 0])
    assert list(run(S.reduce_join(e, 1), feed={e: np.zeros((2, 0), object)})) == [b"", b""]


def test_reduce_join_errors():
    a = tf.constant([["a", "b"], ["c", "d"]])
    with pytest.raises(ValueError, match="Invalid reduction dimension 2"):
        S.reduce_join(a, 2)
    with pytest.raises(ValueError, match="Duplicate reduction dimension 1"):
        S.reduce_join(a, [1, -1])
    axes = tf.placeholder(tf.int32, [None])
    with pytest.raises(tf.errors.InvalidArgumentError, match="Invalid reduction dimension -3"):
        run(S.reduce_join(a, axes), feed={axes: [-3]})
    with pytest.raises(ValueError, match="Can't specify both"):
        S.reduce_join(a, axis=0, reduction_indices=0)


def test_no_gradients_through_string_ops():
    x = tf.constant(["1.5", "2"])
    y = S.string_to_number(x)
    assert tf.gradients(y, [x]) == [None]


# ---- a TF1 text pipeline ----------------------------------------------------------------
def test_text_pipeline_split_hash_embed():
    lines = tf.placeholder(tf.string, [None])
    cleaned = S.lower(S.regex_replace(S.string_strip(lines), r"[^\w ]", ""))
    tokens = S.string_split(cleaned)
    ids = tf.string_to_hash_bucket_fast(tokens.values, 100)
    sp_ids = tf.SparseTensor(tokens.indices, ids, tokens.dense_shape)
    table = np.arange(100 * 3, dtype=np.float32).reshape(100, 3)
    emb = tf.Variable(table)
    bag = tf.nn.embedding_lookup_sparse(emb, sp_ids, None, combiner="sum")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_bag, got_tokens = sess.run([bag, tokens],
                                       {lines: ["  The cat sat. ", "the DOG!", "cat"]})
    assert list(got_tokens.values) == [b"the", b"cat", b"sat", b"the", b"dog", b"cat"]
    buckets = hash_buckets(np.array([b"the", b"cat", b"sat", b"dog"], object), 100)
    the, cat, sat, dog = (table[b] for b in buckets)
    np.testing.assert_allclose(got_bag, [the + cat + sat, the + dog, cat])


def test_indexing_a_string_tensor_gives_its_element(graph):
    words = tf.constant([["a", "bc"], ["d", "ef"]])
    with tf.Session() as sess:
        first, row, col = sess.run([words[1, 1], words[0], words[:, 1]])
    assert first == b"ef" and list(row) == [b"a", b"bc"] and list(col) == [b"bc", b"ef"]

"""`tf.debugging`: the TF 1.13+ names of the numerics checks and asserts.

The same functions are also at the top level under their TF1 names
(`tf.check_numerics`, `tf.is_nan`, `tf.assert_equal`, ...).

Example:
    >>> loss = tf.debugging.check_numerics(loss, "loss")
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.ops.control_flow import (
    Assert as Assert, assert_equal as assert_equal, assert_greater as assert_greater,
    assert_greater_equal as assert_greater_equal, assert_less as assert_less,
    assert_less_equal as assert_less_equal, assert_negative as assert_negative,
    assert_non_negative as assert_non_negative, assert_none_equal as assert_none_equal,
    assert_positive as assert_positive, assert_rank as assert_rank,
    assert_type as assert_type)
from tensorweave.ops.control_flow.numerics_ops import (
    check_numerics as check_numerics, is_finite as is_finite, is_inf as is_inf,
    is_nan as is_nan)

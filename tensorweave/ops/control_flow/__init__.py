"""Functional control flow (If, While), grouping (tf.group, tf.tuple) and assertions.

`tf.cond` and `tf.while_loop` trace their Python functions into FuncGraphs
(see `tensorweave.framework.func_graph`) held in the attrs of one "If" or
"While" op; the op's kernel calls the body through the device's function
library, so only the taken branch runs and a loop runs in one kernel call.

The code lives in `cond_ops` (If, tf.cond, tf.case),
`while_ops` (While, WhileGrad, tf.while_loop), `assert_ops`
(tf.group, tf.tuple, tf.Assert, tf.assert_*, tf.Print), `scan_ops`
(FunctionalScan, under tf.map_fn/scan/fold*), `numerics_ops` and `print_ops`; this
package re-exports the public names of the first three, so importing any module of the
family registers their ops. Modules of the family import each other's submodules, never
this package (it is still being initialized while they load).

Example:
    >>> x = tf.placeholder(tf.float32, [])
    >>> y = tf.cond(x > 0, lambda: x * 2.0, lambda: -x)
    >>> i = tf.while_loop(lambda i: i < 10, lambda i: i + 1, [tf.constant(0)])
"""
# ruff: noqa: F401  (this package only re-exports)
from tensorweave.ops.control_flow.assert_ops import (
    Assert as Assert, Print as Print, assert_equal as assert_equal,
    assert_greater as assert_greater, assert_greater_equal as assert_greater_equal,
    assert_less as assert_less, assert_less_equal as assert_less_equal,
    assert_negative as assert_negative, assert_non_negative as assert_non_negative,
    assert_none_equal as assert_none_equal, assert_op as assert_op,
    assert_positive as assert_positive, assert_rank as assert_rank,
    assert_type as assert_type, group as group, print_op as print_op, tuple as tuple)
from tensorweave.ops.control_flow.cond_ops import case as case, cond as cond, if_op as if_op
from tensorweave.ops.control_flow.while_ops import (
    flatten_shapes as flatten_shapes, while_grad_op as while_grad_op,
    while_loop as while_loop, while_op as while_op)

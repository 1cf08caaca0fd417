"""`tensorweave.python.<path>`: TF 1.15's internal module paths, served by our modules."""
import importlib
import sys

import pytest

import tensorweave as tf
from tensorweave.python.table import MODULES, OURS_ONLY, RENAMES
from tensorweave.python.tf_names import NAMES


def test_the_import_forms_programs_use():
    import tensorweave.python.ops.array_ops as array_ops
    from tensorweave.python.framework import ops
    from tensorweave.python.ops import control_flow_ops, math_ops, nn_ops, variable_scope
    from tensorweave.python.training import session_run_hook, training_util
    assert array_ops.concat is tf.concat
    assert math_ops.reduce_sum is tf.reduce_sum
    assert nn_ops.relu is tf.nn.relu
    assert control_flow_ops.cond is tf.cond
    assert variable_scope.get_variable is tf.get_variable
    assert session_run_hook.SessionRunHook is tf.train.SessionRunHook
    assert training_util.get_or_create_global_step is tf.train.get_or_create_global_step
    for name in ("Graph", "get_default_graph", "convert_to_tensor", "name_scope", "GraphKeys",
                 "add_to_collection", "RegisterGradient", "control_dependencies", "device",
                 "Tensor", "Operation", "IndexedSlices"):
        assert getattr(ops, name) is getattr(tf, name), name


def test_a_graph_built_through_tf_paths_runs():
    from tensorweave.python.client import session
    from tensorweave.python.framework import constant_op, dtypes, ops
    from tensorweave.python.ops import array_ops, math_ops, variables
    with ops.Graph().as_default():
        x = array_ops.placeholder(dtypes.float32, [2])
        v = variables.VariableV1([1.0, 2.0])
        y = math_ops.add(x, v) * constant_op.constant(2.0)
        with session.Session() as sess:
            sess.run(variables.global_variables_initializer())
            assert sess.run(y, {x: [1.0, 1.0]}).tolist() == [4.0, 6.0]


def test_tensor_protos_through_tensor_util():
    import numpy as np

    from tensorweave.python.framework import constant_op, tensor_util
    with tf.Graph().as_default():
        c = constant_op.constant([[1, 2], [3, 4]])
        proto = c.op.node_def.attr["value"].tensor
        assert tensor_util.MakeNdarray(proto).tolist() == [[1, 2], [3, 4]]
        assert np.array_equal(tensor_util.constant_value(c), [[1, 2], [3, 4]])


def test_every_path_and_every_module_of_the_table_imports():
    for rel in list(MODULES) + list(OURS_ONLY):
        importlib.import_module("tensorweave.python." + rel)
        for src in MODULES.get(rel, OURS_ONLY.get(rel, ())):
            importlib.import_module(src)
    for target in RENAMES.values():
        src, attr = target.split(":")
        assert hasattr(importlib.import_module(src), attr), target
    assert set(MODULES) <= set(NAMES)  # tools/gen_tf_python_names.py is rerun with the table


def test_a_tf_name_we_lack_raises_naming_module_and_name(monkeypatch):
    from tensorweave.python.ops import array_ops
    monkeypatch.setitem(NAMES["ops.array_ops"], "tw_surely_absent", None)
    with pytest.raises(AttributeError, match=r"tensorweave\.python\.ops\.array_ops.*"
                       r"tw_surely_absent.*not built"):
        array_ops.tw_surely_absent  # noqa: B018


def test_a_function_with_other_parameters_than_tfs_is_not_offered():
    # TF's raw op gen_array_ops.split(axis, value, num_split) is not our tf.split.
    from tensorweave.python.ops import gen_array_ops
    with pytest.raises(AttributeError, match=r"split.*not built.*\(axis, value, num_split"):
        gen_array_ops.split  # noqa: B018
    assert gen_array_ops.reshape is tf.reshape  # same parameters: offered


def test_names_tf_does_not_have_there_and_private_names_are_refused():
    from tensorweave.python.ops import array_ops
    with pytest.raises(AttributeError, match="has no public 'train' either"):
        array_ops.train  # noqa: B018
    with pytest.raises(AttributeError, match="private"):
        array_ops._apply_mask_1d  # noqa: B018
    assert "concat" in dir(array_ops) and not any(n.startswith("_") for n in dir(array_ops))


def test_star_import_gives_only_built_names():
    ns: dict = {}
    exec("from tensorweave.python.training.session_run_hook import *", ns)
    assert ns["SessionRunArgs"] is tf.train.SessionRunArgs
    exported = importlib.import_module("tensorweave.python.ops.array_ops").__all__
    assert "concat" in exported and all(n in NAMES["ops.array_ops"] for n in exported)


def test_packages_offer_their_modules_as_attributes():
    import tensorweave.python as twp
    assert twp.ops.math_ops.add is tf.add  # type: ignore[attr-defined]
    assert sys.modules["tensorweave.python.ops.math_ops"] is twp.ops.math_ops  # type: ignore


def test_estimator_paths_offer_our_estimator_names():
    from tensorweave.python.estimator import estimator
    assert estimator.Estimator is tf.estimator.Estimator


def test_compat_v1_paths_are_our_modules_under_a_second_name():
    import tensorweave.compat.v1.train as train
    from tensorweave.compat.v1 import logging
    from tensorweave.compat.v1.keras import layers
    assert train is tf.train and logging is tf.logging and layers is tf.keras.layers
    assert train.__spec__.name == "tensorweave.train"  # the module keeps its own identity
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("tensorweave.compat.v1.no_such_module")


def test_raw_op_wrappers_are_our_functions_of_the_same_op():
    from tensorweave.python.ops import gen_array_ops, gen_math_ops, math_ops
    assert gen_math_ops.mat_mul is tf.matmul and math_ops.mat_mul is tf.matmul
    assert gen_array_ops.concat_v2 is tf.concat and gen_array_ops.pack is tf.stack
    with tf.Graph().as_default(), tf.Session() as sess:
        assert sess.run(gen_math_ops.arg_max([[1, 3, 2]], 1)).tolist() == [1]
        assert sess.run(gen_math_ops.mean([[1.0, 3.0]], 1, True)).tolist() == [[2.0]]
        a, b = sess.run(gen_array_ops.split_v([1, 2, 3], [1, 2], 0))
        assert (a.tolist(), b.tolist()) == ([1], [2, 3])

"""Graph construction semantics: dtypes, shapes, names, scopes, devices, collections."""
import numpy as np
import pytest

import tensorweave as tf
from tensorweave.framework.device import DeviceSpec, merge_device
from tensorweave.framework.tensor_shape import broadcast_shapes

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_dtypes_map_numpy_and_enums():
    assert tf.as_dtype(np.float32) is tf.float32
    assert tf.as_dtype("float64") is tf.float64
    assert tf.as_dtype(3) is tf.int32
    assert tf.as_dtype(np.dtype("float64")) is tf.float64
    assert tf.as_dtype(np.dtype("int64")) is tf.int64
    assert tf.as_dtype(float) is tf.float32 and tf.as_dtype(int) is tf.int32
    assert tf.float32.as_datatype_enum == 1 and tf.string.as_datatype_enum == 7
    assert tf.float32._as_ref.base_dtype is tf.float32
    assert tf.float32._as_ref.is_ref_dtype
    assert tf.int64.is_integer and tf.float16.is_floating and not tf.bool.is_numeric
    with pytest.raises(TypeError, match="nosuch"):
        tf.as_dtype("nosuch")


def test_tensor_shape_semantics():
    s = tf.TensorShape([None, 3])
    assert s.ndims == 2 and s[1] == 3 and s[0].value is None
    assert s.is_compatible_with([5, 3]) and not s.is_compatible_with([5, 4])
    assert s.merge_with([5, None]).as_list() == [5, 3]
    assert tf.TensorShape(None).ndims is None
    assert str(s) == "(?, 3)"
    assert broadcast_shapes(tf.TensorShape([4, 1]), tf.TensorShape([3])).as_list() == [4, 3]
    with pytest.raises(ValueError, match=r"\(4, 2\).*\(3,\)"):
        broadcast_shapes(tf.TensorShape([4, 2]), tf.TensorShape([3]))


def test_unique_names_and_name_scopes():
    a = tf.constant(1.0, name="c")
    b = tf.constant(1.0, name="c")
    assert (a.op.name, b.op.name) == ("c", "c_1")
    with tf.name_scope("layer") as scope:
        assert scope == "layer/"
        c = tf.constant(2.0, name="w")
        with tf.name_scope("inner"):
            d = tf.constant(2.0, name="w")
    with tf.name_scope("layer"):
        e = tf.constant(2.0, name="w")
    with tf.name_scope("layer/"):
        f = tf.constant(2.0, name="x")
    assert c.name == "layer/w:0" and d.name == "layer/inner/w:0"
    assert e.name == "layer_1/w:0" and f.name == "layer/x:0"
    g = tf.get_default_graph()
    assert g.get_tensor_by_name("layer/w:0") is c
    assert g.get_operation_by_name("layer/inner/w") is d.op
    with pytest.raises(KeyError, match="nosuch"):
        g.get_operation_by_name("nosuch")
    with pytest.raises(ValueError, match="Tensor names must be"):
        g.get_tensor_by_name("c")


def test_collections():
    tf.add_to_collection("mine", 1)
    tf.add_to_collections(["mine", "other"], 2)
    assert tf.get_collection("mine") == [1, 2]
    ref = tf.get_collection_ref("mine")
    ref.append(3)
    assert tf.get_collection("mine") == [1, 2, 3]
    assert tf.GraphKeys.GLOBAL_VARIABLES == "variables"
    assert tf.GraphKeys.TRAINABLE_VARIABLES == "trainable_variables"


def test_device_spec_parse_and_merge():
    d = DeviceSpec.from_string("/job:ps/task:1/cpu:0")
    assert (d.job, d.task, d.device_type, d.device_index) == ("ps", 1, "CPU", 0)
    assert d.to_string() == "/job:ps/task:1/device:CPU:0"
    assert merge_device("/job:worker/task:1", "/cpu:0") == "/job:worker/task:1/device:CPU:0"
    with pytest.raises(ValueError, match="bogus"):
        DeviceSpec.from_string("/job:ps/bogus:1")


def test_an_op_named_by_its_scope_takes_the_scope_name_exactly():
    # The TF1 idiom of library code: `with tf.name_scope(scope, "my_op") as name:
    # ... return op(..., name=name)` names the result "my_op", "my_op_1", ...
    def my_op(x, scope=None):
        with tf.name_scope(scope, "my_op", [x]) as name:
            return tf.identity(x * 2.0, name=name)
    y, z = my_op(tf.constant(1.0)), my_op(tf.constant(1.0))
    with tf.name_scope("outer"):
        w = my_op(tf.constant(1.0), scope="inner")
    assert (y.name, z.name, w.name) == ("my_op:0", "my_op_1:0", "outer/inner:0")
    assert y.op.inputs[0].name.startswith("my_op/")  # the helpers stay inside the scope
    with pytest.raises(ValueError, match="'my_op' after the scope 'my_op/'"):
        tf.identity(1.0, name="my_op/")


def test_nested_device_scopes_merge_inner_wins_and_none_clears():
    with tf.device("/job:worker/task:1"):
        with tf.device("/cpu:0"):
            a = tf.constant(1)
        with tf.device("/job:ps"):
            b = tf.constant(1)
        with tf.device(None):
            c = tf.constant(1)
        with tf.device(lambda op: "/job:ps/task:3" if op.type == "Const" else ""):
            d = tf.constant(1)
    assert a.device == "/job:worker/task:1/device:CPU:0"
    assert b.device == "/job:ps/task:1"
    assert c.device == ""
    assert d.device == "/job:ps/task:3"


def test_colocate_with_beats_device_scopes():
    with tf.device("/job:ps/task:0"):
        v = tf.constant(1.0, name="v")
    with tf.device("/job:worker/task:0"):
        with tf.colocate_with(v):
            s = tf.identity(v)
    assert s.device == "/job:ps/task:0"
    assert s.op.colocation_groups() == [b"loc:@v"]


def test_control_dependencies_recorded():
    a = tf.constant(1.0, name="a")
    with tf.control_dependencies([a]):
        b = tf.constant(2.0, name="b")
        with tf.control_dependencies(None):
            c = tf.constant(3.0, name="c")
    assert b.op.control_inputs == [a.op]
    assert c.op.control_inputs == []


def test_finalize_blocks_new_ops():
    g = tf.Graph()
    with g.as_default():
        tf.constant(1)
        g.finalize()
        with pytest.raises(RuntimeError, match="finalized"):
            tf.constant(2)


def test_default_graph_stack_and_reset():
    g = tf.Graph()
    with g.as_default():
        assert tf.get_default_graph() is g
        with pytest.raises(AssertionError):
            tf.reset_default_graph()
    assert tf.get_default_graph() is not g


def test_tensor_properties_and_bool_error():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    assert x.name == "x:0" and x.dtype is tf.float32 and x.get_shape().as_list() == [None, 3]
    x.set_shape([2, 3])
    assert x.shape.as_list() == [2, 3]
    with pytest.raises(ValueError, match="not compatible"):
        x.set_shape([2, 4])
    with pytest.raises(TypeError, match="Python bool"):
        bool(x)


def test_convert_to_tensor_defaults():
    assert tf.convert_to_tensor(1.5).dtype is tf.float32
    assert tf.convert_to_tensor(3).dtype is tf.int32
    assert tf.convert_to_tensor(2**40).dtype is tf.int64
    assert tf.convert_to_tensor(np.float64(1)).dtype is tf.float64
    assert tf.convert_to_tensor("hi").dtype is tf.string
    assert tf.convert_to_tensor([True, False]).dtype is tf.bool
    with pytest.raises(TypeError, match="Expected int32"):
        tf.constant(2.5, dtype=tf.int32)
    with pytest.raises(ValueError, match="int32"):
        tf.convert_to_tensor(tf.constant(1.0), dtype=tf.int32)
    c = tf.constant(7.0, shape=[2, 2])
    assert c.shape.as_list() == [2, 2]

"""GraphDef export/import: node format, attrs, TensorProtos, round trips, wire compatibility."""
import os

import numpy as np
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format

import tensorweave as tf
from tensorweave.framework import graph_io
from tensorweave.framework.proto import graph_pb2


def run(fetches, feed=None, graph=None):
    with tf.Session(graph=graph or tf.get_default_graph()) as sess:
        return sess.run(fetches, feed)


# ---- NodeDef format ---------------------------------------------------------------
def test_node_def_inputs_device_and_colocation():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 3], name="x")
        parts = tf.split(x, 3, axis=1, name="parts")
        with tf.device("/job:ps/task:0"):
            c = tf.constant(1.0, name="c")
        with tf.control_dependencies([c]):
            y = tf.identity(parts[1], name="y")
        with tf.colocate_with(x):
            z = tf.identity(x, name="z")
    nd = y.op.node_def
    assert isinstance(nd, graph_pb2.NodeDef)
    assert nd.name == "y" and nd.op == "Identity"
    assert list(nd.input) == ["parts:1", "^c"]
    assert c.op.node_def.device == "/job:ps/task:0"
    assert list(z.op.node_def.attr["_class"].list.s) == [b"loc:@x"]
    ph = x.op.node_def
    assert ph.attr["dtype"].type == 1  # DT_FLOAT
    assert [d.size for d in ph.attr["shape"].shape.dim] == [-1, 3]
    assert parts[0].op.node_def.attr["num_split"].i == 3


def test_graph_def_versions_and_output_shapes():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.identity(x, name="y")
        tf.placeholder(tf.float32, None, name="unknown")
    gd = g.as_graph_def(add_shapes=True)
    assert gd.versions.producer == graph_io.GRAPH_DEF_VERSION > 0
    assert [n.name for n in gd.node] == ["x", "y", "unknown"]
    shp = gd.node[1].attr["_output_shapes"].list.shape[0]
    assert [d.size for d in shp.dim] == [-1, 2]
    assert gd.node[2].attr["shape"].shape.unknown_rank
    assert "_output_shapes" not in g.as_graph_def().node[1].attr


# ---- TensorProto -------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    np.arange(6, dtype=np.float32).reshape(2, 3), np.array(3.5, np.float64),
    np.array([1, -2], np.int64), np.array([[True, False]]), np.array([1, 2], np.uint8),
    np.array([0.5, 2.0], np.float16), np.array([1 + 2j], np.complex64),
    np.zeros((0, 4), np.int32), np.array([-7], np.int8)])
def test_tensor_proto_numeric_uses_tensor_content(value):
    proto = graph_io.tensor_proto_of(value)
    assert proto.tensor_content and not proto.float_val and not proto.int_val or value.size == 0
    back = graph_io.tensor_value_of(proto)
    assert back.dtype == value.dtype and back.shape == value.shape
    np.testing.assert_array_equal(back, value)


def test_tensor_proto_strings_use_string_val():
    value = np.array([[b"a", b"bc"], [b"", b"\xff"]], dtype=object)
    proto = graph_io.tensor_proto_of(value)
    assert list(proto.string_val) == [b"a", b"bc", b"", b"\xff"] and not proto.tensor_content
    back = graph_io.tensor_value_of(proto)
    assert back.shape == (2, 2) and back.tolist() == value.tolist()


def test_tensor_proto_typed_fields_repeat_last_value():
    proto = graph_pb2.TensorProto(dtype=1, float_val=[1.0, 2.0])
    proto.tensor_shape.dim.add(size=4)
    np.testing.assert_array_equal(graph_io.tensor_value_of(proto), [1, 2, 2, 2])
    scalar = graph_pb2.TensorProto(dtype=3, int_val=[7])
    assert graph_io.tensor_value_of(scalar) == np.int32(7)
    empty = graph_pb2.TensorProto(dtype=1)
    empty.tensor_shape.dim.add(size=2)
    np.testing.assert_array_equal(graph_io.tensor_value_of(empty), [0, 0])


def test_const_round_trip_identical_arrays():
    g = tf.Graph()
    values = {"f": np.linspace(0, 1, 7, dtype=np.float32), "s": np.array([b"x", b"yz"]),
              "b": np.array([[True], [False]]), "i": np.array(2**40, np.int64)}
    with g.as_default():
        consts = {k: tf.constant(v, name=k) for k, v in values.items()}
    g2 = tf.Graph()
    with g2.as_default():
        out = tf.import_graph_def(g.as_graph_def(), name="",
                                  return_elements=[f"{k}:0" for k in values])
    for (k, v), t in zip(values.items(), out):
        got = t.op.get_attr("value")
        assert t.dtype == consts[k].dtype and got.shape == np.asarray(v).shape
        assert np.asarray(got).tolist() == np.asarray(v, dtype=got.dtype).tolist()
    np.testing.assert_array_equal(run(out[0], graph=g2), values["f"])


# ---- import semantics --------------------------------------------------------------
def _small_graph():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.constant([[1.0, 2.0], [3.0, 4.0]], name="w")
        y = tf.identity(tf.matmul(x, w), name="y")
        tf.identity(y, name="z")
    return g


def test_import_prefix_return_elements_and_input_map():
    gd = _small_graph().as_graph_def()
    g = tf.Graph()
    with g.as_default():
        feed = tf.constant([[1.0, 1.0]], name="feed")
        y, z_op = tf.import_graph_def(gd, input_map={"x": feed}, return_elements=["y:0", "z"])
        assert y.name == "import/y:0" and z_op.name == "import/z"
        assert isinstance(z_op, tf.Operation)
        # shape functions ran again on import: the mapped input's static shape flows on
        assert y.shape.as_list() == [1, 2]
        np.testing.assert_allclose(run(y), [[4.0, 6.0]])
        y2 = tf.import_graph_def(gd, return_elements=["y:0"])[0]
        assert y2.name == "import_1/y:0"
        with tf.name_scope("outer"):
            y3 = tf.import_graph_def(gd, return_elements=["y:0"], name="m")[0]
        assert y3.name == "outer/m/y:0"
        assert tf.import_graph_def(gd, name="noreturn") is None


def test_import_with_empty_name_keeps_names_and_rejects_collisions():
    gd = _small_graph().as_graph_def()
    g = tf.Graph()
    with g.as_default():
        (y,) = tf.import_graph_def(gd, name="", return_elements=["y:0"])
        assert y.name == "y:0"
        with pytest.raises(ValueError, match="already exist"):
            tf.import_graph_def(gd, name="")


def test_import_errors_name_the_problem():
    gd = _small_graph().as_graph_def()
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"not found in graph_def: \[nope:0\]"):
            tf.import_graph_def(gd, input_map={"nope:0": tf.constant(1.0)})
        with pytest.raises(ValueError, match="missing"):
            tf.import_graph_def(gd, return_elements=["missing:0"])
    bad = graph_pb2.GraphDef()
    bad.node.add(name="n1", op="FancyTFOnlyOp")
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="'n1'.*'FancyTFOnlyOp'"):
            tf.import_graph_def(bad)
    cyc = graph_pb2.GraphDef()
    cyc.node.add(name="a", op="Identity", input=["b"])
    cyc.node.add(name="b", op="Identity", input=["a"])
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="cycle"):
            tf.import_graph_def(cyc)


def test_import_accepts_out_of_order_nodes_text_format_and_control_inputs():
    text = """
    node { name: "y" op: "Identity" input: "x" input: "^c" }
    node { name: "c" op: "Const"
           attr { key: "dtype" value { type: DT_INT32 } }
           attr { key: "value" value { tensor { dtype: DT_INT32 int_val: 5 } } } }
    node { name: "x" op: "Const"
           attr { key: "dtype" value { type: DT_FLOAT } }
           attr { key: "value" value { tensor { dtype: DT_FLOAT
                  tensor_shape { dim { size: 3 } } float_val: 1.5 } } } }
    versions { producer: 27 }
    """
    gd = text_format.Parse(text, graph_pb2.GraphDef())
    with tf.Graph().as_default():
        y, c = tf.import_graph_def(gd, return_elements=["y:0", "c:0"])
        assert [op.name for op in y.op.control_inputs] == ["import/c"]
        np.testing.assert_array_equal(run(y), [1.5, 1.5, 1.5])
        assert run(c) == 5


def test_import_bytes_and_prefixed_colocation():
    g = tf.Graph()
    with g.as_default():
        x = tf.constant(1.0, name="x")
        with tf.colocate_with(x):
            tf.identity(x, name="y")
    with tf.Graph().as_default():
        (y,) = tf.import_graph_def(g.as_graph_def().SerializeToString(),
                                   return_elements=["y"], name="p")
        assert y.colocation_groups() == [b"loc:@p/x"]


def test_write_graph_text_and_binary(tmp_path):
    g = _small_graph()
    path = graph_io.write_graph(g, str(tmp_path / "sub"), "g.pbtxt")
    assert path == os.path.join(str(tmp_path / "sub"), "g.pbtxt")
    parsed = text_format.Parse(open(path).read(), graph_pb2.GraphDef())
    assert parsed == g.as_graph_def()
    bpath = graph_io.write_graph(g.as_graph_def(), str(tmp_path), "g.pb", as_text=False)
    assert graph_pb2.GraphDef.FromString(open(bpath, "rb").read()) == g.as_graph_def()


# ---- round trips -------------------------------------------------------------------
def _assert_round_trip(g, fetch_names, feed_names_values):
    gd = g.as_graph_def()
    with tf.Session(graph=g) as sess:
        ref = sess.run(fetch_names, {k: v for k, v in feed_names_values.items()})
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gd, name="")
    with tf.Session(graph=g2) as sess:
        got = sess.run(fetch_names, {k: v for k, v in feed_names_values.items()})
    for a, b in zip(ref, got):
        np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                                   rtol=1e-6)
    assert g2.as_graph_def() == gd  # export(import(gd)) is gd again
    return gd


def test_round_trip_small_model():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        w = tf.constant(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w")
        h = tf.nn.relu(tf.matmul(x, w) + 0.5, name="h")
        tf.reduce_sum(h, axis=1, keepdims=True, name="s")
        tf.reshape(tf.transpose(h), [-1], name="r")
        tf.nn.softmax(h, name="sm")
        parts = tf.split(h, 3, axis=1)
        tf.gather(tf.concat(parts[::-1], 1), [1, 0], name="gat")
        tf.identity(h[:, 1:], name="sl")
        tf.one_hot([0, 2], 3, name="oh")
    xv = np.random.RandomState(0).randn(2, 4).astype(np.float32)
    _assert_round_trip(g, ["s:0", "r:0", "sm:0", "gat:0", "sl:0", "oh:0"], {"x:0": xv})


def test_round_trip_control_flow_with_library():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [], name="x")
        c = tf.constant(3.0, name="c")
        y = tf.cond(x > 0, lambda: tf.cond(x > 5, lambda: x * c, lambda: x + c),
                    lambda: -x, name="y")
        i, s = tf.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + x * c),
                             [tf.constant(0), tf.constant(0.0)], name="loop")
        tf.identity(y, name="y_out")
        tf.identity(s, name="s_out")
        tf.identity(tf.gradients(y, x)[0], name="dy")
        tf.identity(tf.gradients(s, x)[0], name="ds")
        del i
    gd = g.as_graph_def()
    fnames = {f.signature.name for f in gd.library.function}
    assert y.op.get_attr("then_branch").name in fnames
    ifnode = next(n for n in gd.node if n.name == "y")
    assert ifnode.attr["then_branch"].func.name == y.op.get_attr("then_branch").name
    # the nested cond's body is in the library too (functions called by functions)
    assert len(fnames) >= 8
    for xv in (-2.0, 2.0, 7.0):
        _assert_round_trip(g, ["y_out:0", "s_out:0", "dy:0", "ds:0"], {"x:0": xv})


def test_round_trip_variables_and_training_step():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        v = tf.Variable([[1.0], [2.0]], name="v")
        loss = tf.reduce_sum(tf.matmul(x, v), name="loss")
        init = tf.global_variables_initializer()
        opt = getattr(tf.train, "GradientDescentOptimizer", None)
        train = opt(0.1).minimize(loss) if opt else tf.no_op()
    gd = g.as_graph_def()
    g2 = tf.Graph()
    with g2.as_default():
        tf.import_graph_def(gd, name="")
    results = []
    for graph in (g, g2):
        with tf.Session(graph=graph) as sess:
            sess.run(init.name)
            for _ in range(3):
                sess.run(train.name, {"x:0": [[1.0, 2.0]]})
            results.append(sess.run("loss:0", {"x:0": [[1.0, 2.0]]}))
    assert results[0] == results[1]


# ---- wire compatibility -------------------------------------------------------------
_T = descriptor_pb2.FieldDescriptorProto
_REP, _OPT = _T.LABEL_REPEATED, _T.LABEL_OPTIONAL


def _tf_schema():
    """A hand-written subset of tensorflow/core/framework/*.proto (package tensorflow),
    with TF's field numbers, to check our bytes parse as TensorFlow's messages."""
    f = descriptor_pb2.FileDescriptorProto(name="tf_subset_for_test.proto",
                                           package="tensorflow", syntax="proto3")

    def msg(name, fields, nested=()):
        m = f.message_type.add(name=name)
        for n in nested:
            m.nested_type.add().CopyFrom(n)
        for fname, num, ftype, label, tname in fields:
            fd = m.field.add(name=fname, number=num, type=ftype, label=label)
            if tname:
                fd.type_name = tname
        return m

    _tensor_messages(msg)
    _graph_messages(msg)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.GraphDef"))


def _map_entry(name, value_type, value_tname=""):
    e = descriptor_pb2.DescriptorProto(name=name)
    e.options.map_entry = True
    e.field.add(name="key", number=1, type=_T.TYPE_STRING, label=_OPT)
    v = e.field.add(name="value", number=2, type=value_type, label=_OPT)
    if value_tname:
        v.type_name = value_tname
    return e


def _tensor_messages(msg):
    """TensorShapeProto, TensorProto, AttrValue, NameAttrList (as far as we write them)."""
    T, REP, OPT = _T, _REP, _OPT
    dim = descriptor_pb2.DescriptorProto(name="Dim")
    dim.field.add(name="size", number=1, type=T.TYPE_INT64, label=OPT)
    msg("TensorShapeProto", [("dim", 2, T.TYPE_MESSAGE, REP, ".tensorflow.TensorShapeProto.Dim"),
                             ("unknown_rank", 3, T.TYPE_BOOL, OPT, "")], [dim])
    msg("TensorProto", [("dtype", 1, T.TYPE_INT32, OPT, ""),
                        ("tensor_shape", 2, T.TYPE_MESSAGE, OPT, ".tensorflow.TensorShapeProto"),
                        ("tensor_content", 4, T.TYPE_BYTES, OPT, ""),
                        ("string_val", 8, T.TYPE_BYTES, REP, "")])
    lv = descriptor_pb2.DescriptorProto(name="ListValue")
    lv.field.add(name="s", number=2, type=T.TYPE_BYTES, label=REP)
    lv.field.add(name="i", number=3, type=T.TYPE_INT64, label=REP)
    lv.field.add(name="type", number=6, type=T.TYPE_INT32, label=REP)
    lv.field.add(name="shape", number=7, type=T.TYPE_MESSAGE, label=REP,
                 type_name=".tensorflow.TensorShapeProto")
    msg("AttrValue", [("list", 1, T.TYPE_MESSAGE, OPT, ".tensorflow.AttrValue.ListValue"),
                      ("s", 2, T.TYPE_BYTES, OPT, ""), ("i", 3, T.TYPE_INT64, OPT, ""),
                      ("f", 4, T.TYPE_FLOAT, OPT, ""), ("b", 5, T.TYPE_BOOL, OPT, ""),
                      ("type", 6, T.TYPE_INT32, OPT, ""),
                      ("shape", 7, T.TYPE_MESSAGE, OPT, ".tensorflow.TensorShapeProto"),
                      ("tensor", 8, T.TYPE_MESSAGE, OPT, ".tensorflow.TensorProto"),
                      ("func", 10, T.TYPE_MESSAGE, OPT, ".tensorflow.NameAttrList")], [lv])
    msg("NameAttrList", [("name", 1, T.TYPE_STRING, OPT, "")])


def _graph_messages(msg):
    """NodeDef, VersionDef, OpDef, FunctionDef(Library), GraphDef."""
    T, REP, OPT = _T, _REP, _OPT
    msg("NodeDef", [("name", 1, T.TYPE_STRING, OPT, ""), ("op", 2, T.TYPE_STRING, OPT, ""),
                    ("input", 3, T.TYPE_STRING, REP, ""), ("device", 4, T.TYPE_STRING, OPT, ""),
                    ("attr", 5, T.TYPE_MESSAGE, REP, ".tensorflow.NodeDef.AttrEntry")],
        [_map_entry("AttrEntry", T.TYPE_MESSAGE, ".tensorflow.AttrValue")])
    msg("VersionDef", [("producer", 1, T.TYPE_INT32, OPT, ""),
                       ("min_consumer", 2, T.TYPE_INT32, OPT, "")])
    arg = descriptor_pb2.DescriptorProto(name="ArgDef")
    arg.field.add(name="name", number=1, type=T.TYPE_STRING, label=OPT)
    arg.field.add(name="type", number=3, type=T.TYPE_INT32, label=OPT)
    msg("OpDef", [("name", 1, T.TYPE_STRING, OPT, ""),
                  ("input_arg", 2, T.TYPE_MESSAGE, REP, ".tensorflow.OpDef.ArgDef"),
                  ("output_arg", 3, T.TYPE_MESSAGE, REP, ".tensorflow.OpDef.ArgDef"),
                  ("is_stateful", 17, T.TYPE_BOOL, OPT, "")], [arg])
    msg("FunctionDef", [("signature", 1, T.TYPE_MESSAGE, OPT, ".tensorflow.OpDef"),
                        ("node_def", 3, T.TYPE_MESSAGE, REP, ".tensorflow.NodeDef"),
                        ("ret", 4, T.TYPE_MESSAGE, REP, ".tensorflow.FunctionDef.RetEntry")],
        [_map_entry("RetEntry", T.TYPE_STRING)])
    msg("FunctionDefLibrary", [("function", 1, T.TYPE_MESSAGE, REP, ".tensorflow.FunctionDef")])
    msg("GraphDef", [("node", 1, T.TYPE_MESSAGE, REP, ".tensorflow.NodeDef"),
                     ("library", 2, T.TYPE_MESSAGE, OPT, ".tensorflow.FunctionDefLibrary"),
                     ("versions", 4, T.TYPE_MESSAGE, OPT, ".tensorflow.VersionDef")])


def test_wire_compatible_with_tensorflow_field_numbers():
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        with tf.device("/cpu:0"):
            tf.constant(np.array([[1.5, 2.5]], np.float32), name="w")
        tf.constant(["hi"], name="s")
        p = tf.placeholder(tf.bool, [], name="p")
        tf.cond(p, lambda: x, lambda: x * 2.0, name="branch")
        tf.split(x, 2, axis=1, name="sp")
    data = g.as_graph_def(add_shapes=True).SerializeToString()
    TFGraphDef = _tf_schema()
    parsed = TFGraphDef.FromString(data)
    assert parsed.versions.producer == graph_io.GRAPH_DEF_VERSION
    nodes = {n.name: n for n in parsed.node}
    assert nodes["x"].op == "Placeholder" and nodes["x"].attr["dtype"].type == 1
    assert [d.size for d in nodes["x"].attr["shape"].shape.dim] == [-1, 2]
    w = nodes["w"]
    assert w.device.endswith("CPU:0") or "cpu" in w.device.lower()
    content = w.attr["value"].tensor.tensor_content
    np.testing.assert_array_equal(np.frombuffer(content, "<f4"), [1.5, 2.5])
    assert [d.size for d in w.attr["value"].tensor.tensor_shape.dim] == [1, 2]
    assert list(nodes["s"].attr["value"].tensor.string_val) == [b"hi"]
    assert nodes["s"].attr["value"].tensor.dtype == 7  # DT_STRING
    branch = nodes["branch"]
    assert branch.op == "If" and list(branch.input)[1] == "x"
    fn_name = branch.attr["then_branch"].func.name
    lib = {f.signature.name: f for f in parsed.library.function}
    assert fn_name in lib and lib[fn_name].signature.input_arg[0].type == 1
    assert list(branch.attr["Tout"].list.type) == [1]
    assert len(nodes["x"].attr["_output_shapes"].list.shape) == 1
    assert list(nodes["sp"].input) == ["sp/split_dim", "x"] or "x" in nodes["sp"].input
    # and back: TensorFlow-schema bytes parse with our classes unchanged
    assert graph_pb2.GraphDef.FromString(parsed.SerializeToString()) \
        == graph_pb2.GraphDef.FromString(data)

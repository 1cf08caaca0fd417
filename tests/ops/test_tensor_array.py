"""tf.TensorArray as TF 1.x programs write it: writes returning new arrays, reads,
stack/unstack, gather/scatter, concat/split, static element shapes, TF's errors, and
TensorArrays as tf.while_loop variables with gradients through them.

Expected values were computed with TensorFlow 2.21 (compat.v1, control flow v1).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorweave as tf


def _run(fetches, feed_dict=None):
    with tf.Session() as sess:
        return sess.run(fetches, feed_dict=feed_dict)


def test_write_stack_read_and_static_shapes():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=3)
        ta2 = ta.write(0, 1.0).write(1, 2.0).write(2, 3.0)
        assert ta2 is not ta and ta2.dtype == tf.float32
        s = ta2.stack()
        assert s.shape.as_list() == [3]  # a fixed known size gives a static dim 0
        m = tf.TensorArray(tf.float32, size=3).unstack(
            tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        r = m.read(1)
        assert r.shape.as_list() == [2] and m.element_shape.as_list() == [2]
        size = m.size()
        out = _run([s, r, size, m.gather([2, 0])])
        np.testing.assert_allclose(out[0], [1.0, 2.0, 3.0])
        np.testing.assert_allclose(out[1], [3.0, 4.0])
        assert out[2] == 3
        np.testing.assert_allclose(out[3], [[5.0, 6.0], [1.0, 2.0]])


def test_dynamic_size_grows_and_unwritten_known_shape_reads_zeros():
    with tf.Graph().as_default():
        dyn = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(4, 7.0)
        unw = tf.TensorArray(tf.float32, size=3, element_shape=[2]).write(0, [1.0, 1.0])
        n, st, z = _run([dyn.size(), dyn.stack(), unw.stack()])
        assert n == 5
        np.testing.assert_allclose(st, [0.0, 0.0, 0.0, 0.0, 7.0])
        np.testing.assert_allclose(z, [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]])


def test_concat_split_and_their_gradients():
    with tf.Graph().as_default():
        c = tf.TensorArray(tf.float32, size=2, infer_shape=False)
        c = c.write(0, [1.0, 2.0]).write(1, [3.0])
        y = tf.constant([4.0, 5.0, 6.0])
        sp = tf.TensorArray(tf.float32, size=2, infer_shape=False,
                            clear_after_read=False).split(y, [2, 1])
        loss = tf.reduce_sum(sp.read(0) * 3.0) + tf.reduce_sum(sp.read(1) * sp.read(1))
        (gy,) = tf.gradients(loss, [y])
        cc, piece, gyv = _run([c.concat(), sp.read(1), gy])
        np.testing.assert_allclose(cc, [1.0, 2.0, 3.0])
        np.testing.assert_allclose(piece, [6.0])
        np.testing.assert_allclose(gyv, [3.0, 3.0, 12.0])  # TF's value
        x = tf.constant([1.0, 2.0, 3.0, 4.0])
        back = tf.TensorArray(tf.float32, size=2).split(x, [2, 2]).concat()
        (gx,) = tf.gradients(tf.reduce_sum(back * back), [x])
        np.testing.assert_allclose(_run(gx), [2.0, 4.0, 6.0, 8.0])


def test_scatter_gather_gradient():
    with tf.Graph().as_default():
        w = tf.constant([1.0, 2.0])
        ta = tf.TensorArray(tf.float32, size=4).scatter([3, 1], tf.stack([w, w * 2.0]))
        gg = ta.gather([1, 3])
        (gw,) = tf.gradients(tf.reduce_sum(gg * gg), [w])
        v, g = _run([gg, gw])
        np.testing.assert_allclose(v, [[2.0, 4.0], [1.0, 2.0]])
        np.testing.assert_allclose(g, [10.0, 20.0])  # TF's value


def test_tensor_arrays_as_while_loop_variables_with_gradients():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        inputs = tf.TensorArray(tf.float32, size=3).unstack(x)

        def body(i, acc, out):
            v = inputs.read(i)
            return i + 1, acc + v * v, out.write(i, v * 2.0)

        _, acc, out = tf.while_loop(lambda i, a, o: i < 3, body,
                                    [0, 0.0, tf.TensorArray(tf.float32, size=3)])
        assert isinstance(out, tf.TensorArray)
        st = out.stack()
        assert st.shape.as_list() == [3] and out.element_shape.as_list() == []
        (g,) = tf.gradients([acc, tf.reduce_sum(st * st)], [x])
        a, s, gv = _run([acc, st, g])
        assert a == pytest.approx(14.0)
        np.testing.assert_allclose(s, [2.0, 4.0, 6.0])
        np.testing.assert_allclose(gv, [10.0, 20.0, 30.0])  # TF's value


def test_dynamic_array_accumulating_in_a_loop_of_unknown_length():
    with tf.Graph().as_default():
        n = tf.placeholder(tf.int32, [])
        w = tf.constant(2.0)

        def body(i, ta):
            return i + 1, ta.write(i, tf.cast(i, tf.float32) * w)

        _, ta = tf.while_loop(lambda i, ta: i < n, body,
                              (0, tf.TensorArray(tf.float32, size=0, dynamic_size=True)))
        st = ta.stack()
        (gw,) = tf.gradients(tf.reduce_sum(st), [w])
        s, g = _run([st, gw], {n: 4})
        np.testing.assert_allclose(s, [0.0, 2.0, 4.0, 6.0])
        assert g == pytest.approx(6.0)


@pytest.mark.parametrize("build,message", [
    (lambda: tf.TensorArray(tf.float32, size=3).write(2, 3.0).write(2, 3.0).flow,
     "Could not write to TensorArray index 2 because it has already been written to."),
    (lambda: tf.TensorArray(tf.float32, size=3, tensor_array_name="foo").write(3, 3.0).flow,
     "TensorArray foo_[0-9]+: Tried to write to index 3 but array is not resizeable and "
     "size is: 3"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(-1, 3.0).flow,
     "Tried to write to index -1 but array is not resizeable and size is: 3"),
    (lambda: tf.TensorArray(tf.float32, size=3).write(0, 1.0).read(3),
     "Tried to read from index 3 but array size is: 3"),
    (lambda: tf.TensorArray(tf.float32, size=3).read(1),
     "Could not read from TensorArray index 1.  Furthermore, the element shape is not "
     "fully defined: <unknown>."),
    (lambda: tf.TensorArray(tf.float32, size=3).split([1.0, 2.0, 3.0], [1, 2]).flow,
     r"TensorArray's size is not equal to the size of lengths \(3 vs. 2\), and the "
     "TensorArray is not marked as dynamically resizeable"),
    (lambda: tf.TensorArray(tf.float32, size=1).write(0, 1.0).concat(),
     "Concat saw a scalar shape at index 0 but requires at least vectors"),
])
def test_run_time_errors_in_tf_words(build, message):
    with tf.Graph().as_default():
        t = build()
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            _run(t)


def test_empty_stack_of_unknown_shape_is_unimplemented():
    with tf.Graph().as_default():
        t = tf.TensorArray(tf.float32, size=0).stack()
        with pytest.raises(tf.errors.UnimplementedError,
                           match="TensorArray has size zero, but element shape <unknown> is "
                           "not fully defined"):
            _run(t)


def test_graph_time_checks():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=r"Inconsistent shapes: saw \(2,\) but expected"):
            tf.TensorArray(tf.float32, size=3).write(0, [1.0]).write(1, [1.0, 2.0])
        with pytest.raises(TypeError, match="TensorArray dtype is float32 but Op is trying "
                           "to write dtype string"):
            tf.TensorArray(tf.float32, size=3).write(0, "x")
        with pytest.raises(ValueError, match="Size must be provided"):
            tf.TensorArray(tf.float32)
        ta = tf.TensorArray(tf.float32, size=2)
        with pytest.raises(ValueError, match="Cannot provide both a handle and size"):
            tf.TensorArray(tf.float32, size=2, handle=ta.handle, flow=ta.flow)
        with pytest.raises(ValueError, match="flow must not be None"):
            tf.TensorArray(tf.float32, handle=ta.handle)


def test_identity_close_grad_and_rebuild_from_flow():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=2, element_shape=[]).write(0, 5.0)
        same = tf.TensorArray(tf.float32, handle=ta.handle, flow=ta.identity().flow)
        g = ta.grad("gradients")
        close = ta.close()
        assert isinstance(close, tf.Operation)
        r, z = _run([same.read(0), g.read(1)])
        assert r == 5.0 and z == 0.0


def test_name_scopes_and_op_names():
    with tf.Graph().as_default():
        with tf.name_scope("enc"):
            ta = tf.TensorArray(tf.float32, size=2, name="inputs")
        assert ta.flow.op.name == "enc/inputs"


def test_tf_internal_module_path_and_build_with_new_flow():
    from tensorweave.python.ops import tensor_array_ops

    with tf.Graph().as_default():
        ta = tensor_array_ops.TensorArray(tf.float32, size=1, element_shape=[2])
        again = tensor_array_ops.build_ta_with_new_flow(ta, tf.identity(ta.flow))
        assert again.element_shape.as_list() == [2] and again.dtype == tf.float32
        np.testing.assert_allclose(_run(again.write(0, [1.0, 2.0]).stack()), [[1.0, 2.0]])


def test_tensor_arrays_through_cond_inside_a_loop_and_inside_map_fn():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0, 4.0])

        def body(i, ta):
            v = x[i]
            ta = tf.cond(tf.equal(i % 2, 0), lambda: ta.write(i, v * v),
                         lambda: ta.write(i, -v))
            assert isinstance(ta, tf.TensorArray)
            return i + 1, ta

        _, ta = tf.while_loop(lambda i, ta: i < 4, body,
                              [0, tf.TensorArray(tf.float32, size=4)])
        s = ta.stack()
        (g,) = tf.gradients(tf.reduce_sum(s), x)
        m = tf.map_fn(lambda r: tf.TensorArray(tf.float32, size=2).unstack(r).read(1) * 2.0,
                      tf.constant([[1.0, 2.0], [3.0, 4.0]]))
        sv, gv, mv = _run([s, g, m])
        np.testing.assert_allclose(sv, [1.0, -2.0, 9.0, -4.0])
        np.testing.assert_allclose(gv, [2.0, -1.0, 6.0, -1.0])
        np.testing.assert_allclose(mv, [4.0, 8.0])


def test_nested_loops_repeated_reads_grad_ys_and_other_dtypes():
    with tf.Graph().as_default():
        x = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])

        def outer(i, ota):
            def inner(j, ita):
                return j + 1, ita.write(j, x[i, j] * x[i, j] * tf.cast(i + 1, tf.float32))
            _, ita = tf.while_loop(lambda j, t: j < 2, inner,
                                   [0, tf.TensorArray(tf.float32, size=2)])
            return i + 1, ota.write(i, ita.stack())

        _, ota = tf.while_loop(lambda i, t: i < 3, outer,
                               [0, tf.TensorArray(tf.float32, size=3)])
        nested = ota.stack()
        assert nested.shape.as_list() == [3, 2]
        src = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x)

        def ob(i, acc):
            def ib(j, a):
                return j + 1, a + src.read(i)[j] * 2.0
            return i + 1, tf.while_loop(lambda j, a: j < 2, ib, [0, acc])[1]

        acc = tf.while_loop(lambda i, a: i < 3, ob, [0, 0.0])[1]
        twice = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack(x[:2])
        r = twice.read(0) * twice.read(0) + twice.read(1) * 3.0
        w = tf.constant([1.0, 2.0])
        st = tf.TensorArray(tf.float32, size=2).write(0, w).write(1, w * 3.0).stack()
        d = tf.TensorArray(tf.float32, size=0, dynamic_size=True).write(0, w).write(2, w * 5.0)
        out = _run({
            "nested": nested, "nested_g": tf.gradients(tf.reduce_sum(nested), x)[0],
            "acc": acc, "acc_g": tf.gradients(acc, x)[0],
            "twice_g": tf.gradients(tf.reduce_sum(r), x)[0],
            "gys": tf.gradients(st, w, grad_ys=[[[1.0, 10.0], [100.0, 1000.0]]])[0],
            "dyn_g": tf.gradients(tf.reduce_sum(d.read(2)), w)[0],
            "int": tf.TensorArray(tf.int32, size=2).unstack([7, 8]).stack(),
            "str": tf.TensorArray(tf.string, size=2).write(0, "a").write(1, "bc").stack()})
        # TF's values
        np.testing.assert_allclose(out["nested"], [[1.0, 4.0], [18.0, 32.0], [75.0, 108.0]])
        np.testing.assert_allclose(out["nested_g"], [[2.0, 4.0], [12.0, 16.0], [30.0, 36.0]])
        assert out["acc"] == pytest.approx(42.0)
        np.testing.assert_allclose(out["acc_g"], np.full([3, 2], 2.0))
        np.testing.assert_allclose(out["twice_g"], [[2.0, 4.0], [3.0, 3.0], [0.0, 0.0]])
        np.testing.assert_allclose(out["gys"], [301.0, 3010.0])
        np.testing.assert_allclose(out["dyn_g"], [5.0, 5.0])
        assert out["int"].tolist() == [7, 8] and out["str"].tolist() == [b"a", b"bc"]


def test_clear_after_read_allows_one_read_per_step_but_loop_gradients_replay():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=2).unstack([1.0, 2.0])
        r0 = ta.read(0)
        with tf.control_dependencies([r0]):
            again = ta.read(0)
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Could not read index 0 twice because it was cleared after "
                           r"a previous read \(perhaps try setting clear_after_read = "
                           r"false\?\)"):
            _run(again)
        assert _run(r0) == 1.0  # a new step reads afresh
        keep = tf.TensorArray(tf.float32, size=2, clear_after_read=False).unstack([1.0, 2.0])
        assert _run(keep.read(0) + keep.read(0)) == 2.0
        # A loop and a cond whose gradients re-run their bodies' reads.
        x = tf.constant([1.0, 2.0, 3.0])
        src = tf.TensorArray(tf.float32, size=3).unstack(x)

        def body(i, acc):
            v = src.read(i)
            return i + 1, acc + tf.cond(v > 1.5, lambda: v * v, lambda: v)

        acc = tf.while_loop(lambda i, a: i < 3, body, [0, 0.0])[1]
        (g,) = tf.gradients(acc, x)
        np.testing.assert_allclose(_run(g), [1.0, 4.0, 6.0])


def test_static_shapes_learned_by_writes_and_splits():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=0, infer_shape=True)
        ta.unstack(tf.zeros([0, 3, 5])).mark_used()  # never run: only its shape is kept
        packed, joined = ta.stack(), ta.concat()
        p, c = _run([packed, joined])
        assert p.shape == (0, 3, 5) and c.shape == (0, 5)
        sp = tf.TensorArray(tf.float32, size=0, dynamic_size=True).split(
            tf.constant([[1.0, -1.0], [2.0, -2.0], [3.0, -3.0]]), [1, 1, 1])
        assert sp.read(0).shape.as_list() == [1, 2]
        ragged = tf.TensorArray(tf.float32, size=0, dynamic_size=True).split(
            tf.constant([[1.0, -1.0], [2.0, -2.0], [3.0, -3.0]]), [1, 2])
        assert ragged.read(0).shape.ndims is None


def test_gradient_arrays_aggregate_writes_and_dynamic_split_gradient():
    with tf.Graph().as_default():
        ta = tf.TensorArray(tf.float32, size=3, tensor_array_name="foo", infer_shape=False)
        g = ta.grad("grad").write(2, 3.0).write(2, 4.0).write(2, 5.0)
        assert _run(g.read(2)) == 12.0
        bad = ta.grad("grad").write(1, 1.0).write(1, [1.0])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"Could not aggregate to TensorArray index 1 because the "
                           r"existing shape is \[\] but the new input shape is \[1\]"):
            _run(bad.flow)
        x = tf.constant([1.0, 2.0, 3.0])
        joined = tf.TensorArray(tf.float32, size=3, dynamic_size=True).split(
            x, [1, 1, 1]).write(3, [4.0]).concat()
        (gx,) = tf.gradients(joined, [x])
        j, gv = _run([joined, gx])
        np.testing.assert_allclose(j, [1.0, 2.0, 3.0, 4.0])
        np.testing.assert_allclose(gv, [1.0, 1.0, 1.0])


def test_array_goes_where_its_first_write_is():
    with tf.Graph().as_default() as g:
        with tf.device("/job:worker/task:0/cpu:0"):
            ta = tf.TensorArray(tf.float32, size=2)
        assert ta.flow.op.device == ""  # placed by the first write, not its scope
        with tf.device("/job:worker/task:1/cpu:0"):
            ta = ta.write(0, 1.0)
        with tf.device("/job:worker/task:2/cpu:0"):
            ta = ta.write(1, 2.0)
        assert "/task:1/" in g.get_operation_by_name("TensorArray").device
        assert "/task:1/" in ta.flow.op.device  # later writes join the first one
        assert "/task:1/" in ta.grad("grad").flow.op.device
        with tf.device("/job:worker/task:0/cpu:0"):
            free = tf.TensorArray(tf.float32, size=1, colocate_with_first_write_call=False)
        assert "/task:0/" in free.flow.op.device

        with tf.device("/job:worker/task:0/cpu:0"):
            looped = tf.TensorArray(tf.float32, size=2, name="looped")

        def body(i, t):
            with tf.device("/job:worker/task:1/cpu:0"):
                return i + 1, t.write(i, tf.constant(0.0))

        tf.while_loop(lambda i, t: i < 2, body, [0, looped])
        assert "/task:1/" in g.get_operation_by_name("looped").device


def test_captured_array_in_map_fn_and_training_through_a_loop():
    with tf.Graph().as_default():
        x = tf.constant([1.0, 2.0, 3.0])
        ta = tf.TensorArray(tf.float32, size=3, clear_after_read=False).unstack(x)
        m = tf.map_fn(lambda i: ta.read(i) * ta.read(i), tf.range(3), dtype=tf.float32)
        (g,) = tf.gradients(tf.reduce_sum(m), x)
        mv, gv = _run([m, g])
        np.testing.assert_allclose(mv, [1.0, 4.0, 9.0])
        np.testing.assert_allclose(gv, [2.0, 4.0, 6.0])

    with tf.Graph().as_default():
        tf.set_random_seed(3)
        steps, batch, vocab = 4, 2, 5
        tokens = tf.placeholder(tf.int32, [steps, batch])
        emb = tf.get_variable("emb", [vocab, 3])
        w = tf.get_variable("w", [3, vocab])
        inputs = tf.TensorArray(tf.float32, size=steps).unstack(
            tf.nn.embedding_lookup(emb, tokens))

        def body(t, logits_ta):
            return t + 1, logits_ta.write(t, tf.matmul(tf.tanh(inputs.read(t)), w))

        _, logits_ta = tf.while_loop(lambda t, _: t < steps - 1, body,
                                     [0, tf.TensorArray(tf.float32, size=steps - 1)])
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=tokens[1:], logits=logits_ta.stack()))
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        data = np.array([[0, 1], [1, 2], [2, 3], [3, 4]], np.int32)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(loss, {tokens: data})
            for _ in range(30):
                sess.run(train, {tokens: data})
            assert sess.run(loss, {tokens: data}) < before / 2

"""`tf.test` against TF 1.x's framework/test_util_test.py (our own tests).

Deliberate differences: no eager mode (every test is graph mode); no GPUs
(is_gpu_available() is False, force_gpu=True skips the test).
"""
import collections
import copy
import io
import os
import random
import subprocess
import sys
import textwrap
import unittest

import numpy as np
import pytest

import tensorweave as tf


class TestUtilTest(tf.test.TestCase):

    def test_each_test_starts_on_an_empty_default_graph(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])
        tf.constant(1.0, name="left_over")  # the next test must not see this

    def test_each_test_starts_on_an_empty_default_graph_again(self):
        self.assertEqual(tf.get_default_graph().get_operations(), [])

    def test_session_functions(self):
        with self.test_session() as sess:
            self.assertIs(tf.get_default_session(), sess)
            self.assertIs(sess.graph, tf.get_default_graph())
            with self.cached_session(graph=None, config=None) as sess2:
                self.assertIs(sess2, sess)
                with self.assertRaises(ValueError):
                    with self.cached_session(graph=tf.Graph()):
                        pass
                with self.assertRaises(ValueError):
                    with self.cached_session(config=tf.ConfigProto()):
                        pass
                with self.test_session(config=tf.ConfigProto()) as sess3:
                    self.assertIs(sess3, sess)  # test_session never complains
        self.assertFalse(sess._closed)  # the cached session outlives the with block
        with self.session() as unique:
            with self.session() as other:
                self.assertIsNot(other, unique)
        self.assertTrue(unique._closed)

    def test_cached_session_keeps_the_graph_it_was_made_on(self):
        first_graph = tf.get_default_graph()
        with self.cached_session() as sess:
            pass
        with tf.Graph().as_default():
            with self.cached_session() as again:  # graph=None both times: the same session
                self.assertIs(again, sess)
                self.assertIs(tf.get_default_graph(), first_graph)

    def test_session_with_another_graph_makes_it_the_default(self):
        g = tf.Graph()
        with self.session(graph=g) as sess:
            self.assertIs(tf.get_default_graph(), g)
            self.assertEqual(sess.run(tf.constant(3) * 2), 6)

    def test_eval_and_run_inside_test_session(self):
        with self.test_session():
            v = tf.Variable(2.0)
            tf.global_variables_initializer().run()
            self.assertEqual((v * 3.0).eval(), 6.0)

    def test_force_gpu_skips(self):
        with self.assertRaises(unittest.SkipTest):
            with self.session(force_gpu=True):
                pass

    def test_ndarray_near(self):
        a1 = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        self.assertTrue(self._NDArrayNear(a1, a1.copy(), 1e-5))
        self.assertFalse(self._NDArrayNear(a1, a1 * 10, 1e-5))
        self.assertNDArrayNear(a1, a1 + 1e-7, 1e-5)
        with self.assertRaises(AssertionError):
            self.assertNDArrayNear(a1, a1 * 10, 1e-5)

    def test_checked_thread_succeeds_and_fails(self):
        seen = []
        t = self.checkedThread(target=seen.append, args=(1,))
        t.start()
        t.join()
        self.assertEqual(seen, [1])
        t = self.checkedThread(target=lambda: 1 // 0)
        t.start()
        with self.assertRaises(self.failureException) as fe:
            t.join()
        self.assertIn("division", str(fe.exception))

    def test_checked_thread_with_failed_assertion(self):
        threads = [self.checkedThread(target=lambda i=i: self.assertTrue(i != 3))
                   for i in range(5)]
        for t in threads:
            t.start()
        for i, t in enumerate(threads):
            if i == 3:
                with self.assertRaises(self.failureException):
                    t.join()
            else:
                t.join()

    def test_assert_raises_op_error_matches_message_or_op_name(self):
        p = tf.placeholder(tf.float32, name="never_fed")
        with self.assertRaisesOpError("never_fed"):
            self.evaluate(p * 2.0)
        with self.assertRaises(AssertionError):
            with self.assertRaisesOpError("a message that is not there"):
                self.evaluate(p * 2.0)
        with self.assertRaises(AssertionError):  # nothing raised
            with self.assertRaisesOpError("x"):
                pass
        with self.assertRaises(AssertionError):  # not an OpError
            with self.assertRaisesOpError("boom"):
                raise ValueError("boom")

    def test_all_close_tensors_lists_and_dicts(self):
        raw = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
        a = tf.constant(raw)
        b = tf.add(1, tf.constant([[0, 1, 2], [3, 4, 5], [6, 7, 8]]))
        self.assertAllClose(a, b)
        self.assertAllClose(a, raw)
        self.assertAllClose({"key": a}, {"key": b})
        self.assertAllClose([a, b], [raw, b])

    def test_all_close_scalars_and_lists(self):
        self.assertAllClose(7, 7 + 1e-8)
        with self.assertRaisesRegex(AssertionError, "Not equal to tolerance"):
            self.assertAllClose(7, 7 + 1e-5)
        with self.assertRaisesRegex(AssertionError, "not close dif"):
            self.assertAllClose([0], [1])
        self.assertAllClose([1.0, np.nan], [1.0, np.nan])  # NaN matches NaN
        self.assertAllClose(1.0, 1.1, rtol=0.2)
        self.assertAllClose(1.0, 1.1, atol=0.2)

    def test_all_close_dict_to_non_dict(self):
        with self.assertRaisesRegex(ValueError, "Can't compare dict to non-dict"):
            self.assertAllClose(1, {"a": 1})
        with self.assertRaisesRegex(ValueError, "Can't compare dict to non-dict"):
            self.assertAllClose({"a": 1}, 1)

    def test_all_close_dicts_and_namedtuples(self):
        c = np.ones((3, 2, 4)) * 7.0
        expected = {"a": 7, "b": (2.0, 3.0), "c": c}
        nt = collections.namedtuple("NT", ["a", "b", "c"])
        self.assertAllClose(expected, dict(expected))
        self.assertAllClose(expected, nt(a=7, b=(2.0, 3.0), c=c))
        for k in expected:
            actual = dict(expected)
            del actual[k]
            with self.assertRaisesRegex(AssertionError, "mismatched keys"):
                self.assertAllClose(expected, actual)
        with self.assertRaisesRegex(AssertionError, "Not equal to tolerance"):
            self.assertAllClose(expected, {"a": 7 + 1e-5, "b": (2.0, 3.0), "c": c})
        with self.assertRaisesRegex(AssertionError, "Shape mismatch"):
            self.assertAllClose(expected, {"a": 7, "b": (2.0, 3.0, 4.0), "c": c})
        c2 = np.array(c)
        c2[1, 1, 1] += 1e-5
        with self.assertRaisesRegex(AssertionError, "Not equal to tolerance"):
            self.assertAllClose(expected, {"a": 7, "b": (2.0, 3.0), "c": c2})

    def test_all_close_list_of_namedtuples_and_nested_paths(self):
        nt = collections.namedtuple("NT", ["x", "y"])
        l1 = [nt(x=np.array([[2.3, 2.5]]), y=np.array([[0.97, 0.96]])),
              nt(x=np.array([[3.3, 3.5]]), y=np.array([[0.98, 0.99]]))]
        l2 = [([[2.3, 2.5]], [[0.97, 0.96]]), ([[3.3, 3.5]], [[0.98, 0.99]])]
        self.assertAllClose(l1, l2)
        a = {"x": np.ones((3, 2, 4)) * 7, "y": (2, [{"nested": {"m": 3, "n": 4}}])}
        b = copy.deepcopy(a)
        self.assertAllClose(a, b)
        b["y"][1][0]["nested"]["n"] = 4.2
        with self.assertRaisesRegex(AssertionError, r"\[y\]\[1\]\[0\]\[nested\]\[n\]"):
            self.assertAllClose(a, b)

    def test_array_near(self):
        with self.assertRaises(AssertionError):
            self.assertArrayNear([1, 2], [1, 2, 5], 0.001)
        with self.assertRaises(TypeError):
            self.assertArrayNear([1, 2], [[1, 2], [3, 4]], 0.001)
        self.assertArrayNear([1, 2], [1, 2.0005], 0.001)
        self.assertNear(1.0, 1.0005, 0.001)
        with self.assertRaises(AssertionError):
            self.assertNear(1.0, 1.01, 0.001)

    def test_all_close_according_to_type(self):
        self.assertAllCloseAccordingToType(1, 1, rtol=1e-8, atol=1e-8)
        f64 = np.float64
        self.assertAllCloseAccordingToType(np.array([1e-8], f64), np.array([2e-8], f64),
                                           rtol=1e-8, atol=1e-8)
        self.assertAllCloseAccordingToType(tf.constant([1e-8], tf.float64),
                                           tf.constant([2e-8], tf.float64),
                                           rtol=1e-8, atol=1e-8)
        with self.assertRaises(AssertionError):
            self.assertAllCloseAccordingToType(np.array([1e-7], f64), np.array([2e-7], f64),
                                               rtol=1e-8, atol=1e-8)
        f32 = np.float32
        self.assertAllCloseAccordingToType(np.array([1e-7], f32), np.array([2e-7], f32),
                                           rtol=1e-8, atol=1e-8, float_rtol=1e-7,
                                           float_atol=1e-7)
        self.assertAllCloseAccordingToType(tf.constant([1e-7]), tf.constant([2e-7]),
                                           rtol=1e-8, atol=1e-8, float_rtol=1e-7,
                                           float_atol=1e-7)
        with self.assertRaises(AssertionError):
            self.assertAllCloseAccordingToType(np.array([1e-6], f32), np.array([2e-6], f32),
                                               rtol=1e-8, atol=1e-8, float_rtol=1e-7,
                                               float_atol=1e-7)
        f16 = np.float16
        self.assertAllCloseAccordingToType(np.array([1e-4], f16), np.array([2e-4], f16),
                                           rtol=1e-8, atol=1e-8, float_rtol=1e-7,
                                           float_atol=1e-7, half_rtol=1e-4, half_atol=1e-4)
        with self.assertRaises(AssertionError):
            self.assertAllCloseAccordingToType(np.array([1e-3], f16), np.array([2e-3], f16),
                                               rtol=1e-8, atol=1e-8, float_rtol=1e-7,
                                               float_atol=1e-7, half_rtol=1e-4,
                                               half_atol=1e-4)

    def test_all_equal_and_not_all_equal(self):
        i = tf.Variable([100] * 3, dtype=tf.int32, name="i")
        j = tf.constant([20] * 3, dtype=tf.int32, name="j")
        k = tf.add(i, j, name="k")
        self.evaluate(tf.global_variables_initializer())
        self.assertAllEqual([100] * 3, i)
        self.assertAllEqual([120] * 3, k)
        self.assertAllEqual([20] * 3, j)
        with self.assertRaisesRegex(AssertionError, "not equal lhs"):
            self.assertAllEqual([0] * 3, k)
        with self.assertRaisesRegex(AssertionError, "Shape mismatch"):
            self.assertAllEqual([120] * 4, k)
        self.assertAllEqual([np.nan, 1.0], [np.nan, 1.0])
        self.assertNotAllEqual([100] * 3, k)
        self.assertNotAllEqual([120], k)  # shapes differ
        with self.assertRaisesRegex(AssertionError, "equal at all elements.*extra"):
            self.assertNotAllEqual([120] * 3, k, msg="extra")

    def test_not_all_close_with_tolerances(self):
        self.assertNotAllClose([0.1], [0.2])
        with self.assertRaises(AssertionError):
            self.assertNotAllClose([-1.0, 2.0], [-1.0, 2.0])
        x = tf.constant([1.0, 1.0], name="x")
        self.assertAllClose([2.0, 2.0], tf.add(x, x))
        self.assertNotAllClose([0.9, 1.0], x)
        with self.assertRaises(AssertionError):
            self.assertNotAllClose([0.9, 1.0], x, rtol=0.2)
        with self.assertRaises(AssertionError):
            self.assertNotAllClose([1.1, 2.1], [1.0, 2.0], atol=0.2)

    def test_greater_less_and_ranges(self):
        x = tf.constant([100.0, 110.0, 120.0])
        self.assertAllGreater(x, 95.0)
        self.assertAllLess(x, 125.0)
        self.assertAllGreaterEqual(x, 100.0)
        self.assertAllLessEqual(x, 120.0)
        for check, bound in ((self.assertAllGreater, 105.0), (self.assertAllLess, 115.0),
                             (self.assertAllGreaterEqual, 105.0),
                             (self.assertAllLessEqual, 115.0)):
            with self.assertRaises(AssertionError):
                check(x, bound)
        r = tf.constant([10.0, 15.0])
        self.assertAllInRange(r, 10, 15)
        with self.assertRaises(AssertionError):
            self.assertAllInRange(r, 10, 15, open_lower_bound=True)
        with self.assertRaises(AssertionError):
            self.assertAllInRange(r, 10, 15, open_upper_bound=True)
        with self.assertRaises(AssertionError):
            self.assertAllInRange(tf.constant([np.nan, 0.0]), -1.0, 2.0)  # NaN is outside
        with self.assertRaises(AssertionError):
            self.assertAllInRange(tf.constant([False, True]), 0, 1)  # not ordered numbers
        self.assertAllInRange(tf.constant([10.0, np.inf]), 10, np.inf)

    def test_all_in_set(self):
        b = tf.constant([True, False])
        x = tf.constant([13, 37])
        self.assertAllInSet(b, [False, True])
        self.assertAllInSet(x, {0, 13, 37, 42})
        with self.assertRaises(AssertionError):
            self.assertAllInSet(b, [False])
        with self.assertRaises(AssertionError):
            self.assertAllInSet(x, (42,))

    def test_shape_and_device_asserts(self):
        t = tf.placeholder(tf.float32, [2, 3])
        self.assertShapeEqual(np.zeros([2, 3]), t)
        with self.assertRaises(AssertionError):
            self.assertShapeEqual(np.zeros([3, 2]), t)
        with self.assertRaises(TypeError):
            self.assertShapeEqual([[0, 0, 0]], t)
        self.assertDeviceEqual("/cpu:0", "/device:CPU:0")
        self.assertDeviceEqual("/job:ps/task:0/cpu:0", "/job:ps/task:0/device:CPU:0")
        self.assertDeviceEqual(None, "")
        with self.assertRaises(AssertionError):
            self.assertDeviceEqual("/job:ps/task:0", "/job:ps/task:1")

    def test_random_seeds_are_reset_by_set_up(self):
        self.setUp()
        a, a_np = random.randint(1, 1000), np.random.rand(1)
        a_tf = self.evaluate(tf.random_normal([3]))
        self.tearDown()
        self.setUp()
        b, b_np = random.randint(1, 1000), np.random.rand(1)
        b_tf = self.evaluate(tf.random_normal([3]))
        self.assertEqual(a, b)
        self.assertAllEqual(a_np, b_np)
        self.assertAllEqual(a_tf, b_tf)

    def test_both_sides_come_from_one_run(self):
        index = tf.random_shuffle([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        for _ in range(5):
            self.assertAllEqual(index, index)

    def test_evaluate_nested_and_callable(self):
        nested = {"a": tf.constant(1), "nested": {"d": tf.constant(3), "e": tf.constant(4)}}
        self.assertEqual(self.evaluate(nested), {"a": 1, "nested": {"d": 3, "e": 4}})
        self.assertEqual(self.evaluate(lambda: tf.constant(2) + 1), 3)

    def test_temp_dir_is_per_test_and_exists(self):
        d = self.get_temp_dir()
        self.assertTrue(os.path.isdir(d))
        self.assertEqual(d, self.get_temp_dir())
        self.assertTrue(os.path.isdir(tf.test.get_temp_dir()))

    def test_device_queries_say_cpu_only(self):
        self.assertFalse(tf.test.is_gpu_available())
        self.assertFalse(tf.test.is_gpu_available(cuda_only=True))
        self.assertFalse(tf.test.is_built_with_cuda())
        self.assertEqual(tf.test.gpu_device_name(), "")

    def test_dtype_prefix_and_python2_era_assert_names(self):
        self.assertDTypeEqual(tf.constant([1.0]), tf.float32)
        self.assertDTypeEqual(np.zeros(2, np.int64), tf.int64)
        with self.assertRaises(AssertionError):
            self.assertDTypeEqual(tf.constant([1]), tf.float32)
        self.assertStartsWith("global_step:0", "global")
        with self.assertRaises(AssertionError):
            self.assertStartsWith("global_step:0", "step")
        self.assertItemsEqual([3, 1, 2], [1, 2, 3])
        with self.assertRaises(AssertionError):
            self.assertItemsEqual([1, 1], [1])
        with self.assertRaisesRegexp(ValueError, "bad"):
            raise ValueError("bad value")
        self.assertRegexpMatches("step 12", r"step \d+")

    def test_assert_proto_equals_text_and_message(self):
        config = tf.ConfigProto(log_device_placement=True)
        self.assertProtoEquals("log_device_placement: true", config)
        self.assertProtoEquals(config, config)
        with self.assertRaises(AssertionError):
            self.assertProtoEquals("allow_soft_placement: true", config)


@pytest.mark.slow
def test_tf_test_main_runs_a_users_test_module(tmp_path):
    script = tmp_path / "user_test.py"
    script.write_text(textwrap.dedent("""
        import tensorweave as tf

        class SquareTest(tf.test.TestCase):
            def testSquare(self):
                with self.test_session():
                    x = tf.square([2, 3])
                    self.assertAllEqual(x.eval(), [4, 9])

            def testFails(self):
                if FAIL:
                    self.assertAllClose(1.0, 2.0)

        FAIL = __import__("os").environ.get("FAIL") == "1"
        if __name__ == "__main__":
            tf.test.main()
    """))
    env = dict(os.environ, FAIL="0")
    ok = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0, ok.stderr
    # unittest also collects the test_session helper (its name starts with "test"); it
    # skips itself, as in TF 1.x.
    assert "Ran 3 tests" in ok.stderr and "skipped=1" in ok.stderr, ok.stderr
    env["FAIL"] = "1"
    bad = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode != 0 and "Not equal to tolerance" in bad.stderr


def test_get_temp_dir_is_removed_when_the_test_ends():
    seen = {}

    class UsesTempDir(tf.test.TestCase):
        def test_writes(self):
            d = self.get_temp_dir()
            assert d == self.get_temp_dir()
            open(os.path.join(d, "f.txt"), "w").write("x")
            seen["dir"] = d

    result = unittest.TextTestRunner(stream=io.StringIO()).run(
        unittest.defaultTestLoader.loadTestsFromTestCase(UsesTempDir))
    assert result.wasSuccessful()
    assert not os.path.exists(seen["dir"])

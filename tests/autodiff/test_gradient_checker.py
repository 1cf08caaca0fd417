"""`tf.test.compute_gradient(_error)` against TF 1.x's ops/gradient_checker_test.py
(our own tests).
"""
import numpy as np

import tensorweave as tf


class GradientCheckerTest(tf.test.TestCase):
    """tf.test.compute_gradient(_error), after TF 1.x's gradient_checker_test.py."""

    def test_add_simple(self):
        with self.test_session():
            x1 = tf.constant(2.0, shape=[2, 3], name="x1")
            x2 = tf.constant(3.0, shape=[2, 3], name="x2")
            y = tf.add(x1, x2)
            error = tf.test.compute_gradient_error(x1, [2, 3], y, [2, 3])
        self.assertLess(error, 1e-4)

    def test_customized_init_value_and_delta(self):
        with self.test_session():
            x1 = tf.constant(2.0, shape=[2, 3], dtype=tf.float64)
            x2 = tf.constant(3.0, shape=[2, 3], dtype=tf.float64)
            y = x1 * x2
            x_init = np.asarray(np.arange(6, dtype=np.float64).reshape(2, 3))
            jac_t, jac_n = tf.test.compute_gradient(x1, [2, 3], y, [2, 3],
                                                    x_init_value=x_init, delta=1e-2)
        self.assertEqual(jac_t.shape, (6, 6))
        self.assertAllClose(jac_t, np.eye(6) * 3.0)
        self.assertAllClose(jac_n, jac_t, atol=1e-6)

    def test_several_xs_and_a_sparse_gradient(self):
        with self.test_session():
            params = tf.constant(np.arange(10, dtype=np.float32).reshape(5, 2))
            indices = tf.constant([0, 3, 3])
            gathered = tf.gather(params, indices)  # gradient is IndexedSlices
            self.assertLess(tf.test.compute_gradient_error(params, [5, 2], gathered, [3, 2]),
                            1e-3)
            a = tf.constant(np.ones([2, 3], np.float32))
            b = tf.constant(np.ones([3, 1], np.float32))
            pairs = tf.test.compute_gradient([a, b], [[2, 3], [3, 1]], tf.matmul(a, b), [2, 1])
        self.assertEqual([t.shape for t, _ in pairs], [(6, 2), (3, 2)])
        for jac_t, jac_n in pairs:
            self.assertAllClose(jac_t, jac_n, atol=1e-2)

    def test_a_wrong_gradient_gives_a_large_error(self):
        with self.test_session():
            x = tf.constant([1.0, 2.0])
            y = tf.stop_gradient(x) * x  # true derivative 2x, graph says x
            error = tf.test.compute_gradient_error(x, [2], y, [2],
                                                   x_init_value=np.array([1.0, 2.0]))
        self.assertGreater(error, 0.5)

    def test_needs_a_default_session_and_matching_init_shape(self):
        x = tf.constant([1.0, 2.0])
        with self.assertRaisesRegex(ValueError, "default session"):
            tf.test.compute_gradient(x, [2], x * 2.0, [2])
        with self.test_session():
            with self.assertRaisesRegex(ValueError, "x_shape"):
                tf.test.compute_gradient(x, [2], x * 2.0, [2], x_init_value=[1.0])

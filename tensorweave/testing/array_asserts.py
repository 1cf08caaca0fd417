"""The numeric asserts of `tf.test.TestCase` (assertAllClose, assertAllEqual, ...).

A mixin for unittest.TestCase: tensors and variables anywhere in the compared
structures are run together in one step (so two fetches of one random op agree),
then compared as numpy arrays, recursing through dicts, namedtuples, lists and tuples.

Example:
    >>> self.assertAllClose({"w": w_tensor, "b": [1.0, 2.0]}, expected, rtol=1e-5)
"""
from __future__ import annotations

import collections.abc
import math
from typing import Any

import numpy as np


def _is_graph_value(x: Any) -> bool:
    return (hasattr(x, "graph") and hasattr(x, "op")) or hasattr(x, "_as_graph_element")


def _leaves(x: Any, out: list) -> None:
    if _is_graph_value(x):
        out.append(x)
    elif isinstance(x, collections.abc.Mapping):
        for v in x.values():
            _leaves(v, out)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _leaves(v, out)


def _substitute(x: Any, values: dict) -> Any:
    if _is_graph_value(x):
        return values[id(x)]
    if isinstance(x, collections.abc.Mapping):
        return {k: _substitute(v, values) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_asdict"):  # namedtuple: keep its type
        return type(x)(*(_substitute(v, values) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_substitute(v, values) for v in x)
    return x


def _is_float(a: np.ndarray) -> bool:
    return np.issubdtype(a.dtype, np.floating) or np.issubdtype(a.dtype, np.complexfloating)


class ArrayAsserts:
    """Mixin: needs `self.evaluate(fetches)` and unittest's assert methods."""

    def _resolve(self, *structures: Any) -> list:
        leaves: list = []
        for s in structures:
            _leaves(s, leaves)
        values = {}
        if leaves:
            unique = list({id(t): t for t in leaves}.values())
            for t, v in zip(unique, self.evaluate(unique)):  # type: ignore[attr-defined]
                values[id(t)] = v
        return [_substitute(s, values) for s in structures]

    # ---- closeness ---------------------------------------------------------------
    def _assert_array_like_all_close(self, a: Any, b: Any, rtol: float, atol: float,
                                     msg: str) -> None:
        a, b = np.asarray(a), np.asarray(b)
        self.assertEqual(a.shape, b.shape,  # type: ignore[attr-defined]
                         f"Shape mismatch: expected {a.shape}, got {b.shape} with contents "
                         f"{b}. {msg}")
        if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
            return
        a1, b1 = np.atleast_1d(a), np.atleast_1d(b)
        bad = ~np.isclose(a1, b1, rtol=rtol, atol=atol, equal_nan=True)
        lines = [msg, f"not close where = {np.where(bad)}", f"not close lhs = {a1[bad]}",
                 f"not close rhs = {b1[bad]}", f"not close dif = {np.abs(a1 - b1)[bad]}",
                 f"not close tol = {atol + rtol * np.abs(b1)[bad]}",
                 f"dtype = {a.dtype}, shape = {a.shape}"]
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg="\n".join(lines),
                                   equal_nan=True)

    def _assert_all_close_recursive(self, a: Any, b: Any, rtol: float, atol: float,
                                    path: list, msg: str) -> None:
        where = "".join(f"[{p}]" for p in path)
        a = a._asdict() if isinstance(a, tuple) and hasattr(a, "_asdict") else a
        b = b._asdict() if isinstance(b, tuple) and hasattr(b, "_asdict") else b
        a_dict = isinstance(a, collections.abc.Mapping)
        if a_dict != isinstance(b, collections.abc.Mapping):
            raise ValueError(f"Can't compare dict to non-dict, a{where}: {a}. b{where}: {b}. "
                             f"{msg}")
        if a_dict:
            self.assertCountEqual(  # type: ignore[attr-defined]
                a.keys(), b.keys(),
                msg=f"mismatched keys: a{where} has keys {sorted(a, key=str)}, but b{where} "
                    f"has keys {sorted(b, key=str)}. {msg}")
            for k in a:
                self._assert_all_close_recursive(a[k], b[k], rtol, atol, path + [k], msg)
            return
        if isinstance(a, (list, tuple)):
            try:  # a regular nest of numbers compares as one array
                a_arr, b_arr = np.asarray(a), np.asarray(b)
                if a_arr.dtype == object or b_arr.dtype == object:
                    raise ValueError("ragged")
            except (ValueError, TypeError):
                if not isinstance(b, (list, tuple)) or len(a) != len(b):
                    self.fail(f"Length of a{where} is {len(a)} but b{where} is "  # type: ignore[attr-defined]
                              f"{b!r}. {msg}")
                for i, (x, y) in enumerate(zip(a, b)):
                    self._assert_all_close_recursive(x, y, rtol, atol, path + [i], msg)
                return
            self._assert_array_like_all_close(a_arr, b_arr, rtol, atol,
                                              f"Mismatched value: a{where} is different from "
                                              f"b{where}. {msg}")
            return
        self._assert_array_like_all_close(a, b, rtol, atol,
                                          f"Mismatched value: a{where} is different from "
                                          f"b{where}. {msg}")

    def assertAllClose(self, a: Any, b: Any, rtol: float = 1e-6, atol: float = 1e-6,  # noqa: N802
                       msg: str | None = None) -> None:
        """Fails unless |a - b| <= atol + rtol * |b| everywhere (NaN equals NaN).

        a and b may be numbers, arrays, Tensors, Variables, or dicts/lists/tuples/
        namedtuples of them; the failure names the path ("[y][1][nested]").
        """
        a, b = self._resolve(a, b)
        self._assert_all_close_recursive(a, b, rtol, atol, [], msg or "")

    def assertAllCloseAccordingToType(self, a: Any, b: Any, rtol: float = 1e-6,  # noqa: N802
                                      atol: float = 1e-6, float_rtol: float = 1e-6,
                                      float_atol: float = 1e-6, half_rtol: float = 1e-3,
                                      half_atol: float = 1e-3, bfloat16_rtol: float = 1e-2,
                                      bfloat16_atol: float = 1e-2, msg: str | None = None
                                      ) -> None:
        """assertAllClose with tolerances loosened to float32's or float16's when a or b
        has that precision."""
        a, b = (np.asarray(x) for x in self._resolve(a, b))
        kinds = {a.dtype, b.dtype}
        if kinds & {np.dtype(np.float32), np.dtype(np.complex64)}:
            rtol, atol = max(rtol, float_rtol), max(atol, float_atol)
        if np.dtype(np.float16) in kinds:
            rtol, atol = max(rtol, half_rtol), max(atol, half_atol)
        self.assertAllClose(a, b, rtol=rtol, atol=atol, msg=msg)

    def assertNotAllClose(self, a: Any, b: Any, **kwargs: Any) -> None:  # noqa: N802
        """Fails if a and b are close everywhere (same tolerances as assertAllClose)."""
        try:
            self.assertAllClose(a, b, **kwargs)
        except AssertionError:
            return
        raise AssertionError("The two values are close at all elements.")

    # ---- equality and bounds -----------------------------------------------------
    def assertAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Fails unless a and b have one shape and equal elements (NaN equals NaN)."""
        a, b = (np.asarray(x) for x in self._resolve(a, b))
        msg = msg or ""
        self.assertEqual(a.shape, b.shape,  # type: ignore[attr-defined]
                         f"Shape mismatch: expected {a.shape}, got {b.shape} with contents "
                         f"{b}. {msg}")
        same = a == b
        if _is_float(a) and _is_float(b):
            same = np.logical_or(same, np.logical_and(np.isnan(a), np.isnan(b)))
        if np.all(same):
            return
        bad = ~np.atleast_1d(same)
        lines = [msg, f"not equal where = {np.where(bad)}",
                 f"not equal lhs = {np.atleast_1d(a)[bad]}",
                 f"not equal rhs = {np.atleast_1d(b)[bad]}"]
        np.testing.assert_array_equal(a, b, err_msg="\n".join(lines))

    def assertDictEqual(self, a: Any, b: Any, msg: Any = None) -> None:  # noqa: N802
        """TF's: dicts equal as unittest compares them, or (values being arrays or
        tensors) the same keys with values equal, floats within assertAllClose's
        tolerance."""
        try:
            super().assertDictEqual(a, b, msg)  # type: ignore[misc]
        except Exception:
            self.assertEqual(sorted(a), sorted(b), msg)  # type: ignore[attr-defined]
            for key, value in a.items():
                left, right = (np.asarray(x) for x in self._resolve(value, b[key]))
                if _is_float(left) or _is_float(right):
                    self.assertAllClose(left, right, msg=str(key))
                else:
                    self.assertAllEqual(left, right, msg=str(key))

    def assertNotAllEqual(self, a: Any, b: Any, msg: str | None = None) -> None:  # noqa: N802
        """Fails if a and b are equal everywhere."""
        try:
            self.assertAllEqual(a, b)
        except AssertionError:
            return
        raise AssertionError(f"The two values are equal at all elements. {msg or ''}")

    def assertAllGreater(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Fails unless every element of a is > comparison_target."""
        self.assertGreater(np.min(self._resolve(a)[0]), comparison_target)  # type: ignore[attr-defined]

    def assertAllLess(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Fails unless every element of a is < comparison_target."""
        self.assertLess(np.max(self._resolve(a)[0]), comparison_target)  # type: ignore[attr-defined]

    def assertAllGreaterEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Fails unless every element of a is >= comparison_target."""
        self.assertGreaterEqual(np.min(self._resolve(a)[0]), comparison_target)  # type: ignore[attr-defined]

    def assertAllLessEqual(self, a: Any, comparison_target: Any) -> None:  # noqa: N802
        """Fails unless every element of a is <= comparison_target."""
        self.assertLessEqual(np.max(self._resolve(a)[0]), comparison_target)  # type: ignore[attr-defined]

    def assertAllInRange(self, target: Any, lower_bound: Any, upper_bound: Any,  # noqa: N802
                         open_lower_bound: bool = False, open_upper_bound: bool = False
                         ) -> None:
        """Fails unless every element is a real number within the bounds (NaN fails)."""
        t = np.asarray(self._resolve(target)[0])
        if not (np.issubdtype(t.dtype, np.floating) or np.issubdtype(t.dtype, np.integer)):
            raise AssertionError(f"The value of {target!r} does not have an ordered numeric "
                                 f"type, instead it has type {t.dtype}.")
        low = t <= lower_bound if open_lower_bound else t < lower_bound
        high = t >= upper_bound if open_upper_bound else t > upper_bound
        bad = np.isnan(t) | low | high if np.issubdtype(t.dtype, np.floating) else low | high
        if np.any(bad):
            span = ("(" if open_lower_bound else "[") + f"{lower_bound}, {upper_bound}" + \
                (")" if open_upper_bound else "]")
            raise AssertionError(f"{np.count_nonzero(bad)} of {t.size} elements are outside "
                                 f"{span} or NaN, e.g. at {np.argwhere(bad)[:5].tolist()}: "
                                 f"{t[bad][:5]}")

    def assertAllInSet(self, target: Any, expected_set: Any) -> None:  # noqa: N802
        """Fails unless every element of target is in expected_set."""
        t = np.asarray(self._resolve(target)[0])
        diff = np.setdiff1d(t.flatten(), list(expected_set))
        if diff.size:
            raise AssertionError(f"{diff.size} unique element(s) are not in the set "
                                 f"{expected_set}: {diff}")

    # ---- scalars and flat arrays -------------------------------------------------
    def assertNear(self, f1: float, f2: float, err: float, msg: str | None = None) -> None:  # noqa: N802
        """Fails unless |f1 - f2| <= err."""
        self.assertTrue(f1 == f2 or math.fabs(f1 - f2) <= err,  # type: ignore[attr-defined]
                        f"{f1} != {f2} +/- {err}{' (' + msg + ')' if msg else ''}")

    def assertArrayNear(self, farray1: Any, farray2: Any, err: float,  # noqa: N802
                        msg: str | None = None) -> None:
        """Fails unless two flat lists have one length and near elements.

        Raises:
            TypeError: if an element is not a number (nested lists are not flat).
        """
        self.assertEqual(len(farray1), len(farray2), msg=msg)  # type: ignore[attr-defined]
        for f1, f2 in zip(farray1, farray2):
            self.assertNear(float(f1), float(f2), err, msg=msg)

    def _NDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float) -> bool:  # noqa: N802
        return bool(np.linalg.norm(np.asarray(ndarray1) - np.asarray(ndarray2)) < err)

    def assertNDArrayNear(self, ndarray1: Any, ndarray2: Any, err: float,  # noqa: N802
                          msg: str | None = None) -> None:
        """Fails unless the Euclidean norm of the difference is < err."""
        self.assertTrue(self._NDArrayNear(ndarray1, ndarray2, err), msg=msg)  # type: ignore[attr-defined]

    def assertProtoEquals(self, expected_message_maybe_ascii: Any, message: Any,  # noqa: N802
                          msg: str | None = None) -> None:
        """Fails unless the proto equals the expected one (a proto or its text format)."""
        if isinstance(expected_message_maybe_ascii, str):
            from google.protobuf import text_format
            expected = type(message)()
            text_format.Merge(expected_message_maybe_ascii, expected)
        else:
            expected = expected_message_maybe_ascii
        self.assertEqual(str(expected), str(message),  # type: ignore[attr-defined]
                         msg or "protos differ")

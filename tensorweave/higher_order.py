"""Higher-order functions over the first dimension: `tf.map_fn`, `tf.scan`,
`tf.foldl` and `tf.foldr`, each one FunctionalScan op (`ops/control_flow/scan_ops.py`
explains the construction and its O(n) gradient).

Example:
    >>> squares = tf.map_fn(lambda x: x * x, tf.constant([1.0, 2.0, 3.0]))
    >>> sums = tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3]))   # [1, 3, 6]
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.func_graph import assert_same_structure, flatten, pack_sequence_as
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.ops.array import concat, expand_dims, shape
from tensorweave.ops.array.core_ops import identity
from tensorweave.ops.control_flow.assert_ops import Assert
from tensorweave.ops.control_flow.scan_ops import flat_elems, functional_scan, static_length

__all__ = ["map_fn", "scan", "foldl", "foldr"]


def _check_callable(fn: Any, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{what}: fn must be callable, got {fn!r}")


def _match_structure(expected: Any, got: Any, what: str, expected_name: str) -> list[Any]:
    """`got` flattened after checking it is structured like `expected`."""
    try:
        assert_same_structure(expected, got, expected_name, "fn output")
    except ValueError as e:
        raise ValueError(f"{what}: {e}") from None
    return flatten(got)


def _split_first(elems_flat: list[Tensor], reverse: bool, what: str
                 ) -> tuple[list[Tensor], list[Tensor]]:
    """Without an initializer the first element (last with `reverse`) starts the
    accumulator and the loop runs over the rest."""
    n_static = static_length(elems_flat)
    if n_static == 0:
        raise ValueError(f"{what}: elems must have at least one element when no initializer "
                         "is given")
    checks: list[Operation] = []
    if n_static is None:
        n = shape(elems_flat[0])[0]
        checks = [Assert(n > 0, [f"{what}: elems must have at least one element when no "
                                 "initializer is given"], name="nonempty")]
    with get_default_graph().control_dependencies(checks):
        if reverse:
            return [e[-1] for e in elems_flat], [e[:-1] for e in elems_flat]
        return [e[0] for e in elems_flat], [e[1:] for e in elems_flat]


def _accumulator(fn: Callable[..., Any], elems: Any, initializer: Any, reverse: bool,
                 what: str, stack: bool, parallel_iterations: int, back_prop: bool,
                 infer_shape: bool, name: str) -> Any:
    """scan (stack=True) or fold (stack=False)."""
    _check_callable(fn, what)
    g = get_default_graph()
    with g.name_scope(name) as scope:
        base = scope.rstrip("/").rsplit("/", 1)[-1] if scope else name
        elems_flat = flat_elems(elems, what)
        if initializer is None:
            init_struct = elems
            init_flat, loop_elems = _split_first(elems_flat, reverse, what)
        else:
            init_struct = initializer
            init_flat = [convert_to_tensor(t, name="initializer") for t in flatten(initializer)]
            if not init_flat:
                raise ValueError(f"{what}: initializer must contain at least one tensor, got "
                                 f"{initializer!r}")
            loop_elems = elems_flat

        def step(carry: list[Tensor], xs: list[Tensor]) -> tuple[list[Any], list[Any]]:
            res = fn(pack_sequence_as(init_struct, carry), pack_sequence_as(elems, xs))
            res_flat = _match_structure(init_struct, res, what,
                                        "initializer" if initializer is not None else "elems")
            res_flat = [convert_to_tensor(r) for r in res_flat]
            # The stacked copy is its own tensor so the body's outputs stay distinct.
            return res_flat, ([identity(r) for r in res_flat] if stack else [])

        finals, stacked = functional_scan(base, step, init_flat, loop_elems, reverse,
                                           parallel_iterations, back_prop, infer_shape)
        if not stack:
            return pack_sequence_as(init_struct, finals)
        if initializer is None:
            # The initial accumulator is the first output (the last when reversed).
            firsts = [expand_dims(t, 0) for t in init_flat]
            stacked = [concat([s, f] if reverse else [f, s], 0)
                       for s, f in zip(stacked, firsts)]
        return pack_sequence_as(init_struct, stacked)


# ==== public API =====================================================================
def map_fn(fn: Callable[..., Any], elems: Any, dtype: Any = None,
           parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
           infer_shape: bool = True, name: str | None = None) -> Any:
    """`tf.map_fn`: applies `fn` to each element of `elems` (unpacked along dim 0)
    and stacks the results along dim 0.

    Args:
        fn: called once (traced) with one element: a tensor, or the structure of
            `elems` with one slice of each tensor.
        elems: a tensor or a (nested) list/tuple/dict of tensors, all with the same
            first dimension.
        dtype: the dtype structure of `fn`'s output when it differs from `elems`'
            (needed whenever `fn` returns another structure or dtype).
        parallel_iterations: accepted for TF compatibility; steps run in order.
        back_prop: False stops gradients at the outputs.
        swap_memory: accepted for TF compatibility (ignored).
        infer_shape: give the outputs the static shape `[n] + fn's output shape`.
        name: name scope of the ops (default "map").

    Returns:
        The stacked results, structured like `dtype` (or `elems`).

    Raises:
        TypeError: `fn` is not callable or returns another dtype than declared.
        ValueError: elems are scalars, have different static first dimensions
            (named), or `fn` returns another structure than `dtype`/`elems`.

    Example:
        >>> imgs = tf.zeros([8, 28, 28, 3])
        >>> flipped = tf.map_fn(lambda img: tf.reverse(img, [1]), imgs)
        >>> pos, neg = tf.map_fn(lambda x: (x, -x), tf.constant([1, 2]),
        ...                      dtype=(tf.int32, tf.int32))
    """
    _check_callable(fn, "map_fn")
    g = get_default_graph()
    with g.name_scope(name or "map") as scope:
        base = scope.rstrip("/").rsplit("/", 1)[-1] if scope else (name or "map")
        elems_flat = flat_elems(elems, "map_fn")
        if dtype is None:
            out_struct = pack_sequence_as(elems, [e.dtype.base_dtype for e in elems_flat])
        else:
            out_struct = dtype
        out_dtypes = [_dt.as_dtype(d).base_dtype for d in flatten(out_struct)]

        def step(carry: list[Tensor], xs: list[Tensor]) -> tuple[list[Any], list[Any]]:
            res = fn(pack_sequence_as(elems, xs))
            res_flat = _match_structure(out_struct, res, "map_fn",
                                        "dtype" if dtype is not None else "elems")
            res_flat = [convert_to_tensor(r, dtype=d) if not isinstance(r, Tensor) else r
                        for r, d in zip(res_flat, out_dtypes)]
            for r, d in zip(res_flat, out_dtypes):
                if r.dtype.base_dtype != d:
                    raise TypeError(f"map_fn: fn returned {r.name} of dtype "
                                    f"{r.dtype.base_dtype.name} where {d.name} was expected; "
                                    "pass `dtype` when fn's output dtypes differ from "
                                    "elems'")
            return [], res_flat

        _, stacked = functional_scan(base, step, [], elems_flat, False, parallel_iterations,
                                      back_prop, infer_shape)
        return pack_sequence_as(out_struct, stacked)


def scan(fn: Callable[..., Any], elems: Any, initializer: Any = None,
         parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
         infer_shape: bool = True, reverse: bool = False, name: str | None = None) -> Any:
    """`tf.scan`: the accumulator `a = fn(a, x)` after each element, stacked.

    Without `initializer` the first element of `elems` (the last with
    `reverse`) is the initial accumulator and also the first (last) output.

    Args:
        fn: `fn(accumulator, element) -> accumulator`, structured like
            `initializer` (or `elems`), the element like `elems`.
        elems: a tensor or (nested) structure of tensors, unpacked along dim 0.
        initializer: the initial accumulator (a tensor or structure).
        parallel_iterations: accepted for TF compatibility; steps run in order.
        back_prop: False stops gradients at the outputs.
        swap_memory: accepted for TF compatibility (ignored).
        infer_shape: give the outputs the static shape `[n] + accumulator shape`.
        reverse: scan from the last element to the first; output i is still the
            accumulator after element i.
        name: name scope of the ops (default "scan").

    Returns:
        The accumulators stacked along dim 0, structured like the accumulator.

    Raises:
        ValueError: no initializer and elems statically empty, mismatched first
            dimensions, or `fn` changes the accumulator's structure or shape.
        TypeError: `fn` changes the accumulator's dtype.

    Example:
        >>> tf.scan(lambda a, x: a + x, tf.constant([1, 2, 3]))  # [1, 3, 6]
        >>> tf.scan(lambda a, x: a * x, tf.constant([1., 2., 3.]), reverse=True)  # [6, 6, 3]
    """
    return _accumulator(fn, elems, initializer, reverse, "scan", True, parallel_iterations,
                        back_prop, infer_shape, name or "scan")


def foldl(fn: Callable[..., Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:
    """`tf.foldl`: folds `fn(accumulator, element)` over `elems` from the first
    element; returns the final accumulator.

    Args:
        fn: `fn(accumulator, element) -> accumulator`.
        elems: a tensor or (nested) structure of tensors, unpacked along dim 0.
        initializer: the initial accumulator; without it, the first element.
        parallel_iterations: accepted for TF compatibility; steps run in order.
        back_prop: False stops gradients at the result.
        swap_memory: accepted for TF compatibility (ignored).
        name: name scope of the ops (default "foldl").

    Returns:
        The final accumulator, structured like `initializer` (or `elems`).

    Raises:
        ValueError: "elems must have at least one element when no initializer
            is given" (statically; at run time an InvalidArgumentError), or `fn`
            changes the accumulator's structure or shape.

    Example:
        >>> tf.foldl(lambda a, x: a + x, tf.constant([1, 2, 3]))  # 6
    """
    return _accumulator(fn, elems, initializer, False, "foldl", False, parallel_iterations,
                        back_prop, True, name or "foldl")


def foldr(fn: Callable[..., Any], elems: Any, initializer: Any = None,
          parallel_iterations: int = 10, back_prop: bool = True, swap_memory: bool = False,
          name: str | None = None) -> Any:
    """`tf.foldr`: folds `fn(accumulator, element)` over `elems` from the last
    element to the first; returns the final accumulator.

    Args:
        fn: `fn(accumulator, element) -> accumulator`.
        elems: a tensor or (nested) structure of tensors, unpacked along dim 0.
        initializer: the initial accumulator; without it, the last element.
        parallel_iterations: accepted for TF compatibility; steps run in order.
        back_prop: False stops gradients at the result.
        swap_memory: accepted for TF compatibility (ignored).
        name: name scope of the ops (default "foldr").

    Returns:
        The final accumulator, structured like `initializer` (or `elems`).

    Raises:
        ValueError: as `foldl`.

    Example:
        >>> tf.foldr(lambda a, x: a - x, tf.constant([1, 2, 3]), initializer=0)  # -6
    """
    return _accumulator(fn, elems, initializer, True, "foldr", False, parallel_iterations,
                        back_prop, True, name or "foldr")


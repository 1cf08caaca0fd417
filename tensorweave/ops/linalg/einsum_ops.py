"""`tf.einsum`: the Einsum op (TF 1.15's, attrs `equation` and `N`) and its gradient.

The kernel is `np.einsum`. Each input's gradient is itself one einsum: the
output gradient contracted with the other inputs, with identity matrices tying
repeated labels ("ii->") and ones vectors restoring labels summed away in that
input alone ("ij->i").

Example:
    >>> a = tf.ones([2, 3]); b = tf.ones([3, 4])
    >>> tf.einsum("ij,jk->ik", a, b).shape.as_list()
    [2, 4]
    >>> tf.einsum("bij,bjk->bik", x, y)   # batch matmul
    >>> tf.einsum("ii", m)                # trace
"""
from __future__ import annotations

import functools
import string
from typing import Any, Sequence

import numpy as np

from tensorweave.framework import errors
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.ops.op_author import create_op, define_op
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tensor_shape import TensorShape, broadcast_shapes
from tensorweave.ops.array.fill_ops import fill, transpose
from tensorweave.ops.array.shape_ops import reshape, shape as _tf_shape
from tensorweave.ops.linalg.matrix_ops import matrix_diag
from tensorweave.ops.math.cwise_ops import sum_to_shape

_ELL = "."  # one token standing for "..."
Subs = tuple[str, ...]


@functools.lru_cache(maxsize=256)
def _parse(equation: str, n_inputs: int) -> tuple[tuple[Subs, ...], Subs]:
    """Splits an equation into per-input and output label tuples ("..." -> ".").

    Raises:
        ValueError: naming the equation, for any malformed part.
    """
    eq = equation.replace(" ", "")

    def bad(why: str) -> ValueError:
        return ValueError(f"Invalid einsum equation {equation!r}: {why}")

    if eq.count("->") > 1:
        raise bad("it has more than one '->'.")
    lhs, arrow, rhs = eq.partition("->")
    parts = lhs.split(",")
    if len(parts) != n_inputs:
        raise bad(f"it names {len(parts)} input(s) but {n_inputs} were given.")

    def tokens(term: str, what: str) -> Subs:
        if term.count("...") > 1:
            raise bad(f"{what} {term!r} has more than one ellipsis.")
        rest = term.replace("...", "")
        for ch in rest:
            if ch not in string.ascii_letters:
                raise bad(f"{what} {term!r} has {ch!r}; labels must be letters a-z, A-Z "
                          "(and at most one '...').")
        head, _, tail = term.partition("...")
        return tuple(head) + ((_ELL,) if "..." in term else ()) + tuple(tail)

    ins = tuple(tokens(p, f"input {i}") for i, p in enumerate(parts))
    has_ell = any(_ELL in s for s in ins)
    if arrow:
        out = tokens(rhs, "output")
        seen = {t for s in ins for t in s}
        for t in out:
            if t != _ELL and t not in seen:
                raise bad(f"output label {t!r} appears in no input.")
        letters = [t for t in out if t != _ELL]
        if len(set(letters)) != len(letters):
            raise bad("an output label is repeated.")
    else:  # implicit mode: labels seen exactly once, alphabetically, after "..."
        counts: dict[str, int] = {}
        for s in ins:
            for t in s:
                if t != _ELL:
                    counts[t] = counts.get(t, 0) + 1
        out = ((_ELL,) if has_ell else ()) + tuple(sorted(t for t, c in counts.items()
                                                          if c == 1))
    return ins, out


def _text(ins: Sequence[Subs], out: Subs) -> str:
    def one(s: Subs) -> str:
        return "".join("..." if t == _ELL else t for t in s)
    return ",".join(one(s) for s in ins) + "->" + one(out)


def _axis_of(subs: Subs, pos: int) -> int:
    """The axis of token `pos`: from the front before "...", from the back after it."""
    if _ELL in subs and pos > subs.index(_ELL):
        return pos - len(subs)
    return pos


# ---- the op -------------------------------------------------------------------------
einsum_op = define_op("Einsum", inputs=("inputs*",), attrs={"equation": ""})


@einsum_op.shape
def _(inputs: list[Tensor], *, equation: str, N: int = 0) -> Any:
    ins, out = _parse(equation, len(inputs))
    dt = inputs[0].dtype.base_dtype
    for t in inputs[1:]:
        if t.dtype.base_dtype != dt:
            raise TypeError(f"einsum {equation!r}: inputs must share a dtype, but "
                            f"{inputs[0].name} is {dt.name} and {t.name} is "
                            f"{t.dtype.base_dtype.name}.")
    sizes: dict[str, int] = {}
    ell: TensorShape | None = TensorShape([])
    for k, (x, subs) in enumerate(zip(inputs, ins)):
        r = x.shape.ndims
        if r is None:
            if _ELL in subs:
                ell = None
            continue
        n_labels = len(subs) - (1 if _ELL in subs else 0)
        if (r != n_labels) if _ELL not in subs else (r < n_labels):
            raise ValueError(f"einsum {equation!r}: input {k} ({x.name}) has shape {x.shape} "
                             f"(rank {r}) but its subscripts name {n_labels} dimension(s).")
        dims = x.shape.as_list()
        for pos, lab in enumerate(subs):
            if lab == _ELL:
                continue
            d = dims[_axis_of(subs, pos)]
            if d is None:
                continue
            if sizes.setdefault(lab, d) != d:
                raise ValueError(f"einsum {equation!r}: label {lab!r} has size {sizes[lab]} in "
                                 f"one input but {d} in input {k} ({x.name}, shape "
                                 f"{x.shape}).")
        if _ELL in subs and ell is not None:
            i = subs.index(_ELL)
            part = TensorShape(dims[i:i + r - n_labels])
            try:
                ell = broadcast_shapes(ell, part)
            except ValueError:
                raise ValueError(f"einsum {equation!r}: the '...' dimensions of input {k} "
                                 f"({x.name}, shape {x.shape}) do not broadcast.") from None
    result: list[Any] = []
    for lab in out:
        if lab == _ELL:
            if ell is None:
                return dt, TensorShape(None)
            result.extend(ell.as_list())
        else:
            result.append(sizes.get(lab))
    return dt, TensorShape(result)


@einsum_op.kernel("CPU")
def _(inputs: list[Any], *, equation: str, N: int = 0) -> Any:
    arrays = [np.asarray(x) for x in inputs]
    ins, out = _parse(equation, len(arrays))
    sizes: dict[str, int] = {}
    for k, (x, subs) in enumerate(zip(arrays, ins)):
        n_labels = len(subs) - (1 if _ELL in subs else 0)
        if (x.ndim != n_labels) if _ELL not in subs else (x.ndim < n_labels):
            raise errors.InvalidArgumentError(
                None, None, f"einsum {equation!r}: input {k} has shape {list(x.shape)} but "
                f"its subscripts name {n_labels} dimension(s)")
        for pos, t in enumerate(subs):
            if t == _ELL:
                continue
            d = x.shape[_axis_of(subs, pos)]
            # NumPy would broadcast a size-1 label; TF refuses, and so do we.
            if sizes.setdefault(t, d) != d:
                raise errors.InvalidArgumentError(
                    None, None, f"einsum {equation!r}: label {t!r} has size {sizes[t]} and "
                    f"{d} (input {k} has shape {list(x.shape)})")
    if _ELL in out or not any(_ELL in s for s in ins):
        res = np.einsum(_text(ins, out), *arrays, optimize=len(arrays) > 2)
    else:  # "...ij->ij": NumPy wants "..." in the output, so sum those dims after
        res = np.einsum(_text(ins, (_ELL,) + out), *arrays, optimize=len(arrays) > 2)
        res = np.sum(res, axis=tuple(range(res.ndim - len(out))))
    return np.asarray(res, dtype=arrays[0].dtype)


def _dim(x: Tensor, axis: int) -> Any:
    """Size of `axis` of `x`: an int when static, else a scalar int32 tensor."""
    if x.shape.ndims is not None:
        d = x.shape.as_list()[axis]
        if d is not None:
            return d
    return _tf_shape(x)[axis]


def _vector(n: Any, like: Tensor, eye: bool) -> Tensor:
    """ones([n]) or eye(n) in `like`'s dtype, for static or dynamic `n`."""
    np_dt = like.dtype.base_dtype.as_numpy_dtype
    if isinstance(n, int):
        return convert_to_tensor(np.eye(n, dtype=np_dt) if eye else np.ones(n, np_dt))
    ones = fill(reshape(n, [1]), convert_to_tensor(np.ones((), np_dt)))
    return matrix_diag(ones) if eye else ones


def _ellipsis_grad(op: Operation, x: Tensor, grad: Tensor, subs: Subs, out: Subs,
                   operands: list[Tensor], terms: list[Subs], target: list[str]) -> Tensor:
    """The gradient of an input with "...": its broadcast dimensions are summed back to
    the input's own (right-aligned) ones, wherever "..." sits in its subscripts."""
    e = subs.index(_ELL)
    n_core = len(subs) - 1
    if _ELL not in out:
        # The output summed "..." away: a ones operand brings back this input's "...".
        if x.shape.ndims is not None and x.shape[e:x.shape.ndims - n_core + e] \
                .is_fully_defined():
            ell_dims: Any = x.shape.as_list()[e:x.shape.ndims - n_core + e]
            ones_ell = convert_to_tensor(np.ones(ell_dims, grad.dtype.base_dtype.as_numpy_dtype))
        else:
            xs = _tf_shape(x)
            ell_dims = xs[e:-(n_core - e)] if n_core > e else xs[e:]
            ones_ell = fill(ell_dims, convert_to_tensor(
                np.ones((), grad.dtype.base_dtype.as_numpy_dtype)))
        operands.append(ones_ell)
        terms.append((_ELL,))
    # The gradient's "..." is the broadcast of every input's: move it to the front so
    # sum_to_shape can reduce it to this input's (right-aligned) "..." dimensions.
    front = (_ELL,) + tuple(t for t in target if t != _ELL)
    g = einsum(_text(terms, front), *operands)
    if e == 0:
        return sum_to_shape(g, x)
    r = x.shape.ndims
    if r is None:
        raise ValueError(f"einsum gradient of {op.name}: input {x.name} needs a known rank "
                         "when '...' is not its first subscript.")
    n_ell = r - n_core
    perm = list(range(e, e + n_ell)) + list(range(e)) + list(range(e + n_ell, r))
    g = sum_to_shape(g, transpose(x, perm))
    return transpose(g, list(np.argsort(perm)))


def _input_grad(op: Operation, grad: Tensor, i: int, ins: tuple[Subs, ...],
                out: Subs) -> Tensor:
    x = op.inputs[i]
    subs = ins[i]
    used = {t for s in ins for t in s} | set(out)
    fresh = iter(c for c in string.ascii_letters if c not in used)
    operands: list[Tensor] = [grad]
    terms: list[Subs] = [out]
    for j, other in enumerate(op.inputs):
        if j != i:
            operands.append(other)
            terms.append(ins[j])
    target: list[str] = []
    seen: set[str] = set()
    for pos, t in enumerate(subs):
        if t == _ELL or t not in seen:
            seen.add(t)
            target.append(t)
            continue
        # A repeated label (a diagonal): a fresh label tied to the first by eye(n).
        f = next(fresh)
        target.append(f)
        operands.append(_vector(_dim(x, _axis_of(subs, pos)), grad, eye=True))
        terms.append((t, f))
    present = {t for s in terms for t in s}
    for pos, t in enumerate(subs):
        if t != _ELL and t not in present:
            # Summed away in this input alone: every position gets the same gradient.
            operands.append(_vector(_dim(x, _axis_of(subs, pos)), grad, eye=False))
            terms.append((t,))
            present.add(t)
    if _ELL not in subs:
        return einsum(_text(terms, tuple(target)), *operands)
    return _ellipsis_grad(op, x, grad, subs, out, operands, terms, target)


@einsum_op.gradient
def _(op: Operation, grad: Tensor) -> list[Any]:
    ins, out = _parse(op.get_attr("equation"), len(op.inputs))
    return [_input_grad(op, grad, i, ins, out) for i in range(len(op.inputs))]


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """`tf.einsum` / `tf.linalg.einsum`: Einstein summation over `inputs`.

    Supports explicit ("ij,jk->ik") and implicit ("ij,jk") output, repeated labels
    (diagonals, traces) and "..." broadcasting of batch dimensions.

    Args:
        equation: the subscripts, letters per dimension.
        *inputs: tensors, one per comma-separated term.
        name: optional op name (keyword).

    Raises:
        ValueError: naming the equation, if it is malformed or does not fit the
            inputs' static shapes.

    Example:
        >>> tf.einsum("i,j->ij", u, v)   # outer product
    """
    name = kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword argument(s) {sorted(kwargs)}.")
    if not inputs:
        raise ValueError(f"einsum {equation!r}: needs at least one input tensor.")
    first = inputs[0] if isinstance(inputs[0], Tensor) else convert_to_tensor(inputs[0])
    ts = [first] + [t if isinstance(t, Tensor) else
                    convert_to_tensor(t, dtype=first.dtype.base_dtype) for t in inputs[1:]]
    _parse(equation, len(ts))  # fail here, at the call, for a malformed equation
    op = create_op("Einsum", [ts], {"equation": equation},
                   name=name or "einsum")
    return op.outputs[0]

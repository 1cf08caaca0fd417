"""Custom saveables: objects a `tf.train.Saver` saves through tensors they name (TF's protocol).

TF 1.x lets a Saver save things that are not variables (lookup tables, other
stateful objects) through `BaseSaverBuilder.SaveableObject`: the object lists
`SaveSpec`s (a tensor and the name to save it under) and, on restore, gets the
saved tensors back and returns the op that puts them in place. A Saver accepts
them in `var_list` or from the SAVEABLE_OBJECTS collection; they are saved and
restored with the variables, in both checkpoint formats.

Example:
    >>> from tensorweave.train.saver import BaseSaverBuilder
    >>> class TableSaveable(BaseSaverBuilder.SaveableObject):
    ...     def __init__(self, table, name):
    ...         keys, values = table.export()
    ...         specs = [BaseSaverBuilder.SaveSpec(keys, "", name + "-keys"),
    ...                  BaseSaverBuilder.SaveSpec(values, "", name + "-values")]
    ...         super().__init__(table, specs, name)
    ...     def restore(self, restored_tensors, restored_shapes):
    ...         return self.op.import_(restored_tensors[0], restored_tensors[1])
"""
from __future__ import annotations

from typing import Any, Callable

from tensorweave.framework.convert import constant
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Operation, Tensor


class SaveSpec:
    """One tensor a SaveableObject saves: the tensor (or a callable making it) and its name.

    Args:
        tensor: the tensor to save, or a callable returning it (then `dtype`
            and `device` are required, as TF).
        slice_spec: "" (slices of saveables are not supported; see the error).
        name: the name it is saved under in the checkpoint.

    Raises:
        AssertionError: a callable without dtype and device (TF's rule).
    """

    def __init__(self, tensor: Tensor | Callable[[], Tensor], slice_spec: str, name: str,
                 dtype: Any = None, device: str | None = None) -> None:
        self._tensor = tensor
        self.slice_spec = slice_spec
        self.name = name
        if callable(tensor):
            if dtype is None or device is None:
                raise AssertionError("When passing a callable `tensor` to a SaveSpec, an "
                                     "explicit dtype and device must be provided.")
            self.dtype, self.device = dtype, device
        else:
            self.dtype = tensor.dtype
            self.device = tensor.device if device is None else device

    @property
    def tensor(self) -> Tensor:
        return self._tensor() if callable(self._tensor) else self._tensor


class SaveableObject:
    """Something a Saver saves through `specs` and restores through `restore()`.

    Args:
        op: the object being saved (a tensor, an op, a table, ...).
        specs: its SaveSpecs.
        name: its name (the prefix of the specs' names, by convention).
    """

    def __init__(self, op: Any, specs: list[SaveSpec], name: str) -> None:
        self.op = op
        self.specs = specs
        self.name = name

    @property
    def optional_restore(self) -> bool:
        return False

    @property
    def device(self) -> str:
        return self.specs[0].device

    def restore(self, restored_tensors: list[Tensor], restored_shapes: Any) -> Any:
        """Returns the op that restores the object from `restored_tensors` (one per spec)."""
        raise ValueError(f"{type(self).__name__}.restore is abstract: a SaveableObject "
                         "subclass must say how to put the restored tensors back.")


class VariableSaveable(SaveableObject):
    """A variable (reference or resource) as a SaveableObject: saves its value under `name`,
    restores by assigning (TF's VariableSaveable / ResourceVariableSaveable).

    Subclasses override `restore` to put the value elsewhere too (e.g. mirrors).

    Args:
        var: the variable.
        slice_spec: "" (whole variable).
        name: the name it is saved under.
    """

    def __init__(self, var: Any, slice_spec: str, name: str) -> None:
        self._var = var
        spec = SaveSpec(var.value() if hasattr(var, "value") else var, slice_spec, name)
        super().__init__(var, [spec], name)

    def restore(self, restored_tensors: list[Tensor], restored_shapes: Any) -> Any:
        (value,) = restored_tensors
        return self._var.assign(value)


class BaseSaverBuilder:
    """TF's home of the custom-saveable protocol (`saver.BaseSaverBuilder.SaveableObject`,
    `.SaveSpec`, `.VariableSaveable`, `.ResourceVariableSaveable`); building a Saver's
    graph through a builder object is not offered (`Saver(builder=...)` raises)."""

    SaveableObject = SaveableObject
    SaveSpec = SaveSpec
    VariableSaveable = VariableSaveable
    ResourceVariableSaveable = VariableSaveable


def build_saveable_restores(saveables: list[SaveableObject], filename: Tensor
                            ) -> list[Operation]:
    """Per saveable: read its specs' tensors (TF's RestoreV2, either format), call restore();
    a saveable with `restore_from_file(filename)` makes its own restore op instead.

    Returns:
        The ops restore_all must wait for.
    """
    g = get_default_graph()
    out: list[Operation] = []
    for s in saveables:
        from_file = getattr(s, "restore_from_file", None)
        if from_file is not None:   # reads the checkpoint itself (it finds its tensors)
            with g.device(s.device), g.name_scope("restore_" + _scope_name(s.name)):
                out.append(from_file(filename))
            continue
        with g.device(s.device), g.name_scope("restore_" + _scope_name(s.name)):
            names = constant([spec.name for spec in s.specs], name="tensor_names")
            slices = constant(["" for _ in s.specs], name="shape_and_slices")
            restore = g.create_op("RestoreV2", [filename, names, slices],
                                  {"dtypes": [spec.dtype.base_dtype for spec in s.specs]},
                                  name="RestoreV2")
            result = s.restore(list(restore.outputs), None)
        if result is not None:
            out.append(result.op if isinstance(result, Tensor) else result)
    return out


def _scope_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name) or "saveable"


__all__ = ["BaseSaverBuilder", "SaveSpec", "SaveableObject", "VariableSaveable",
           "build_saveable_restores"]

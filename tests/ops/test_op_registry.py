"""Every registered op has a kernel, a shape function, and a gradient or a mark."""
import pytest

import tensorweave  # noqa: F401 - registers every op family
from tensorweave.framework.op_def import define_op, registered_ops


def test_every_op_has_kernel_shape_and_gradient_or_mark():
    problems = []
    for name, op in sorted(registered_ops().items()):
        if name.startswith("TestOnly"):
            continue
        if "CPU" not in op.kernels:
            problems.append(f"{name}: no CPU kernel ({op.where})")
        if op.shape_fn is None:
            problems.append(f"{name}: no shape function ({op.where})")
        if op.grad_fn is None and not op.not_differentiable:
            problems.append(f"{name}: no gradient and not marked no_gradient() ({op.where})")
    assert not problems, "\n".join(problems)


def test_core_families_are_registered():
    ops = registered_ops()
    for name in ["Const", "Placeholder", "Identity", "NoOp", "MatMul", "Sum", "Reshape",
                 "GatherV2", "Relu", "Conv2D", "VariableV2", "Assign", "If", "While"]:
        assert name in ops, f"op {name} is not registered"


def test_duplicate_registration_names_first_definition():
    with pytest.raises(ValueError, match=r"'Const' is already registered .*core_ops\.py"):
        define_op("Const")

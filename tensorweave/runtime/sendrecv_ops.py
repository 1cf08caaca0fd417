"""_Send and _Recv: the pair the partitioner puts on every cross-task edge.

A control edge crosses as a Send/Recv of an empty int32 tensor.
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.op_def import REQUIRED, define_op
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import as_shape
from tensorweave.runtime.rendezvous import make_key

_SEND_ATTRS = {"tensor_name": REQUIRED, "send_device": REQUIRED, "recv_device": REQUIRED}

send_op = define_op("_Send", inputs=("tensor",), attrs=dict(_SEND_ATTRS), stateful=True)


@send_op.shape
def _(tensor: Tensor, **attrs: Any) -> list:
    return []


@send_op.kernel("CPU", kind="context")
def _(ctx: Any, step: Any, value: Any, *, tensor_name: str, send_device: str,
      recv_device: str) -> None:
    step.rendezvous.send(make_key(send_device, recv_device, tensor_name), value)


send_op.no_gradient()

recv_op = define_op("_Recv", attrs=dict(_SEND_ATTRS, tensor_type=REQUIRED, shape=None),
                    stateful=True)


@recv_op.shape
def _(*, tensor_type: _dt.DType, shape: Any, **attrs: Any) -> Any:
    return tensor_type, as_shape(shape)


@recv_op.kernel("CPU", kind="async")
def _(ctx: Any, step: Any, done: Any, *, tensor_name: str, send_device: str,
      recv_device: str, tensor_type: _dt.DType, shape: Any) -> None:
    once = threading.Lock()

    def finish(value: Any) -> None:
        if once.acquire(blocking=False):  # the value or a cancellation, whichever is first
            done(value)

    step.rendezvous.recv_async(make_key(send_device, recv_device, tensor_name), send_device,
                               finish)
    if not once.locked():
        # Still waiting: a cancelled step must wake it. (Not deregistered once the value
        # comes: the callback then does nothing, and it goes with the step.)
        step.register_cancel(finish)


recv_op.no_gradient()

CONTROL_VALUE = np.zeros((0,), np.int32)

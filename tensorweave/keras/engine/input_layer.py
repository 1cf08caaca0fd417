"""`tf.keras.Input` and `InputLayer`: a placeholder that starts a Keras model.

Example:
    >>> x = tf.keras.Input(shape=(784,))      # placeholder "input_1", shape [None, 784]
    >>> y = tf.keras.layers.Dense(10)(x)
    >>> model = tf.keras.Model(x, y)
"""
from __future__ import annotations

from typing import Any

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.keras import backend
from tensorweave.keras.engine.base_layer import Layer
from tensorweave.keras.engine.node import Node, set_history
from tensorweave.ops.array.core_ops import placeholder


class InputLayer(Layer):
    """The layer behind `tf.keras.Input`: holds a placeholder (or a given tensor).

    Args:
        input_shape: shape without the batch dimension.
        batch_size: fixed batch size, or None.
        batch_input_shape: the full shape (instead of the two above).
        input_tensor: an existing tensor to use instead of a new placeholder.
    """

    def __init__(self, input_shape: Any = None, batch_size: int | None = None,
                 dtype: Any = None, input_tensor: Any = None, sparse: bool = False,
                 name: str | None = None, ragged: bool = False,
                 batch_input_shape: Any = None) -> None:
        if sparse or ragged:
            raise ValueError("InputLayer: sparse and ragged inputs are not supported; feed a "
                             "dense tensor instead.")
        if name is None:
            name = f"input_{backend.get_uid('input')}"
        super().__init__(name=name, dtype=dtype or _dt.float32)
        if input_tensor is None:
            if batch_input_shape is not None:
                shape = list(batch_input_shape)
            elif input_shape is not None:
                shape = [batch_size] + list(input_shape)
            else:
                shape = None
            g = get_default_graph()
            with g.name_scope(None):
                input_tensor = placeholder(self._dtype, shape, name=self.name)
        elif not isinstance(input_tensor, Tensor):
            raise TypeError(f"InputLayer {self.name}: input_tensor must be a Tensor, got "
                            f"{input_tensor!r}.")
        self.built = True
        self.is_placeholder = True
        node = Node(self, [], (), {}, input_tensor)
        self._inbound_nodes.append(node)
        set_history(input_tensor, node)
        self._batch_input_shape = tuple(input_tensor.shape.as_list()) \
            if input_tensor.shape.ndims is not None else None

    def get_config(self) -> dict[str, Any]:
        return {"batch_input_shape": self._batch_input_shape,
                "dtype": self._dtype.name if self._dtype else None,
                "name": self.name, "sparse": False}


def Input(shape: Any = None, batch_size: int | None = None, name: str | None = None,
          dtype: Any = None, sparse: bool = False, tensor: Any = None,
          ragged: bool = False, batch_shape: Any = None, **kwargs: Any) -> Tensor:
    """`tf.keras.Input`: a placeholder Keras knows as a model input.

    Args:
        shape: the shape of one example, e.g. (28, 28, 1); the batch dimension is added.
        batch_size: a fixed batch size (None: any).
        name: the placeholder's name (default "input_1", "input_2", ...).
        dtype: float32 by default.
        tensor: an existing tensor to wrap instead of making a placeholder.
        batch_shape: the full shape including the batch dimension.

    Raises:
        ValueError: if neither shape, batch_shape nor tensor is given.

    Example:
        >>> x = tf.keras.Input(shape=(4,), name="features")
    """
    if kwargs:
        raise TypeError(f"Input: unexpected keyword arguments {sorted(kwargs)}.")
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError("Please provide to Input either a `shape` or a `tensor` argument. "
                         "Note that `shape` does not include the batch dimension.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, dtype=dtype,
                       input_tensor=tensor, sparse=sparse, name=name, ragged=ragged,
                       batch_input_shape=batch_shape)
    out: Tensor = layer.output
    return out

"""`tf.keras.utils.get_source_inputs`: the Input tensors a Keras tensor is computed from.

Example:
    >>> a = tf.keras.Input((3,))
    >>> b = tf.keras.Input((3,))
    >>> y = tf.keras.layers.Add()([a, tf.keras.layers.Dense(3)(b)])
    >>> tf.keras.utils.get_source_inputs(y) == [a, b]
    True
"""
from __future__ import annotations

from typing import Any

from tensorweave.keras.engine.node import get_history


def get_source_inputs(tensor: Any, layer: Any = None, node_index: Any = None) -> Any:
    """The Input tensors (made by `tf.keras.Input`) that `tensor` depends on, in the order
    the layers' inputs list them, each once.

    A tensor no Keras layer made is returned as is, as TF does. `layer` and
    `node_index` (TF's starting point inside a layer) are accepted for TF's signature;
    the walk always starts from `tensor` itself, whose history names its layer call.

    Example:
        >>> x = tf.keras.Input((2,))
        >>> tf.keras.utils.get_source_inputs(tf.keras.layers.Dense(1)(x)) == [x]
        True
    """
    node = get_history(tensor)
    if node is None:
        return tensor
    sources: list[Any] = []
    seen: set[int] = set()
    stack = [tensor]
    visited_nodes: set[int] = set()
    while stack:
        t = stack.pop(0)
        n = get_history(t)
        if n is None or not n.input_tensors:  # an Input (or a tensor from outside Keras)
            if id(t) not in seen:
                seen.add(id(t))
                sources.append(t)
            continue
        if id(n) in visited_nodes:
            continue
        visited_nodes.add(id(n))
        stack = list(n.input_tensors) + stack  # depth first, inputs in their order
    return sources


__all__ = ["get_source_inputs"]

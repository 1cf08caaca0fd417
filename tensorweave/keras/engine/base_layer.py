"""`tf.keras.layers.Layer` in graph mode: a callable that owns variables.

A layer gets a per-graph unique name from its class ("dense", "dense_1", ...).
Its first call opens the name scope `<name>/`, builds its weights there (so they
are named `dense/kernel:0`, or `sequential/dense/kernel:0` inside a model that is
built by calling it) and then calls `call`. Every output remembers the call that
made it (`_keras_history`), which is how `Model(inputs, outputs)` finds its layers.

Example:
    >>> class Scale(tf.keras.layers.Layer):
    ...     def build(self, input_shape):
    ...         self.w = self.add_weight("w", [], initializer="ones")
    ...         super().build(input_shape)
    ...     def call(self, x):
    ...         return x * self.w
"""
from __future__ import annotations

import contextlib
import inspect
import re
from typing import Any, Iterator

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.convert import convert_to_tensor
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.tensor_shape import TensorShape
from tensorweave.keras import backend, initializers, regularizers
from tensorweave.keras.engine.node import (
    Node, depends_on, flatten, input_mask, map_structure, set_history, set_mask)
from tensorweave.state.variables import Variable

_ALLOWED_KWARGS = frozenset({"input_shape", "batch_input_shape", "batch_size", "input_dim",
                             "activity_regularizer", "autocast", "dynamic"})


def to_snake_case(name: str) -> str:
    """Keras's default layer names: "Conv2D" -> "conv2d", "MaxPooling2D" -> "max_pooling2d"."""
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    s = re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower()
    return "private" + s if s.startswith("_") else s


def _check_weight_kwargs(layer: str, weight: str, kwargs: dict[str, Any]) -> None:
    """add_weight's TF-only arguments: harmless ones pass, the rest are refused by name."""
    for key, value in kwargs.items():
        if key == "use_resource" or value is None:
            continue   # our variables are TF1 ref variables either way
        if key in ("synchronization", "aggregation") and str(value).split(".")[-1].upper() \
                in ("AUTO", "NONE", "0"):
            continue
        raise TypeError(f"Layer {layer}: add_weight({weight!r}) got {key}={value!r}, which "
                        "tensorweave does not support; leave it out.")


def _graph_of(inputs: Any) -> Graph:
    for t in flatten(inputs):
        g = getattr(t, "graph", None)
        if isinstance(g, Graph):
            return g
    return get_default_graph()


def _to_tensor(x: Any) -> Any:
    """Tensors stay; variables, numpy arrays and lists become tensors (a Variable's value)."""
    return x if isinstance(x, Tensor) else convert_to_tensor(x)


class Layer:
    """Base class of all Keras layers: weights, updates, losses, and `__call__`.

    Args:
        trainable: whether the layer's weights are trained (and listed as trainable).
        name: the layer's name; unique per graph by default (from the class name).
        dtype: the dtype of its weights (float32 unless the inputs say otherwise).
        input_shape / batch_input_shape / batch_size: for the first layer of a
            Sequential model, the shape of the model's input.
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        unknown = sorted(set(kwargs) - _ALLOWED_KWARGS)
        if unknown:
            raise TypeError(f"Keyword argument not understood: {unknown[0]!r} (for layer "
                            f"{type(self).__name__}).")
        self.trainable = trainable
        self._dtype = _dt.as_dtype(dtype).base_dtype if dtype is not None else None
        self._init_set_name(name)
        self.built = False
        self._trainable_weights: list[Variable] = []
        self._non_trainable_weights: list[Variable] = []
        self._updates: list[Any] = []
        self._losses: list[Any] = []
        self._inbound_nodes: list[Node] = []
        self._batch_input_shape = self._batch_shape_from(kwargs)
        self.activity_regularizer = regularizers.get(kwargs.get("activity_regularizer"))
        self._call_args = set(inspect.signature(self.call).parameters)

    @staticmethod
    def _batch_shape_from(kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
        if kwargs.get("batch_input_shape") is not None:
            return tuple(kwargs["batch_input_shape"])
        if kwargs.get("input_shape") is not None:
            return (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
        if kwargs.get("input_dim") is not None:
            return (kwargs.get("batch_size"), kwargs["input_dim"])
        return None

    def _init_set_name(self, name: str | None) -> None:
        self._name = name or backend.unique_object_name(to_snake_case(type(self).__name__))

    # ---- properties ----------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def dtype(self) -> _dt.DType | None:
        return self._dtype

    @property
    def trainable_weights(self) -> list[Variable]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Variable]:
        if self.trainable:
            return list(self._non_trainable_weights)
        return list(self._trainable_weights) + list(self._non_trainable_weights)

    @property
    def weights(self) -> list[Variable]:
        return self.trainable_weights + self.non_trainable_weights

    trainable_variables = property(lambda self: self.trainable_weights)
    non_trainable_variables = property(lambda self: self.non_trainable_weights)
    variables = property(lambda self: self.weights)

    @property
    def updates(self) -> list[Any]:
        return list(self._updates) if self.trainable else []

    @property
    def losses(self) -> list[Any]:
        return list(self._losses)

    @property
    def input(self) -> Any:
        return self._node_attr("inputs")

    @property
    def output(self) -> Any:
        return self._node_attr("outputs")

    def _node_attr(self, what: str) -> Any:
        if not self._inbound_nodes:
            raise AttributeError(f"Layer {self.name} has never been called and thus has no "
                                 f"defined {what[:-1]}.")
        return getattr(self._inbound_nodes[0], what)

    @property
    def input_shape(self) -> Any:
        return map_structure(lambda t: tuple(t.shape.as_list()), self.input)

    @property
    def output_shape(self) -> Any:
        return map_structure(lambda t: tuple(t.shape.as_list()), self.output)

    # ---- building ----------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Creates the weights; subclasses call `super().build(input_shape)` last."""
        self.built = True

    def call(self, inputs: Any) -> Any:
        """The layer's computation (subclasses may add `training`); the identity here."""
        return inputs

    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool = True,
                   constraint: Any = None, **kwargs: Any) -> Variable:
        """Creates a weight variable of this layer (in the current name scope).

        Args:
            name: short name ("kernel"); the variable is "<layer scope>/kernel:0".
            shape: its full shape.
            initializer: an initializer, its name, or None (glorot_uniform for floats,
                zeros otherwise; for tf.layers, the variable scope's initializer).
            regularizer: a callable giving a scalar penalty, added to `losses`.
            trainable: False for statistics such as BatchNormalization's moving mean.

        Example:
            >>> self.w = self.add_weight("w", [3, 4], initializer="zeros")
        """
        name = name or "Variable"  # TF 1.x's default variable name
        _check_weight_kwargs(self.name, name, kwargs)
        dt = _dt.as_dtype(dtype or self._dtype or _dt.float32).base_dtype
        init = initializers.get(initializer)
        shape = TensorShape(shape if shape is not None else [])
        if not shape.is_fully_defined():
            raise ValueError(f"Layer {self.name}: the shape of weight {name!r} must be fully "
                             f"defined, got {shape}; check the shape of the layer's inputs.")
        if constraint is not None:
            # TF's optimizers project constrained weights after each update; ours do not.
            raise ValueError(f"Layer {self.name}: a constraint on weight {name!r} is not "
                             "supported (tensorweave's optimizers do not apply weight "
                             "constraints); leave *_constraint as None.")
        var = self._make_variable(name, shape.as_list(), dt, init, trainable,
                                  regularizers.get(regularizer))
        (self._trainable_weights if trainable else self._non_trainable_weights).append(var)
        return var

    add_variable = add_weight

    def _make_variable(self, name: str, shape: list[int], dtype: _dt.DType, init: Any,
                       trainable: bool, regularizer: Any) -> Variable:
        """A new Variable "<name scope>/<name>"; Keras keeps its penalty in `losses`."""
        if init is None:
            init = initializers.GlorotUniform() if dtype.is_floating else initializers.Zeros()
        def initial_value() -> Any:
            return init(shape, dtype=dtype)
        var = Variable(initial_value, trainable=trainable, name=name, dtype=dtype)
        if regularizer is not None:
            g = var.graph
            with g.colocate_with(var.op), g.name_scope(var.op.name + "/Regularizer/"):
                loss = regularizer(var)
            if loss is not None:
                self.add_loss(loss)
        return var

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        """Adds ops to run each training step (BatchNormalization's moving averages)."""
        for u in flatten(updates):
            if u not in self._updates:
                self._updates.append(u)

    def get_updates_for(self, inputs: Any) -> list[Any]:
        """The updates computed from `inputs` (None: those computed from no input).

        A model built with an input shape was also called on its own Input
        placeholder; its updates for the tensors you call it on are these.

        Example:
            >>> with tf.control_dependencies(model.get_updates_for(features)):
            ...     train_op = optimizer.minimize(loss)
        """
        if inputs is None:
            return [u for u in self.updates if not depends_on(u, [])]
        sources = [t for t in flatten(inputs) if isinstance(t, Tensor)]
        return [u for u in self.updates if depends_on(u, sources)]

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        """Adds scalar losses (weight penalties, activity penalties) to `losses`."""
        self._losses.extend(flatten(losses))

    # ---- calling -----------------------------------------------------------------------
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """Builds the layer on first use, then applies `call` in the layer's name scope."""
        recorded = dict(kwargs)
        g = _graph_of(inputs)
        made_in = self.weights[0].graph if self.built and self.weights else None
        if made_in is not None and made_in is not g:
            raise ValueError(f"Layer {self.name} was built in another graph than the one its "
                             "inputs belong to; build a new layer (or model) in this graph.")
        with g.as_default():
            mask = input_mask(inputs)
            inputs = map_structure(_to_tensor, inputs)
            if "training" in self._call_args and kwargs.get("training") is None \
                    and self._uses_learning_phase():
                kwargs["training"] = backend.learning_phase()
            if mask is not None and "mask" in self._call_args and "mask" not in kwargs:
                kwargs["mask"] = mask
            with self._call_scope(g):
                if not self.built:
                    self._maybe_build(inputs)
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    with g.name_scope("ActivityRegularizer"):
                        self.add_loss([self.activity_regularizer(o) for o in flatten(outputs)])
                set_mask(outputs, self.compute_mask(inputs, mask))
        node = Node(self, inputs, args, recorded, outputs)
        self._inbound_nodes.append(node)
        for t in flatten(outputs):
            if isinstance(t, Tensor):
                set_history(t, node)
        return outputs

    def apply(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The same as calling the layer (the tf.layers spelling)."""
        return self.__call__(inputs, *args, **kwargs)

    def _uses_learning_phase(self) -> bool:
        return True

    @contextlib.contextmanager
    def _call_scope(self, g: Graph) -> Iterator[None]:
        with g.name_scope(self.name):
            yield

    def _maybe_build(self, inputs: Any) -> None:
        first = flatten(inputs)[0]
        self._maybe_build_for_shape(map_structure(lambda t: t.shape, inputs),
                                    getattr(first, "dtype", None))

    def _maybe_build_for_shape(self, shapes: Any, dtype: Any) -> None:
        """Builds in the current name scope (a wrapper builds its inner layer this way)."""
        if self._dtype is None:
            self._dtype = (dtype.base_dtype if dtype is not None and dtype.base_dtype.is_floating
                           else _dt.float32)
        self.build(shapes)
        self.built = True

    supports_masking = False

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask of the outputs: the input mask where the layer supports masking.

        Raises:
            TypeError: for a mask given to a layer that does not support masking.
        """
        if not self.supports_masking:
            if any(m is not None for m in flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed "
                                "an input_mask (from Embedding(mask_zero=True) or Masking).")
            return None
        return mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for `input_shape`; layers that keep the shape inherit this.

        Raises:
            NotImplementedError: for layers that change the shape and do not say how
                (as TF 1.x in graph mode): call the layer and read the output's shape.
        """
        if type(self).call is Layer.call or getattr(self, "_keeps_shape", False):
            return TensorShape(input_shape)
        raise NotImplementedError(f"Layer {type(self).__name__} does not implement "
                                  "compute_output_shape; call it on a tensor and read the "
                                  "output's shape.")

    # ---- weights through the session ---------------------------------------------------
    def get_weights(self) -> list[np.ndarray]:
        """The weights' values (through the default session, else Keras's own)."""
        return backend.batch_get_value(self.weights)

    def set_weights(self, weights: list[Any]) -> None:
        """Loads numpy values into the weights, in `weights` order.

        Raises:
            ValueError: if the number of arrays or a shape does not match.
        """
        params = self.weights
        if len(params) != len(weights):
            raise ValueError(f"You called `set_weights(weights)` on layer {self.name} with a "
                             f"weight list of length {len(weights)}, but the layer was "
                             f"expecting {len(params)} weights.")
        pairs = []
        for var, value in zip(params, weights):
            value = np.asarray(value)
            if not var.shape.is_compatible_with(TensorShape(value.shape)):
                raise ValueError(f"Layer weight shape {var.shape} of {var.name} not compatible "
                                 f"with provided weight shape {value.shape}.")
            pairs.append((var, value))
        backend.batch_set_value(pairs)

    def count_params(self) -> int:
        """The number of scalars in the layer's weights."""
        return sum(w.shape.num_elements() or 0 for w in self.weights)

    def get_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self._dtype is not None:
            config["dtype"] = self._dtype.name
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = self._batch_input_shape
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Layer":
        return cls(**config)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} name={self.name}>"

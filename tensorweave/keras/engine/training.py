"""`Model.compile`, `fit`, `evaluate`, `predict` in graph mode, on numpy arrays.

`compile` builds, in the model's graph, a target placeholder, the loss (mean of the
per-example loss, plus the model's own losses such as weight penalties), the metric
tensors and a train op that also runs the model's updates. `fit` feeds batches
through `tf.keras.backend.get_session()` with the learning phase set to True.

Example:
    >>> model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
    ...               metrics=["accuracy"])
    >>> history = model.fit(x_train, y_train, batch_size=32, epochs=5, verbose=0)
    >>> loss, acc = model.evaluate(x_test, y_test, verbose=0)
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from tensorweave.framework import dtypes as _dt
from tensorweave.framework.graph import Graph
from tensorweave.framework.tensor import Tensor
from tensorweave.keras import backend
from tensorweave.keras import losses as keras_losses
from tensorweave.keras import metrics as keras_metrics
from tensorweave.keras import optimizers
from tensorweave.keras.callbacks import CallbackList
from tensorweave.keras.engine import training_dataset
from tensorweave.ops import array as array_ops
from tensorweave.ops.array.core_ops import placeholder
from tensorweave.ops.control_flow import group
from tensorweave.ops.math import math_ops
from tensorweave.train.saver import Saver


class History:
    """What `fit` returns: `history` maps "loss", "acc", "val_loss", ... to per-epoch values."""

    def __init__(self) -> None:
        self.epoch: list[int] = []
        self.history: dict[str, list[float]] = {}

    def record(self, epoch: int, logs: dict[str, float]) -> None:
        self.epoch.append(epoch)
        for key, value in logs.items():
            self.history.setdefault(key, []).append(value)


class Compiled:
    """The graph pieces `compile` made for one model: on its Input placeholders and a
    target placeholder, or (`output`, `target`, `sources` given) on tensors such as a
    dataset's elements."""

    def __init__(self, model: Any, optimizer: Any, loss: Any, metrics: Any,
                 output: Tensor | None = None, target: Tensor | None = None,
                 sources: list[Tensor] | None = None) -> None:
        if output is None:
            if not model.outputs or len(model.outputs) != 1:
                raise ValueError(f"Model {model.name}: compile/fit support models with "
                                 f"exactly one output (this one has "
                                 f"{len(model.outputs or [])}).")
            output, sources = model.outputs[0], list(model.inputs)
        assert output is not None and sources is not None
        self.graph: Graph = output.graph
        with self.graph.as_default():
            if target is not None and target.shape.ndims == 1 and output.shape.ndims == 2:
                target = array_ops.expand_dims(target, -1)   # [n] labels -> [n, 1], as Keras
            self.loss_fn = keras_losses.get(loss)
            rank = output.shape.ndims   # the target has the output's rank, as in Keras
            self.target = target if target is not None else placeholder(
                _dt.float32, None if rank is None else [None] * rank,
                name=f"{model.name}_target")
            self.optimizer = optimizer
            with self.graph.name_scope("loss"):
                self.loss = math_ops.reduce_mean(self.loss_fn(self.target, output))
                extra = model.losses
                if extra:
                    self.loss = math_ops.add(self.loss, math_ops.add_n(extra))
            self.metric_names, self.metric_values = self._metrics(metrics, output)
            with self.graph.name_scope("training"):
                minimize = self.optimizer.minimize(self.loss,
                                                   var_list=model.trainable_weights)
                # only the updates of this call (not of calls on other tensors)
                updates = model.get_updates_for(sources) + model.get_updates_for(None)
                self.train_op = group(minimize, *updates)
        self.inputs: list[Tensor] = list(sources)
        self.output = output

    def _metrics(self, metrics: Any, output: Tensor) -> tuple[list[str], list[Tensor]]:
        names, values = [], []
        units = output.shape.as_list()[-1] if output.shape.ndims else None
        for m in metrics or []:
            if m in ("accuracy", "acc"):
                fn: Callable[..., Tensor] = keras_metrics.accuracy_for(self.loss_fn, units)
                name = "acc"   # TF 1.x's Keras reports "accuracy" as "acc"
            else:
                fn = keras_metrics.get(m)
                name = m if isinstance(m, str) else getattr(m, "__name__", "metric")
            with self.graph.name_scope("metrics"):
                values.append(math_ops.reduce_mean(fn(self.target, output)))
            names.append(name)
        return names, values


def _need_targets(y: Any, who: str) -> None:
    # TF's y=None serves models fed by datasets/iterators; ours take numpy batches.
    if y is None:
        raise ValueError(f"Model.{who}: give the batch's targets y (numpy arrays); "
                         "dataset-fed batches are not supported here.")


def _two_d(a: Any) -> np.ndarray:
    """Keras's rule: a 1-D array of samples becomes a column ([n] -> [n, 1])."""
    arr = np.asarray(a)
    return arr[:, None] if arr.ndim == 1 else arr


def _as_list(x: Any, n: int, what: str) -> list[np.ndarray]:
    arrays = list(x) if isinstance(x, (list, tuple)) else [x]
    if len(arrays) != n:
        raise ValueError(f"The model expects {n} {what} array(s), but received "
                         f"{len(arrays)}.")
    out = [_two_d(a) for a in arrays]
    sizes = {a.shape[0] for a in out}
    if len(sizes) != 1:
        raise ValueError(f"All {what} arrays should have the same number of samples; got "
                         f"{[a.shape[0] for a in out]}.")
    return out


def _batches(n: int, batch_size: int, order: np.ndarray) -> list[np.ndarray]:
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def _run_batches(c: Compiled, fetches: list[Any], xs: list[np.ndarray], y: np.ndarray | None,
                 batch_size: int, training: bool, order: np.ndarray,
                 hooks: Any = None, names: list[str] | None = None) -> list[float]:
    """Runs `fetches` over all batches; returns their sample-weighted means. `hooks` (a
    CallbackList) hears each batch, with the last `names` fetches as its logs."""
    sess = backend.get_session()
    phase = backend.learning_phase()
    totals = np.zeros(len(fetches))
    for i, idx in enumerate(_batches(len(order), batch_size, order)):
        feed: dict[Any, Any] = {t: x[idx] for t, x in zip(c.inputs, xs)}
        if y is not None:
            feed[c.target] = y[idx]
        if isinstance(phase, Tensor):
            feed[phase] = training
        if hooks is not None:
            hooks.call("on_batch_begin", i, {"batch": i, "size": len(idx)})
        values = [float(v) if v is not None else 0.0 for v in sess.run(fetches, feed)]
        totals += np.array(values) * len(idx)
        if hooks is not None and names:
            hooks.call("on_batch_end", i, dict(zip(names, values[-len(names):])))
    return [float(v) for v in totals / max(1, len(order))]


def fit(model: Any, x: Any, y: Any, batch_size: int | None, epochs: int, verbose: int,
        validation_data: Any, shuffle: bool, initial_epoch: int, callbacks: Any) -> History:
    c = compiled(model)
    xs = _as_list(x, len(c.inputs), "input")
    yv = _two_d(y)
    n = xs[0].shape[0]
    if yv.shape[0] != n:
        raise ValueError(f"Input arrays should have the same number of samples as target "
                         f"arrays. Found {n} input samples and {yv.shape[0]} target samples.")
    history = History()
    names = ["loss"] + c.metric_names
    hooks = CallbackList(list(callbacks or []), model,
                         {"epochs": epochs, "samples": n, "verbose": verbose,
                          "metrics": names + [f"val_{k}" for k in names]})
    rng = np.random.default_rng()
    model.stop_training = False
    hooks.call("on_train_begin", {})
    for epoch in range(initial_epoch, epochs):
        hooks.call("on_epoch_begin", epoch, {})
        order = rng.permutation(n) if shuffle else np.arange(n)
        means = _run_batches(c, [c.train_op, c.loss] + c.metric_values, xs, yv,
                             batch_size or 32, True, order, hooks, names)[1:]
        logs = dict(zip(names, means))
        if validation_data is not None:
            vx, vy = validation_data[0], validation_data[1]
            val = evaluate_logs(model, vx, vy, batch_size or 32)
            logs.update({f"val_{k}": v for k, v in val.items()})
        history.record(epoch, logs)
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs} - " +
                  " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        hooks.call("on_epoch_end", epoch, logs)
        if model.stop_training:
            break
    hooks.call("on_train_end", {})
    return history


def evaluate_logs(model: Any, x: Any, y: Any, batch_size: int | None) -> dict[str, float]:
    c = compiled(model)
    xs = _as_list(x, len(c.inputs), "input")
    means = _run_batches(c, [c.loss] + c.metric_values, xs, _two_d(y), batch_size or 32,
                         False, np.arange(xs[0].shape[0]))
    return dict(zip(["loss"] + c.metric_names, means))


def predict(model: Any, x: Any, batch_size: int | None) -> np.ndarray:
    if not model.outputs or not model.inputs:
        raise ValueError(f"Model {model.name} has no inputs/outputs yet: give the first layer "
                         "an input_shape, or build it with tf.keras.Input.")
    xs = _as_list(x, len(model.inputs), "input")
    sess = backend.get_session()
    phase = backend.learning_phase()
    parts = []
    for idx in _batches(xs[0].shape[0], batch_size or 32, np.arange(xs[0].shape[0])):
        feed: dict[Any, Any] = {t: a[idx] for t, a in zip(model.inputs, xs)}
        if isinstance(phase, Tensor):
            feed[phase] = False
        parts.append(sess.run(model.outputs[0], feed))
    return np.concatenate(parts, axis=0)


def compiled(model: Any) -> Compiled:
    c = getattr(model, "_compiled", None)
    if c is None:
        raise RuntimeError(f"You must compile model {model.name} before training/testing. "
                           "Use `model.compile(optimizer, loss)`.")
    return c


def _reject(what: str, **given: Any) -> None:
    bad = {k: v for k, v in given.items() if v is not None and v is not False}
    if bad:
        raise ValueError(f"{what}: {sorted(bad)} are not supported by tensorweave's Keras; "
                         "leave them at their defaults.")


class ModelTraining:
    """`compile`, `fit`, `evaluate`, `predict` and the *_on_batch methods of a Model."""

    name: str
    inputs: list[Tensor] | None
    outputs: list[Tensor] | None
    _compiled: Compiled | None = None
    _compile_args: tuple[Any, Any, Any] | None = None

    def compile(self, optimizer: Any = "rmsprop", loss: Any = None, metrics: Any = None,
                loss_weights: Any = None, sample_weight_mode: Any = None,
                weighted_metrics: Any = None, target_tensors: Any = None,
                **kwargs: Any) -> None:
        """Sets the optimizer, the loss and the metrics for `fit`/`evaluate`.

        Raises:
            ValueError: without a loss, or with an unknown loss/metric/optimizer name.
        """
        _reject("compile", loss_weights=loss_weights, sample_weight_mode=sample_weight_mode,
                weighted_metrics=weighted_metrics, target_tensors=target_tensors, **kwargs)
        if loss is None:
            raise ValueError(f"compile of model {self.name}: a `loss` is required.")
        keras_losses.get(loss)   # an unknown name fails now, not at fit
        self._compile_args = (optimizers.get(optimizer), loss, metrics)
        self._compiled = Compiled(self, *self._compile_args) if self.outputs else None
        self._dataset_graphs: dict[int, Any] = {}

    def _ready(self, x: Any) -> Compiled:
        if self._compile_args is None:
            raise RuntimeError(f"You must compile model {self.name} before training/testing. "
                               "Use `model.compile(optimizer, loss)`.")
        if self._compiled is None:
            self._build_from_data(x)
            self._compiled = Compiled(self, *self._compile_args)
        return self._compiled

    def _compiled_for(self, output: Tensor, target: Tensor, features: Any) -> Compiled:
        """Loss, metrics and train op on tensors (a dataset's elements), as compiled."""
        if self._compile_args is None:
            raise RuntimeError(f"You must compile model {self.name} before training/testing. "
                               "Use `model.compile(optimizer, loss)`.")
        sources = features if isinstance(features, (list, tuple)) else [features]
        return Compiled(self, *self._compile_args, output=output, target=target,
                        sources=list(sources))

    def _build_from_data(self, x: Any) -> None:
        raise ValueError(f"Model {self.name} has no known input shape: give the first layer "
                         "an input_shape, or build it with tf.keras.Input.")

    @property
    def metrics_names(self) -> list[str]:
        c = self._compiled
        if c is not None:
            return ["loss"] + c.metric_names
        metrics = self._compile_args[2] if self._compile_args else None
        return ["loss"] + ["acc" if m in ("accuracy", "acc") else
                           (m if isinstance(m, str) else getattr(m, "__name__", "metric"))
                           for m in metrics or []]

    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None,
            epochs: int = 1, verbose: int = 1, callbacks: Any = None,
            validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
            class_weight: Any = None, sample_weight: Any = None, initial_epoch: int = 0,
            steps_per_epoch: Any = None, validation_steps: Any = None,
            **kwargs: Any) -> History:
        """Trains on numpy arrays for `epochs`; returns a History of per-epoch means.

        Raises:
            ValueError: for unsupported arguments (callbacks, class/sample weights, steps),
                or inputs and targets of different lengths.
        """
        _reject("fit", class_weight=class_weight, sample_weight=sample_weight, **kwargs)
        if training_dataset.is_dataset(x):
            if y is not None or validation_split:
                raise ValueError("fit on a Dataset: give no `y` (the dataset yields "
                                 "(features, labels)) and no validation_split.")
            def validate() -> dict[str, float]:
                if validation_data is None:
                    return {}
                val = self.evaluate(validation_data, steps=validation_steps, verbose=0)
                val = val if isinstance(val, list) else [val]
                return {f"val_{k}": v for k, v in zip(self.metrics_names, val)}
            hooks = CallbackList(list(callbacks or []), self,
                                 {"epochs": epochs, "steps": steps_per_epoch,
                                  "verbose": verbose})
            return training_dataset.fit_dataset(self, x, epochs, verbose, steps_per_epoch,
                                                initial_epoch, History(), hooks, validate)
        _reject("fit", steps_per_epoch=steps_per_epoch, validation_steps=validation_steps)
        self._ready(x)
        if validation_split and validation_data is None:
            xs = x if isinstance(x, (list, tuple)) else [x]
            n = len(np.asarray(xs[0]))
            cut = int(n * (1.0 - validation_split))
            split = [np.asarray(a) for a in xs]
            validation_data = ([a[cut:] for a in split] if len(split) > 1 else split[0][cut:],
                               np.asarray(y)[cut:])
            x = [a[:cut] for a in split] if len(split) > 1 else split[0][:cut]
            y = np.asarray(y)[:cut]
        return fit(self, x, y, batch_size, epochs, verbose, validation_data, shuffle,
                   initial_epoch, callbacks)

    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: int = 1, sample_weight: Any = None, steps: Any = None) -> Any:
        """The loss (and metrics) over all of `x`, `y`: a scalar, or [loss, metric, ...]."""
        _reject("evaluate", sample_weight=sample_weight)
        if training_dataset.is_dataset(x):
            values = list(training_dataset.evaluate_dataset(self, x, steps).values())
            return values[0] if len(values) == 1 else values
        _reject("evaluate", steps=steps)
        self._ready(x)
        values = list(evaluate_logs(self, x, y, batch_size).values())
        return values[0] if len(values) == 1 else values

    def predict(self, x: Any, batch_size: int | None = None, verbose: int = 0,
                steps: Any = None) -> np.ndarray:
        """The model's outputs for `x`, in inference mode, batch by batch."""
        if training_dataset.is_dataset(x):
            return training_dataset.predict_dataset(self, x, steps)
        _reject("predict", steps=steps)
        if not self.outputs:
            self._build_from_data(x)
        return predict(self, x, batch_size)

    def train_on_batch(self, x: Any, y: Any = None) -> Any:
        """One training step on one batch; the loss (and metrics) before the update."""
        _need_targets(y, "train_on_batch")
        c = self._ready(x)
        xs = _as_list(x, len(c.inputs), "input")
        vals = _run_batches(c, [c.train_op, c.loss] + c.metric_values, xs, _two_d(y),
                            xs[0].shape[0], True, np.arange(xs[0].shape[0]))[1:]
        return vals[0] if len(vals) == 1 else vals

    def test_on_batch(self, x: Any, y: Any = None) -> Any:
        """The loss (and metrics) on one batch, in inference mode."""
        _need_targets(y, "test_on_batch")
        self._ready(x)
        return self.evaluate(x, y, batch_size=len(np.asarray(
            x[0] if isinstance(x, (list, tuple)) else x)), verbose=0)

    def predict_on_batch(self, x: Any) -> np.ndarray:
        """`predict` on one batch."""
        return self.predict(x, batch_size=len(np.asarray(
            x[0] if isinstance(x, (list, tuple)) else x)))

    def save_weights(self, filepath: str) -> str:
        """Writes the model's weights as a checkpoint at `filepath` (TF format, not HDF5).

        Raises:
            ValueError: for an .h5/.hdf5 path (HDF5 is not supported) or an unbuilt model.
        """
        return str(self._weights_saver(filepath).save(backend.get_session(), filepath,
                                                      write_meta_graph=False))

    def load_weights(self, filepath: str) -> None:
        """Restores the weights `save_weights` wrote (matched by variable name)."""
        self._weights_saver(filepath).restore(backend.get_session(), filepath)

    def _weights_saver(self, filepath: str) -> Saver:
        if str(filepath).endswith((".h5", ".hdf5", ".keras")):
            raise ValueError(f"save_weights/load_weights: {filepath!r} asks for HDF5, which "
                             "tensorweave does not write; use a path without that suffix "
                             "(TensorFlow checkpoint format).")
        weights = getattr(self, "weights", [])
        if not weights:
            raise ValueError(f"Model {self.name} has no weights yet; build it first.")
        saver: Saver | None = getattr(self, "_saver", None)
        if saver is None or getattr(self, "_saver_weights", None) != weights:
            with weights[0].graph.as_default():   # one Saver (and its ops) per weight list
                saver = Saver(var_list=weights)
            self._saver, self._saver_weights = saver, weights
        return saver

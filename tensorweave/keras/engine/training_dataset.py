"""`fit`/`evaluate`/`predict` on a `tf.data.Dataset` of (features, labels) batches.

The model is applied to the elements of an initializable iterator over the dataset
(built once per dataset); each epoch re-initializes the iterator and runs
`steps_per_epoch` steps, or until the dataset ends when that is None.

Example:
    >>> ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000).batch(32)
    >>> model.fit(ds, epochs=3, verbose=0)
    >>> model.evaluate(ds, verbose=0)
"""
from __future__ import annotations

from typing import Any

import numpy as np

from tensorweave.framework.errors import OutOfRangeError
from tensorweave.framework.tensor import Tensor
from tensorweave.keras import backend
from tensorweave.ops import array as array_ops
from tensorweave.data.dataset import Dataset


def is_dataset(x: Any) -> bool:
    return isinstance(x, Dataset)


class DatasetGraph:
    """The iterator, the model applied to its elements, and (if compiled) loss and train op."""

    def __init__(self, model: Any, dataset: Dataset, with_labels: bool) -> None:
        self.iterator = dataset.make_initializable_iterator()
        element = self.iterator.get_next()
        if with_labels:
            if not isinstance(element, (tuple, list)) or len(element) != 2:
                raise ValueError(f"fit/evaluate on a Dataset need (features, labels) elements; "
                                 f"this dataset gives {element!r}.")
            features, labels = element
        else:
            features = element[0] if isinstance(element, (tuple, list)) else element
            labels = None
        self.output: Tensor = model(features)
        self.batch_size = array_ops.shape(self.output)[0]
        self.compiled: Any = (model._compiled_for(self.output, labels, features)
                              if with_labels else None)


def _graph_for(model: Any, dataset: Dataset, with_labels: bool) -> DatasetGraph:
    key = (id(dataset), with_labels)
    cache = model.__dict__.setdefault("_dataset_graphs", {})
    found = cache.get(key)
    if found is None:
        found = cache[key] = (dataset, DatasetGraph(model, dataset, with_labels))
    return found[1]


def _run_epoch(dg: DatasetGraph, fetches: list[Any], steps: int | None, training: bool,
               hooks: Any = None, names: list[str] | None = None) -> list[float]:
    """Runs `fetches` once per batch; returns their means weighted by batch size (as the
    numpy path does, so a short last batch counts for what it holds)."""
    sess = backend.get_session()
    phase = backend.learning_phase()
    feed = {phase: training} if isinstance(phase, Tensor) else {}
    sess.run(dg.iterator.initializer)
    totals, samples, count = np.zeros(len(fetches)), 0, 0
    while steps is None or count < steps:
        if hooks is not None:
            hooks.call("on_batch_begin", count, {"batch": count})
        try:
            *values, size = sess.run(fetches + [dg.batch_size], feed)
        except OutOfRangeError:
            if steps is not None:
                raise ValueError(f"The dataset ended after {count} batches, before "
                                 f"steps={steps}; use .repeat() or fewer steps.") from None
            break
        floats = [0.0 if v is None else float(v) for v in values]
        totals += np.array(floats) * int(size)
        samples += int(size)
        if hooks is not None and names:
            hooks.call("on_batch_end", count, dict(zip(names, floats[-len(names):])))
        count += 1
    return [float(v) for v in totals / max(1, samples)]


def fit_dataset(model: Any, dataset: Dataset, epochs: int, verbose: int,
                steps_per_epoch: int | None, initial_epoch: int, history: Any,
                hooks: Any, validate: Any) -> Any:
    """Trains on `dataset`; `validate()` gives the val_* logs (or {}) after each epoch."""
    dg = _graph_for(model, dataset, True)
    c = dg.compiled
    names = ["loss"] + c.metric_names
    model.stop_training = False
    hooks.call("on_train_begin", {})
    for epoch in range(initial_epoch, epochs):
        hooks.call("on_epoch_begin", epoch, {})
        means = _run_epoch(dg, [c.train_op, c.loss] + c.metric_values, steps_per_epoch,
                           True, hooks, names)[1:]
        logs = dict(zip(names, means))
        logs.update(validate())
        history.record(epoch, logs)
        if verbose:
            print(f"Epoch {epoch + 1}/{epochs} - " +
                  " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
        hooks.call("on_epoch_end", epoch, logs)
        if model.stop_training:
            break
    hooks.call("on_train_end", {})
    return history


def evaluate_dataset(model: Any, dataset: Dataset, steps: int | None) -> dict[str, float]:
    dg = _graph_for(model, dataset, True)
    c = dg.compiled
    means = _run_epoch(dg, [c.loss] + c.metric_values, steps, False)
    return dict(zip(["loss"] + c.metric_names, means))


def predict_dataset(model: Any, dataset: Dataset, steps: int | None) -> np.ndarray:
    dg = _graph_for(model, dataset, False)
    sess = backend.get_session()
    phase = backend.learning_phase()
    feed = {phase: False} if isinstance(phase, Tensor) else {}
    sess.run(dg.iterator.initializer)
    parts: list[np.ndarray] = []
    while steps is None or len(parts) < steps:
        try:
            parts.append(sess.run(dg.output, feed))
        except OutOfRangeError:
            break
    if not parts:
        raise ValueError("predict: the dataset gave no batches.")
    return np.concatenate(parts, axis=0)

"""`tf.keras.callbacks`: hooks `fit` calls around training, epochs and batches.

`fit(..., callbacks=[...])` calls `on_train_begin/end`, `on_epoch_begin/end(epoch,
logs)` and `on_batch_begin/end(batch, logs)` (batch logs hold "loss" and the
metrics of that batch). A callback sets `self.model.stop_training = True` to end
training after the current epoch.

Example:
    >>> model.fit(x, y, epochs=50, callbacks=[
    ...     tf.keras.callbacks.EarlyStopping(monitor="val_loss", patience=3),
    ...     tf.keras.callbacks.ModelCheckpoint("/tmp/ckpt/weights"),
    ...     tf.keras.callbacks.TensorBoard("/tmp/logs")])
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from tensorweave.framework.proto import summary_pb2
from tensorweave.summary.writer import FileWriter


class Callback:
    """Base class: override the `on_*` methods you need. `self.model` is the model."""

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict[str, Any] = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict[str, Any]) -> None:
        self.params = params

    def on_train_begin(self, logs: dict[str, float] | None = None) -> None:
        """Called once before the first epoch."""

    def on_train_end(self, logs: dict[str, float] | None = None) -> None:
        """Called once after the last epoch."""

    def on_epoch_begin(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        """Called before each epoch."""

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        """Called after each epoch with its mean loss/metrics (and val_*)."""

    def on_batch_begin(self, batch: int, logs: dict[str, float] | None = None) -> None:
        """Called before each training batch."""

    def on_batch_end(self, batch: int, logs: dict[str, float] | None = None) -> None:
        """Called after each training batch with that batch's loss/metrics."""


class CallbackList:
    """Calls every callback of a list in order."""

    def __init__(self, callbacks: list[Callback], model: Any, params: dict[str, Any]) -> None:
        for cb in callbacks:
            if not isinstance(cb, Callback):
                raise TypeError(f"callbacks must be tf.keras.callbacks.Callback instances; "
                                f"got {cb!r}.")
            cb.set_model(model)
            cb.set_params(params)
        self.callbacks = list(callbacks)

    def call(self, method: str, *args: Any) -> None:
        for cb in self.callbacks:
            getattr(cb, method)(*args)


class LambdaCallback(Callback):
    """A callback from functions: on_epoch_end=lambda epoch, logs: ..., etc."""

    def __init__(self, on_epoch_begin: Callable[..., Any] | None = None,
                 on_epoch_end: Callable[..., Any] | None = None,
                 on_batch_begin: Callable[..., Any] | None = None,
                 on_batch_end: Callable[..., Any] | None = None,
                 on_train_begin: Callable[..., Any] | None = None,
                 on_train_end: Callable[..., Any] | None = None) -> None:
        super().__init__()
        given = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end,
                 "on_batch_begin": on_batch_begin, "on_batch_end": on_batch_end,
                 "on_train_begin": on_train_begin, "on_train_end": on_train_end}
        for name, fn in given.items():
            if fn is not None:
                setattr(self, name, fn)


def _better(mode: str, monitor: str) -> Callable[[float, float], bool]:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max', got {mode!r}.")
    if mode == "max" or (mode == "auto" and ("acc" in monitor)):
        return lambda a, b: a > b
    return lambda a, b: a < b


class EarlyStopping(Callback):
    """Stops training when `monitor` has not improved by `min_delta` for `patience` epochs.

    Raises:
        ValueError: for an unknown mode.
    """

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False) -> None:
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, int(patience), verbose
        self.min_delta = abs(float(min_delta))
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self._better = _better(mode, monitor)
        self.wait, self.stopped_epoch = 0, 0
        self.best = math.nan
        self.best_weights: list[np.ndarray] | None = None

    def on_train_begin(self, logs: dict[str, float] | None = None) -> None:
        self.wait, self.stopped_epoch = 0, 0
        self.best = self.baseline if self.baseline is not None else math.nan

    def _improved(self, value: float) -> bool:
        if math.isnan(self.best):
            return True
        minimizing = self._better(0.0, 1.0)
        shifted = value + self.min_delta if minimizing else value - self.min_delta
        return self._better(shifted, self.best)

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        value = (logs or {}).get(self.monitor)
        if value is None:
            raise ValueError(f"EarlyStopping: metric {self.monitor!r} is not in the logs "
                             f"({sorted(logs or {})}); pass validation data or change "
                             "`monitor`.")
        if self._improved(value):
            self.best, self.wait = value, 0
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            return
        self.wait += 1
        if self.wait > self.patience:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)
            if self.verbose:
                print(f"Epoch {epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Saves the weights (`save_weights`) after each epoch, or only the best ones.

    `filepath` may hold `{epoch}` and log keys, e.g. "ckpt/w-{epoch:02d}-{val_loss:.2f}".
    """

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = True,
                 mode: str = "auto", save_freq: Any = "epoch", period: int = 1) -> None:
        # TF 1.x's order (save_freq 7th; period is its deprecated keyword).
        if save_freq != "epoch":
            raise ValueError(f"ModelCheckpoint: save_freq={save_freq!r} (every N batches) is "
                             "not supported; use save_freq='epoch' with period=N epochs.")
        super().__init__()
        self.filepath, self.monitor, self.verbose = filepath, monitor, verbose
        self.save_best_only, self.period = save_best_only, max(1, int(period))
        self._better = _better(mode, monitor)
        self.best = math.nan

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        logs = logs or {}
        if (epoch + 1) % self.period:
            return
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            value = logs.get(self.monitor)
            if value is None:
                raise ValueError(f"ModelCheckpoint: metric {self.monitor!r} is not in the "
                                 f"logs ({sorted(logs)}).")
            if not (math.isnan(self.best) or self._better(value, self.best)):
                return
            self.best = value
        self.model.save_weights(path)
        if self.verbose:
            print(f"Epoch {epoch + 1}: saving model to {path}")


class TerminateOnNaN(Callback):
    """Stops training when a batch's loss is NaN or infinite."""

    def on_batch_end(self, batch: int, logs: dict[str, float] | None = None) -> None:
        loss = (logs or {}).get("loss")
        if loss is not None and not math.isfinite(loss):
            print(f"Batch {batch}: invalid loss, terminating training")
            self.model.stop_training = True


class TensorBoard(Callback):
    """Writes each epoch's loss and metrics as scalars TensorBoard shows (log_dir)."""

    def __init__(self, log_dir: str = "./logs", histogram_freq: int = 0,
                 batch_size: int = 32, write_graph: bool = True, write_grads: bool = False,
                 write_images: bool = False, embeddings_freq: int = 0,
                 embeddings_layer_names: Any = None, embeddings_metadata: Any = None,
                 embeddings_data: Any = None, update_freq: str = "epoch",
                 profile_batch: int = 2) -> None:
        # TF 1.x's parameters and order. batch_size only sizes histogram runs and
        # profile_batch profiles eager execution only: neither applies to graph mode.
        if (histogram_freq or update_freq != "epoch" or write_grads or write_images
                or embeddings_freq):
            raise ValueError("TensorBoard callback: only epoch scalars are written; leave "
                             "histogram_freq=0, write_grads/write_images False, "
                             "embeddings_freq=0 and update_freq='epoch'.")
        super().__init__()
        self.log_dir, self.write_graph = log_dir, write_graph
        self.writer: FileWriter | None = None

    def on_train_begin(self, logs: dict[str, float] | None = None) -> None:
        graph = self.model.weights[0].graph if self.write_graph and self.model.weights else None
        self.writer = FileWriter(self.log_dir, graph=graph)

    def on_epoch_end(self, epoch: int, logs: dict[str, float] | None = None) -> None:
        if self.writer is None:
            return
        summary = summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag=k, simple_value=float(v))
            for k, v in (logs or {}).items()])
        self.writer.add_summary(summary, epoch)
        self.writer.flush()

    def on_train_end(self, logs: dict[str, float] | None = None) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

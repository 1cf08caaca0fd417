"""tf.keras.callbacks with Model.fit: the order of calls, early stopping, checkpoints,
TensorBoard scalars (TF 1.x keras/callbacks_test.py's subjects)."""
import glob
import os

import numpy as np
import pytest

import tensorweave as tf

pytestmark = pytest.mark.usefixtures("graph")
K = tf.keras
L = tf.keras.layers


def _regression():
    rng = np.random.RandomState(0)
    x = rng.rand(64, 3).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32)).astype(np.float32)
    model = K.Sequential([L.Dense(1, input_shape=(3,))])
    model.compile(K.optimizers.SGD(0.1), "mse")
    return model, x, y


class Recorder(K.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs=None):
        self.calls.append("train_begin")

    def on_epoch_begin(self, epoch, logs=None):
        self.calls.append(f"epoch_begin {epoch}")

    def on_batch_end(self, batch, logs=None):
        self.calls.append(f"batch_end {batch} {sorted(logs)}")

    def on_epoch_end(self, epoch, logs=None):
        self.calls.append(f"epoch_end {epoch} {sorted(logs)}")

    def on_train_end(self, logs=None):
        self.calls.append("train_end")


def test_callbacks_are_called_in_order_with_logs():
    model, x, y = _regression()
    rec = Recorder()
    model.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[rec],
              validation_data=(x, y))
    assert rec.model is model and rec.params["epochs"] == 2
    assert rec.calls == [
        "train_begin", "epoch_begin 0", "batch_end 0 ['loss']", "batch_end 1 ['loss']",
        "epoch_end 0 ['loss', 'val_loss']", "epoch_begin 1", "batch_end 0 ['loss']",
        "batch_end 1 ['loss']", "epoch_end 1 ['loss', 'val_loss']", "train_end"]


def test_callbacks_on_a_dataset():
    model, x, y = _regression()
    rec = Recorder()
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
    model.fit(ds, epochs=1, verbose=0, callbacks=[rec])
    assert rec.calls == ["train_begin", "epoch_begin 0", "batch_end 0 ['loss']",
                         "batch_end 1 ['loss']", "epoch_end 0 ['loss']", "train_end"]


def test_early_stopping_stops_when_the_metric_stalls():
    model, x, y = _regression()
    seen = []
    stalling = K.callbacks.LambdaCallback(
        on_epoch_end=lambda epoch, logs: logs.update(val_loss=1.0) or seen.append(epoch))
    stop = K.callbacks.EarlyStopping(monitor="val_loss", patience=2)
    history = model.fit(x, y, epochs=20, verbose=0, callbacks=[stalling, stop])
    # epoch 0 sets the best; epochs 1 and 2 wait; epoch 3 stops
    assert seen == [0, 1, 2, 3] and len(history.epoch) == 4 and stop.stopped_epoch == 3
    with pytest.raises(ValueError, match="not in the logs"):
        model.fit(x, y, epochs=1, verbose=0, callbacks=[K.callbacks.EarlyStopping()])


def test_model_checkpoint_saves_the_best_weights(tmp_path):
    model, x, y = _regression()
    pattern = str(tmp_path / "w-{epoch:02d}")
    ckpt = K.callbacks.ModelCheckpoint(pattern, monitor="loss", save_best_only=True)
    model.fit(x, y, epochs=3, verbose=0, callbacks=[ckpt])
    saved = [os.path.basename(p)[:-len(".index")]
             for p in glob.glob(str(tmp_path / "w-*.index"))]
    assert set(saved) == {"w-01", "w-02", "w-03"}   # the loss falls every epoch here
    before = model.get_weights()
    model.set_weights([np.zeros_like(w) for w in before])
    model.load_weights(str(tmp_path / "w-03"))
    for a, b in zip(before, model.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_terminate_on_nan():
    model, x, y = _regression()
    y_bad = y.copy()
    y_bad[0] = np.nan
    history = model.fit(x, y_bad, epochs=5, batch_size=64, verbose=0, shuffle=False,
                        callbacks=[K.callbacks.TerminateOnNaN()])
    assert len(history.epoch) == 1


def test_tensorboard_writes_epoch_scalars(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    model, x, y = _regression()
    model.fit(x, y, epochs=2, verbose=0, validation_data=(x, y),
              callbacks=[K.callbacks.TensorBoard(str(tmp_path))])
    acc = EventAccumulator(str(tmp_path))
    acc.Reload()
    assert sorted(acc.Tags()["scalars"]) == ["loss", "val_loss"]
    assert [e.step for e in acc.Scalars("loss")] == [0, 1]
    with pytest.raises(ValueError, match="histogram_freq"):
        K.callbacks.TensorBoard(str(tmp_path), histogram_freq=1)

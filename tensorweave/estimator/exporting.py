"""`Estimator.export_saved_model`: the PREDICT graph plus a checkpoint as a SavedModel.

The SavedModel is written by `tf.saved_model.builder.SavedModelBuilder` into a
temporary directory next to the timestamped export directory, then renamed, so
a reader (TF Serving polls the base directory) never sees a half-written export.
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Mapping
from typing import Any

from tensorweave.client.session import Session
from tensorweave.estimator.export import ServingInputReceiver, TensorServingInputReceiver
from tensorweave.estimator.model_fn import DEFAULT_SERVING_KEY
from tensorweave.framework.graph import Graph
from tensorweave.framework.graph_defaults import GraphKeys, get_collection
from tensorweave.platform import tf_logging as logging
from tensorweave.saved_model.builder import SavedModelBuilder
from tensorweave.saved_model.tag_constants import SERVING
from tensorweave.train import saver as saver_lib
from tensorweave.train.scaffold import Scaffold
from tensorweave.train.training_util import get_or_create_global_step

__all__ = ["export_saved_model", "build_all_signature_defs", "get_timestamped_export_dir"]



def get_timestamped_export_dir(export_dir_base: str) -> bytes:
    """`export_dir_base`/<seconds since the epoch> that does not exist yet.

    Raises:
        RuntimeError: ten tries in a row found the directory taken.
    """
    for _ in range(10):
        path = os.path.join(os.fsencode(export_dir_base), str(int(time.time())).encode())
        if not os.path.exists(path):
            return path
        time.sleep(1)  # the name is the second: wait for the next one (as TF)
    raise RuntimeError(f"Failed to obtain a unique export directory name under "
                       f"{export_dir_base!r} after 10 attempts.")


def build_all_signature_defs(receiver_tensors: Mapping[str, Any], export_outputs: Any,
                             receiver_tensors_alternatives: Any = None) -> dict[str, Any]:
    """The SignatureDefs of every export output (and receiver alternative).

    Outputs that do not suit the receiver (a classify signature fed by a float
    placeholder) are left out with a log line, as TF does.

    Raises:
        ValueError: no usable signature, or no default ("serving_default") one.
    """
    if not export_outputs:
        raise ValueError("export_outputs must be defined by the model_fn's PREDICT "
                         "EstimatorSpec (the default is a PredictOutput of the predictions).")
    receivers = {None: receiver_tensors}
    for name, tensors in (receiver_tensors_alternatives or {}).items():
        receivers[name] = tensors
    signatures: dict[str, Any] = {}
    for receiver_name, tensors in receivers.items():
        for key, output in export_outputs.items():
            sig_key = key if receiver_name is None else f"{receiver_name}:{key}"
            try:
                signatures[sig_key] = output.as_signature_def(tensors)
            except ValueError as e:
                logging.warning("Signature %r is left out of the export: %s", sig_key, e)
    if not signatures:
        raise ValueError("Export includes no signatures: every export output was "
                         "rejected (see the warnings above).")
    if DEFAULT_SERVING_KEY not in signatures:
        raise ValueError(f"Export includes no default signature ({DEFAULT_SERVING_KEY!r}); "
                         f"it has {sorted(signatures)}.")
    return signatures


def export_saved_model(estimator: Any, export_dir_base: str,
                       serving_input_receiver_fn: Callable[[], Any],
                       assets_extra: Mapping[str, str] | None, as_text: bool,
                       checkpoint_path: str | None, strip_default_attrs: bool) -> bytes:
    """See `Estimator.export_saved_model`."""
    if serving_input_receiver_fn is None:
        raise ValueError("An input_receiver_fn must be defined.")
    checkpoint_path = checkpoint_path or estimator._restorable_checkpoint()
    if not checkpoint_path:
        raise ValueError(f"Couldn't find trained model at {estimator.model_dir}; train the "
                         "Estimator (or give checkpoint_path) before exporting.")
    with Graph().as_default() as graph:
        get_or_create_global_step(graph)
        receiver = serving_input_receiver_fn()
        if not isinstance(receiver, (ServingInputReceiver, TensorServingInputReceiver)):
            raise TypeError(f"serving_input_receiver_fn must return a ServingInputReceiver, "
                            f"got {receiver!r}.")
        spec = estimator._build_predict_spec(receiver.features)
        signatures = build_all_signature_defs(receiver.receiver_tensors, spec.export_outputs,
                                              receiver.receiver_tensors_alternatives)
        export_dir = get_timestamped_export_dir(export_dir_base)
        temp_dir = os.path.join(os.path.dirname(export_dir),
                                b"temp-" + os.path.basename(export_dir))
        saver = spec.scaffold.saver or saver_lib.Saver(sharded=True)
        local_init_op = spec.scaffold.local_init_op or Scaffold.default_local_init_op()
        with Session(graph=graph) as session:
            saver.restore(session, checkpoint_path)
            builder = SavedModelBuilder(temp_dir)
            builder.add_meta_graph_and_variables(
                session, [SERVING], signature_def_map=signatures,
                assets_collection=get_collection(GraphKeys.ASSET_FILEPATHS),
                main_op=local_init_op, strip_default_attrs=strip_default_attrs)
            builder.save(as_text)
    _copy_assets_extra(temp_dir, assets_extra)
    os.rename(temp_dir, export_dir)
    logging.info("SavedModel written to: %s", os.fsdecode(export_dir))
    return export_dir


def _copy_assets_extra(export_dir: bytes, assets_extra: Mapping[str, str] | None) -> None:
    for dest, source in (assets_extra or {}).items():
        if os.path.isabs(dest):
            raise ValueError(f"assets_extra destination {dest!r} must be a relative path "
                             "(it goes under assets.extra/).")
        target = os.path.join(os.fsdecode(export_dir), "assets.extra", dest)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(source, target)

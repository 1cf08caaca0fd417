"""`tf.saved_model.builder.SavedModelBuilder` and `tf.saved_model.simple_save`.

A SavedModel directory, in the format real TensorFlow reads and writes:

    export_dir/saved_model.pb          SavedModel proto: one MetaGraphDef per tag set
    export_dir/variables/variables.*   the variables, TF's tensor-bundle checkpoint
    export_dir/assets/                 asset files (optional)

Each MetaGraphDef's GraphDef is made importable by real TF: TF's attrs are added,
our own ops are written as TF's (`framework/tf_lowering.py`: the Saver's
checkpoint ops as SaveV2/RestoreV2/MergeV2Checkpoints, crossed and vocabulary
columns as SparseCross and hash tables, whose initializers the main op runs),
nodes still on an op TF lacks are left out with whatever depends on them (an
error names them if a signature or the init op needs one), and its SaverDef names
TF-standard SaveV2/RestoreV2 nodes, so TF's loader restores `variables/variables`
itself.

Example:
    >>> b = tf.saved_model.builder.SavedModelBuilder("/tmp/export/1")
    >>> b.add_meta_graph_and_variables(sess, [tf.saved_model.tag_constants.SERVING],
    ...     signature_def_map={"serving_default": sig})
    >>> b.save()
    b'/tmp/export/1/saved_model.pb'
"""
from __future__ import annotations

import os
import shutil
from typing import Any

from tensorweave.base.files import atomic_write
from tensorweave.framework import meta_graph as _mg
from tensorweave.framework.graph import GraphKeys, get_default_graph
from tensorweave.framework.proto import saved_model_pb2
from tensorweave.framework.tensor import Operation, Tensor
from tensorweave.framework.tf_lowering import check_tensorflow_ops
from tensorweave.framework.tf_lowering_lookup import collect_table_initializers
from tensorweave.saved_model import constants, signature_constants, signature_def_utils
from tensorweave.saved_model import tag_constants
from tensorweave.train.saver import Saver


class SavedModelBuilder:
    """Builds a SavedModel: variables once, then one meta graph per tag set.

    Args:
        export_dir: the directory to create (must not exist, or be empty).

    Raises:
        AssertionError: if `export_dir` exists and is not empty (as TF 1.x).

    Example:
        >>> b = SavedModelBuilder("/tmp/export/1")
    """

    def __init__(self, export_dir: Any) -> None:
        self._export_dir = os.fsdecode(export_dir)
        if os.path.exists(self._export_dir) and os.listdir(self._export_dir):
            raise AssertionError(f"Export directory already exists, and isn't empty. Please "
                                 f"choose a different export directory, or delete all the "
                                 f"contents of the specified directory: {self._export_dir}")
        os.makedirs(self._export_dir, exist_ok=True)
        self._saved_model = saved_model_pb2.SavedModel(
            saved_model_schema_version=constants.SAVED_MODEL_SCHEMA_VERSION)
        self._has_saved_variables = False

    # ---- public API ----------------------------------------------------------------
    def add_meta_graph_and_variables(self, sess: Any, tags: Any,
                                     signature_def_map: dict[str, Any] | None = None,
                                     assets_collection: Any = None, legacy_init_op: Any = None,
                                     clear_devices: bool = False, main_op: Any = None,
                                     strip_default_attrs: bool = False,
                                     saver: Saver | None = None) -> None:
        """Saves the session's variables and the first meta graph (tagged `tags`).

        Args:
            sess: the session holding the variable values (its graph is exported).
            tags: the tag set (e.g. ["serve"]) a loader selects this graph by.
            signature_def_map: signature key -> SignatureDef.
            assets_collection: asset path tensors whose files are copied to assets/.
            legacy_init_op / main_op: an op the loader runs after restoring.
            clear_devices: drop device placements (loaders place ops themselves).
            saver: a Saver with checkpoint_format="tensorflow" to use; default one
                over every saveable variable.

        Raises:
            AssertionError: if called twice (then use add_meta_graph).
            ValueError: a bad signature, or a signature/op needing an op TF lacks.
        """
        if self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has already "
                                 "been saved. Please invoke `add_meta_graph()` instead.")
        graph = sess.graph
        _init_op(main_op, legacy_init_op)   # checked before anything is written
        with graph.as_default():
            saver = self._saver(saver)
            self._check_signatures(signature_def_map, graph)
            var_dir = os.path.join(self._export_dir, constants.VARIABLES_DIRECTORY)
            os.makedirs(var_dir, exist_ok=True)
            if saver is not None:
                saver.save(sess, os.path.join(var_dir, constants.VARIABLES_FILENAME),
                           write_meta_graph=False, write_state=False)
            self._add(graph, tags, signature_def_map, assets_collection, legacy_init_op,
                      main_op, clear_devices, strip_default_attrs, saver)
        self._has_saved_variables = True

    def add_meta_graph(self, tags: Any, signature_def_map: dict[str, Any] | None = None,
                       assets_collection: Any = None, legacy_init_op: Any = None,
                       clear_devices: bool = False, main_op: Any = None,
                       strip_default_attrs: bool = False, saver: Saver | None = None
                       ) -> None:
        """Adds a meta graph of the default graph, sharing the saved variables.

        Raises:
            AssertionError: if add_meta_graph_and_variables was not called first.
        """
        if not self._has_saved_variables:
            raise AssertionError("Graph state including variables and assets has not been "
                                 "saved yet. Please invoke `add_meta_graph_and_variables()` "
                                 "first.")
        graph = get_default_graph()
        self._check_signatures(signature_def_map, graph)
        self._add(graph, tags, signature_def_map, assets_collection, legacy_init_op, main_op,
                  clear_devices, strip_default_attrs, self._saver(saver))

    def save(self, as_text: bool = False) -> bytes:
        """Writes saved_model.pb (or .pbtxt); returns its path (bytes, as TF 1.x)."""
        # Atomic (temporary name, fsync, rename): a failed write leaves no partial file.
        if as_text:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PBTXT)
            from google.protobuf import text_format
            atomic_write(path, text_format.MessageToString(self._saved_model))
        else:
            path = os.path.join(self._export_dir, constants.SAVED_MODEL_FILENAME_PB)
            atomic_write(path, self._saved_model.SerializeToString())
        return os.fsencode(path)

    # ---- helpers -------------------------------------------------------------------
    @staticmethod
    def _saver(saver: Saver | None) -> Saver | None:
        if saver is not None:
            if getattr(saver, "_format", "tensorflow") != "tensorflow":
                raise ValueError("A SavedModel's variables are in TensorFlow's checkpoint "
                                 "format: pass tf.train.Saver(checkpoint_format='tensorflow') "
                                 "as saver=, or none (one is made).")
            return saver
        g = get_default_graph()
        if not (g.get_collection(GraphKeys.GLOBAL_VARIABLES) or
                g.get_collection(GraphKeys.SAVEABLE_OBJECTS)):
            return None
        return Saver(allow_empty=True, checkpoint_format="tensorflow", max_to_keep=5)

    @staticmethod
    def _check_signatures(signature_def_map: dict[str, Any] | None, graph: Any) -> None:
        for key, sig in (signature_def_map or {}).items():
            if not hasattr(sig, "inputs") or not hasattr(sig, "method_name"):
                raise ValueError(f"signature_def_map[{key!r}] must be a SignatureDef; got "
                                 f"{type(sig).__name__}")
            for info in list(sig.inputs.values()) + list(sig.outputs.values()):
                if info.WhichOneof("encoding") == "name":
                    graph.as_graph_element(info.name)   # raises naming a missing tensor

    def _add(self, graph: Any, tags: Any, signature_def_map: dict[str, Any] | None,
             assets_collection: Any, legacy_init_op: Any, main_op: Any, clear_devices: bool,
             strip_default_attrs: bool, saver: Saver | None) -> None:
        init = _init_op(main_op, legacy_init_op)
        keep = _signature_nodes(signature_def_map)
        if init is not None:
            keep.add(init.name.split(":")[0])
        saver_def = saver.as_saver_def() if saver is not None else None
        if saver_def is not None:
            keep |= {saver_def.filename_tensor_name.split(":")[0],
                     saver_def.save_tensor_name.split(":")[0], saver_def.restore_op_name}
        mg = _mg.create_meta_graph_def(graph=graph, saver_def=saver_def,
                                       strip_default_attrs=strip_default_attrs,
                                       clear_devices=clear_devices, tf_compatible=True,
                                       keep_nodes=keep)
        mg.meta_info_def.tags.extend([tags] if isinstance(tags, str) else list(tags))
        for key, sig in (signature_def_map or {}).items():
            mg.signature_def[key].CopyFrom(sig)
        key = constants.MAIN_OP_KEY if main_op is not None else constants.LEGACY_INIT_OP_KEY
        init_name = _run_lowered_table_inits(mg, init.name if init is not None else None)
        if init_name is not None:
            if init is None:
                key = constants.MAIN_OP_KEY
            mg.collection_def[key].node_list.value[:] = [init_name]
        check_tensorflow_ops(mg.graph_def, f"The SavedModel meta graph tagged {list(tags)}"
                             if not isinstance(tags, str) else
                             f"The SavedModel meta graph tagged {tags!r}")
        self._add_assets(mg, assets_collection)
        self._saved_model.meta_graphs.add().CopyFrom(mg)

    def _add_assets(self, mg: Any, assets_collection: Any) -> None:
        if not assets_collection:
            return
        assets_dir = os.path.join(self._export_dir, constants.ASSETS_DIRECTORY)
        for t in assets_collection:
            path = _const_string(t)
            name = os.path.basename(path)
            os.makedirs(assets_dir, exist_ok=True)
            dst = os.path.join(assets_dir, name)
            if not os.path.exists(dst):
                shutil.copyfile(path, dst)
            a = mg.asset_file_def.add(filename=name)
            a.tensor_info.name = t.name
            a.tensor_info.dtype = t.dtype.base_dtype.as_datatype_enum


def _run_lowered_table_inits(mg: Any, init_name: str | None) -> str | None:
    """Makes the loader initialize the hash tables our lookups were lowered to.

    TF's loader runs the main op (or legacy init op) after restoring; TF's own
    exports put tables_initializer in it. The lowered tables' initializers become
    control inputs of the given init op, or of a new NoOp that becomes the main
    op; they are also listed in the "table_initializer" collection, as TF lists
    its own. Returns the init op's name (None: no init op and no tables).
    """
    inits = collect_table_initializers(mg)
    if not inits:
        return init_name
    node_name = init_name.split(":")[0] if init_name else None
    node = next((n for n in mg.graph_def.node if n.name == node_name), None)
    if node is None:
        taken = {n.name for n in mg.graph_def.node}
        name = "init_lowered_tables"
        while name in taken:
            name += "_1"
        node = mg.graph_def.node.add(name=name, op="NoOp")
        init_name = name
    node.input.extend("^" + i for i in inits if "^" + i not in node.input)
    return init_name


def _init_op(main_op: Any, legacy_init_op: Any) -> Any:
    if main_op is not None and legacy_init_op is not None:
        raise ValueError("Specify only one of main_op and legacy_init_op.")
    init = main_op if main_op is not None else legacy_init_op
    if init is not None and not isinstance(init, (Operation, Tensor)):
        raise TypeError(f"main_op/legacy_init_op must be an Operation; got {init!r}")
    return init


def _const_string(t: Any) -> str:
    if not isinstance(t, Tensor) or t.op.type != "Const":
        raise ValueError(f"Asset {t!r} must be a string constant tensor holding a file path")
    v = t.op.get_attr("value")
    v = v.item() if hasattr(v, "item") else v
    path = v.decode() if isinstance(v, bytes) else str(v)
    if not os.path.isfile(path):
        raise ValueError(f"Asset file {path} (tensor {t.name}) does not exist")
    return path


def _signature_nodes(signature_def_map: dict[str, Any] | None) -> set[str]:
    out = set()
    for sig in (signature_def_map or {}).values():
        for info in list(sig.inputs.values()) + list(sig.outputs.values()):
            names = [info.name] if info.WhichOneof("encoding") == "name" else \
                [info.coo_sparse.values_tensor_name, info.coo_sparse.indices_tensor_name,
                 info.coo_sparse.dense_shape_tensor_name]
            out |= {n.split(":")[0] for n in names if n}
    return out


def simple_save(session: Any, export_dir: Any, inputs: dict[str, Any],
                outputs: dict[str, Any], legacy_init_op: Any = None) -> None:
    """Saves a serving SavedModel: one "serve" graph, a default Predict signature.

    Example:
        >>> tf.saved_model.simple_save(sess, "/tmp/export/1", {"x": x}, {"probs": probs})
    """
    sig = signature_def_utils.predict_signature_def(inputs, outputs)
    b = SavedModelBuilder(export_dir)
    b.add_meta_graph_and_variables(
        session, [tag_constants.SERVING],
        signature_def_map={signature_constants.DEFAULT_SERVING_SIGNATURE_DEF_KEY: sig},
        assets_collection=session.graph.get_collection(GraphKeys.ASSET_FILEPATHS),
        main_op=legacy_init_op, clear_devices=True)
    b.save()


__all__ = ["SavedModelBuilder", "simple_save"]

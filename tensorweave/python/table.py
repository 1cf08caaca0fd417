"""Which tensorweave modules serve each of TF 1.15's `tensorflow.python.*` modules.

One row per TF module path (relative to `tensorflow.python`): the tensorweave
modules searched, in order, for each public name TF's module has there (the
names themselves, read from TF 1.15's sources, are in `tf_names.json`). A name
is looked up by the same spelling unless `RENAMES` gives ours.

Public namespaces (`tensorweave.train`, `tensorweave.nn`) come first: TF's
public API is the contract, and TF exports these modules' names there.

Example:
    >>> MODULES["training.session_run_hook"]
    ('tensorweave.train', 'tensorweave.train.session_run_hook')
"""
from __future__ import annotations

_R = "tensorweave"
_TRAIN = ("tensorweave.train", _R)

MODULES: dict[str, tuple[str, ...]] = {
    # --- framework
    "framework.ops": (_R, "tensorweave.framework.graph", "tensorweave.framework.tensor",
                      "tensorweave.framework.convert", "tensorweave.framework.graph_lookup",
                      "tensorweave.framework.meta_graph", "tensorweave.framework.indexed_slices"),
    "framework.dtypes": ("tensorweave.framework.dtypes",),
    "framework.tensor_shape": ("tensorweave.framework.tensor_shape",),
    "framework.constant_op": (_R,),
    "framework.sparse_tensor": (_R, "tensorweave.framework.sparse_tensor"),
    "framework.errors": ("tensorweave.framework.errors",),
    "framework.errors_impl": ("tensorweave.framework.errors",),
    "framework.graph_io": ("tensorweave.train", "tensorweave.framework.graph_io"),
    "framework.meta_graph": ("tensorweave.framework.meta_graph", "tensorweave.train",
                             "tensorweave.framework.meta_graph_scoped",
                             "tensorweave.framework.op_list"),
    "framework.importer": (_R, "tensorweave.framework.graph_io"),
    "framework.random_seed": (_R, "tensorweave.ops.random.random_ops"),
    "framework.device": ("tensorweave.framework.device",),
    "framework.versions": ("tensorweave.framework.versions",),
    "framework.indexed_slices": (_R, "tensorweave.framework.indexed_slices"),
    "framework.tensor_util": (_R, "tensorweave.framework.convert"),
    "framework.graph_util": (_R,),
    "framework.function": (_R,),
    # --- ops
    "ops.array_ops": (_R, "tensorweave.ops.array"),
    "ops.gen_array_ops": (_R,),
    "ops.math_ops": (_R, "tensorweave.math"),
    "ops.gen_math_ops": (_R, "tensorweave.math"),
    "ops.state_ops": (_R, "tensorweave.ops.state.scatter_ops",
                      "tensorweave.ops.state.scatter_nd_ops"),
    "ops.gen_state_ops": (_R, "tensorweave.ops.state.scatter_ops",
                          "tensorweave.ops.state.scatter_nd_ops"),
    "ops.variables": (_R, "tensorweave.state.variables",
                      "tensorweave.state.partitioned_variables"),
    "ops.variable_scope": (_R, "tensorweave.state.variable_scope"),
    "ops.resource_variable_ops": (_R,),
    "ops.init_ops": ("tensorweave.state.init_ops", _R),
    "ops.partitioned_variables": (_R, "tensorweave.state.partitioned_variables"),
    "ops.template": (_R,),
    "ops.nn": ("tensorweave.nn",),
    "ops.nn_ops": ("tensorweave.nn",),
    "ops.nn_impl": ("tensorweave.nn",),
    "ops.gen_nn_ops": ("tensorweave.nn",),
    "ops.embedding_ops": ("tensorweave.nn", _R),
    "ops.clip_ops": (_R,),
    "ops.control_flow_ops": (_R,),
    "ops.functional_ops": (_R,),
    "ops.check_ops": (_R, "tensorweave.debugging"),
    "ops.logging_ops": (_R, "tensorweave.summary.legacy"),
    "ops.numerics": (_R,),
    "ops.data_flow_ops": (_R, "tensorweave.data_flow.data_flow_ops"),
    "ops.gen_data_flow_ops": (_R,),
    "ops.io_ops": (_R, "tensorweave.ops.io.file_ops"),
    "ops.gen_io_ops": (_R,),
    "ops.parsing_ops": (_R, "tensorweave.io"),
    "ops.random_ops": (_R, "tensorweave.random"),
    "ops.gen_random_ops": (_R,),
    "ops.sparse_ops": (_R, "tensorweave.sparse"),
    "ops.string_ops": (_R, "tensorweave.strings"),
    "ops.lookup_ops": ("tensorweave.contrib.lookup", "tensorweave.contrib.lookup_experimental",
                       "tensorweave.lookup.tables", "tensorweave.ops.lookup.table_ops",
                       "tensorweave.ops.lookup.mutable_table_ops", _R),
    "ops.linalg_ops": (_R, "tensorweave.linalg"),
    "ops.special_math_ops": (_R, "tensorweave.math", "tensorweave.linalg"),
    "ops.confusion_matrix": (_R, "tensorweave.math"),
    "ops.sort_ops": (_R,),
    "ops.script_ops": (_R,),
    "ops.gradients": (_R,),
    "ops.gradients_impl": (_R,),
    "ops.custom_gradient": (_R,),
    "ops.image_ops": ("tensorweave.image",),
    "ops.metrics": ("tensorweave.metrics",),
    "ops.losses.losses": ("tensorweave.losses",),
    "ops.losses.losses_impl": ("tensorweave.losses",),
    "ops.losses.util": ("tensorweave.losses",),
    "ops.rnn": ("tensorweave.nn", "tensorweave.rnn.rnn_ops",
                "tensorweave.rnn.static_rnn"),
    "ops.tensor_array_ops": (_R, "tensorweave.data_flow.tensor_array"),
    "ops.rnn_cell": ("tensorweave.rnn.rnn_cell",),
    "ops.rnn_cell_impl": ("tensorweave.rnn.rnn_cell",),
    "ops.summary_op_util": ("tensorweave.summary.summary",),
    # --- training
    "training.training": _TRAIN,
    "training.slot_creator": ("tensorweave.train.slot_creator",),
    "training.session_run_hook": ("tensorweave.train", "tensorweave.train.session_run_hook"),
    "training.basic_session_run_hooks": ("tensorweave.train",
                                         "tensorweave.train.basic_session_run_hooks"),
    "training.training_util": ("tensorweave.train", "tensorweave.train.training_util"),
    "training.moving_averages": ("tensorweave.train", "tensorweave.train.moving_averages"),
    "training.optimizer": ("tensorweave.train", "tensorweave.train.optimizer"),
    "training.saver": ("tensorweave.train", "tensorweave.train.saver"),
    "training.checkpoint_management": ("tensorweave.train",
                                       "tensorweave.train.checkpoint_management"),
    "training.checkpoint_utils": ("tensorweave.train", "tensorweave.train.checkpoint_utils"),
    "training.server_lib": _TRAIN,
    "training.monitored_session": ("tensorweave.train", "tensorweave.train.monitored_session"),
    "training.session_manager": ("tensorweave.train", "tensorweave.train.session_manager"),
    "training.supervisor": ("tensorweave.train", "tensorweave.train.supervisor"),
    "training.input": ("tensorweave.train", "tensorweave.train.input"),
    "training.queue_runner": ("tensorweave.train",),
    "training.queue_runner_impl": ("tensorweave.train", "tensorweave.train.queue_runner"),
    "training.coordinator": ("tensorweave.train", "tensorweave.train.coordinator"),
    "training.device_setter": ("tensorweave.train", "tensorweave.train.device_setter"),
    "training.sync_replicas_optimizer": ("tensorweave.train",),
    "training.learning_rate_decay": ("tensorweave.train",),
    "training.summary_io": ("tensorweave.train", "tensorweave.summary"),
    "training.adam": _TRAIN,
    "training.adagrad": _TRAIN,
    "training.adadelta": _TRAIN,
    "training.gradient_descent": _TRAIN,
    "training.momentum": _TRAIN,
    "training.rmsprop": _TRAIN,
    "training.ftrl": _TRAIN,
    "training.proximal_adagrad": _TRAIN,
    "training.proximal_gradient_descent": _TRAIN,
    # --- client, platform, lib.io, util
    "client.session": (_R, "tensorweave.client.session"),
    "client.timeline": ("tensorweave.client.timeline",),
    "platform.tf_logging": ("tensorweave.platform.tf_logging",),
    "platform.gfile": ("tensorweave.platform.gfile",),
    "platform.app": ("tensorweave.app",),
    "platform.flags": ("tensorweave.app.flags",),
    "platform.test": ("tensorweave.testing.tf_test",),
    "framework.test_util": ("tensorweave.testing.tf_test",),
    "lib.io.file_io": ("tensorweave.platform.file_io", "tensorweave.platform.gfile"),
    "lib.io.tf_record": ("tensorweave.python_io",),
    "util.compat": ("tensorweave.compat",),
    # --- summary
    "summary.summary": ("tensorweave.summary",),
    "summary.summary_iterator": ("tensorweave.summary", "tensorweave.train"),
    "summary.writer.writer": ("tensorweave.summary.writer",),
    "summary.writer.writer_cache": ("tensorweave.summary.writer",),
    # --- data, feature columns, layers, keras, saved_model
    "data.ops.dataset_ops": ("tensorweave.data",),
    "data.ops.iterator_ops": ("tensorweave.data",),
    "data.ops.readers": ("tensorweave.data",),
    "feature_column.feature_column": ("tensorweave.feature_column",),
    "feature_column.feature_column_v2": ("tensorweave.feature_column",),
    "layers.layers": ("tensorweave.layers",),
    "layers.base": ("tensorweave.layers",),
    "layers.core": ("tensorweave.layers",),
    "layers.convolutional": ("tensorweave.layers",),
    "layers.pooling": ("tensorweave.layers",),
    "layers.normalization": ("tensorweave.layers",),
    "keras": ("tensorweave.keras",),
    "keras.backend": ("tensorweave.keras.backend",),
    "keras.layers": ("tensorweave.keras.layers",),
    "keras.models": ("tensorweave.keras.models", "tensorweave.keras", "tensorweave.keras.layers"),
    "keras.optimizers": ("tensorweave.keras.optimizers",),
    "keras.losses": ("tensorweave.keras.losses",),
    "keras.metrics": ("tensorweave.keras.metrics", "tensorweave.keras.layers"),
    "keras.callbacks": ("tensorweave.keras.callbacks", "tensorweave.keras.utils"),
    "keras.initializers": ("tensorweave.keras.initializers",),
    "keras.regularizers": ("tensorweave.keras.regularizers",),
    "keras.activations": ("tensorweave.keras.activations",),
    "keras.utils": ("tensorweave.keras.utils",),
    "keras.utils.data_utils": ("tensorweave.keras.utils", "tensorweave.keras.utils_data"),
    "keras.utils.generic_utils": ("tensorweave.keras.utils",),
    "keras.engine": ("tensorweave.keras",),
    "keras.engine.base_layer": ("tensorweave.keras.layers", "tensorweave.keras.engine.base_layer"),
    "keras.engine.input_layer": ("tensorweave.keras", "tensorweave.keras.layers"),
    "keras.engine.sequential": ("tensorweave.keras", "tensorweave.keras.models"),
    "keras.engine.training": ("tensorweave.keras", "tensorweave.keras.models"),
    "keras.engine.network": ("tensorweave.keras.engine.network",),
    "keras.utils.np_utils": ("tensorweave.keras.utils",),
    "saved_model": ("tensorweave.saved_model",),
    "saved_model.builder": ("tensorweave.saved_model",),
    "saved_model.builder_impl": ("tensorweave.saved_model",),
    "saved_model.loader": ("tensorweave.saved_model",),
    "saved_model.loader_impl": ("tensorweave.saved_model",),
    "saved_model.constants": ("tensorweave.saved_model",),
    "saved_model.signature_constants": ("tensorweave.saved_model.signature_constants",
                                        "tensorweave.saved_model"),
    "saved_model.tag_constants": ("tensorweave.saved_model.tag_constants",
                                  "tensorweave.saved_model"),
    "saved_model.signature_def_utils": ("tensorweave.saved_model.signature_def_utils",
                                        "tensorweave.saved_model"),
    "saved_model.utils": ("tensorweave.saved_model.utils", "tensorweave.saved_model"),
    "saved_model.simple_save": ("tensorweave.saved_model",),
}

# TF modules whose names live outside TF's repository (TF 1.15's estimator is the
# tensorflow_estimator package): every public name of our namespaces is offered.
OURS_ONLY: dict[str, tuple[str, ...]] = {
    "estimator": ("tensorweave.estimator",),
    "estimator.estimator": ("tensorweave.estimator",),
    "estimator.run_config": ("tensorweave.estimator",),
    "estimator.model_fn": ("tensorweave.estimator",),
    "estimator.training": ("tensorweave.estimator",),
    "estimator.export.export": ("tensorweave.estimator.export",),
    "estimator.inputs.numpy_io": ("tensorweave.estimator.inputs",),
    "estimator.export.export_output": ("tensorweave.estimator.export_output",),
    "estimator.exporter": ("tensorweave.estimator.exporter",),
    "estimator.canned.dnn": ("tensorweave.estimator.canned.dnn",),
    "estimator.canned.linear": ("tensorweave.estimator.canned.linear",),
    "estimator.canned.dnn_linear_combined": ("tensorweave.estimator.canned.dnn_linear_combined",),
    "estimator.canned.head": ("tensorweave.estimator.canned.head",),
    "estimator.canned.metric_keys": ("tensorweave.estimator.canned.metric_keys",),
    "estimator.canned.optimizers": ("tensorweave.estimator.canned.optimizers",),
    # DeepRec's modules (not in TF 1.15)
    "training.adam_async": ("tensorweave.train.adam_async",),
    "training.adagrad_decay": ("tensorweave.train.adagrad_decay",),
    "ops.work_queue": ("tensorweave.train.work_queue",),
}

# TF names whose tensorweave spelling differs: "tf module.name" -> "our module:attr".
RENAMES: dict[str, str] = {
    "ops.variables.VariableV1": "tensorweave:Variable",
    "ops.variables.RefVariable": "tensorweave:Variable",
    "ops.variable_scope.variable": "tensorweave:Variable",
    "ops.resource_variable_ops.ResourceVariable":
        "tensorweave.state.resource_variables:ResourceVariable",
    "framework.ops.EagerTensor": "tensorweave:Tensor",
    # TF 1.x's tf.lookup.StaticHashTable / StaticVocabularyTable are these V1 classes.
    "ops.lookup_ops.StaticHashTableV1": "tensorweave.contrib.lookup:StaticHashTable",
    "ops.lookup_ops.StaticVocabularyTableV1": "tensorweave.contrib.lookup:StaticVocabularyTable",
    "ops.lookup_ops.InitializableLookupTableBaseV1":
        "tensorweave.lookup.tables:InitializableLookupTableBase",
    "training.training.Server": "tensorweave.train:Server",
    "lib.io.tf_record.TFRecordWriter": "tensorweave.python_io:TFRecordWriter",
    "framework.test_util.TensorFlowTestCase": "tensorweave.testing.tf_test:TestCase",
    "framework.tensor_util.MakeNdarray": "tensorweave.framework.graph_protos:tensor_value_of",
    "keras.engine.training.Model": "tensorweave.keras:Model",
    "keras.engine.sequential.Sequential": "tensorweave.keras:Sequential",
}

# TF's file_io functions are its gfile functions under other spellings (gfile.Exists is
# file_io.file_exists); the *_v2 forms take the same arguments in the same places.
for _tf, _ours in {"file_exists": "Exists", "delete_file": "Remove", "create_dir": "MkDir",
                   "recursive_create_dir": "MakeDirs", "delete_recursively": "DeleteRecursively",
                   "is_directory": "IsDirectory", "list_directory": "ListDirectory",
                   "get_matching_files": "Glob", "copy": "Copy", "rename": "Rename",
                   "stat": "Stat"}.items():
    RENAMES[f"lib.io.file_io.{_tf}"] = f"tensorweave.platform.gfile:{_ours}"
    RENAMES[f"lib.io.file_io.{_tf}_v2"] = f"tensorweave.platform.gfile:{_ours}"
RENAMES["lib.io.file_io.FileIO"] = "tensorweave.platform.gfile:GFile"
# Raw op wrappers (gen_*_ops) whose op is one of our public functions under its TF
# name: the same required arguments in the same places, the same result.
for _tf, _ours in {
        "gen_math_ops.add_v2": "add", "gen_math_ops.mat_mul": "matmul",
        "gen_math_ops.mul": "multiply", "gen_math_ops.sub": "subtract",
        "gen_math_ops.neg": "negative", "gen_math_ops.inv": "reciprocal",
        "gen_math_ops.floor_div": "floordiv", "gen_math_ops.floor_mod": "floormod",
        "gen_math_ops.select": "where", "gen_math_ops.arg_max": "argmax",
        "gen_math_ops.arg_min": "argmin", "gen_math_ops.mean": "reduce_mean",
        "gen_math_ops.prod": "reduce_prod", "gen_array_ops.concat_v2": "concat",
        "gen_array_ops.pack": "stack", "gen_array_ops.unpack": "unstack",
        "gen_array_ops.split_v": "split", "gen_array_ops.list_diff": "setdiff1d",
        "gen_array_ops.mirror_pad": "pad"}.items():
    RENAMES[f"ops.{_tf}"] = f"tensorweave:{_ours}"
    if _tf.startswith("gen_math_ops."):  # math_ops star-imports gen_math_ops
        RENAMES[f"ops.math_ops.{_tf.split('.')[1]}"] = f"tensorweave:{_ours}"
    else:
        RENAMES[f"ops.array_ops.{_tf.split('.')[1]}"] = f"tensorweave:{_ours}"
RENAMES["ops.gen_nn_ops.top_kv2"] = "tensorweave.nn:top_k"
RENAMES["ops.gen_nn_ops.in_top_kv2"] = "tensorweave.nn:in_top_k"
_GEN_SAME = {"ops.gen_math_ops.mean", "ops.gen_math_ops.prod", "ops.gen_math_ops.cast",
             "ops.math_ops.mean", "ops.math_ops.prod", "ops.gen_array_ops.split_v",
             "ops.array_ops.split_v", "ops.gen_array_ops.mirror_pad",
             "ops.array_ops.mirror_pad", "ops.gen_nn_ops.max_pool", "ops.nn_ops.max_pool",
             "ops.gen_math_ops.arg_max", "ops.gen_math_ops.arg_min", "ops.math_ops.arg_max",
             "ops.math_ops.arg_min"}

_FILE_IO_V2 = {f"lib.io.file_io.{n}_v2" for n in (
    "file_exists", "delete_file", "create_dir", "recursive_create_dir", "delete_recursively",
    "is_directory", "list_directory", "get_matching_files", "copy", "rename", "stat")}

# Functions whose required parameters are named differently from TF's but mean the
# same in the same positions (a positional call is the same call). Any other name
# mismatch makes the TF name "not built": `gen_array_ops.split(axis, value, ...)`
# is not our `split(value, num_or_size_splits, axis)`.
SAME_POSITIONS: frozenset[str] = frozenset({
    "training.checkpoint_management.checkpoint_exists",
    "training.training.checkpoint_exists",
    "ops.state_ops.is_variable_initialized",
    "ops.gen_state_ops.is_variable_initialized",
    "ops.string_ops.string_to_number",
    "ops.parsing_ops.decode_raw",
    "ops.image_ops.random_crop",
    "ops.gen_math_ops.conj",
    "ops.gen_array_ops.ones_like",
    "ops.gen_array_ops.zeros_like",
    "ops.gen_array_ops.pad",
    "ops.gen_array_ops.transpose",
    "ops.gen_array_ops.strided_slice",
    "framework.tensor_util.MakeNdarray",
} | _FILE_IO_V2 | _GEN_SAME)

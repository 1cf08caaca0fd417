"""tensorweave: TensorFlow 1.x graphs, sessions and distributed training in Python.

Example:
    >>> import tensorweave as tf
    >>> x = tf.placeholder(tf.float32, [None, 2])
    >>> with tf.Session() as sess:
    ...     sess.run(x * 2, {x: [[1, 2]]})
"""
# ruff: noqa: F401  (this module only re-exports)

# The cyclic collector is paused while the ~600 modules load: their objects are long-lived,
# and the full collections it would run midway cost about a fifth of the import (every
# task process pays it at start). It is restored as it was, whether the import succeeds.
import gc as _gc  # noqa: E402

_GC_WAS_ON = _gc.isenabled()
_gc.disable()
try:
    # --- framework (owner: core) ---
    from tensorweave.framework import errors as errors
    from tensorweave.framework.device import DeviceSpec as DeviceSpec
    from tensorweave.framework.dtypes import (
        DType as DType, as_dtype as as_dtype, bool as bool, complex64 as complex64,
        complex128 as complex128, double as double, float16 as float16, float32 as float32,
        float64 as float64, half as half, int8 as int8, int16 as int16, int32 as int32,
        int64 as int64, resource as resource, string as string, uint8 as uint8, uint16 as uint16,
        uint32 as uint32, uint64 as uint64, variant as variant)
    from tensorweave.framework.convert import (
        constant as constant, convert_to_tensor as convert_to_tensor,
        register_tensor_conversion_function as register_tensor_conversion_function)
    from tensorweave.framework.graph import (
        Graph as Graph, GraphKeys as GraphKeys, add_to_collection as add_to_collection,
        add_to_collections as add_to_collections, colocate_with as colocate_with,
        container as container, control_dependencies as control_dependencies, device as device,
        get_collection as get_collection, get_collection_ref as get_collection_ref,
        get_default_graph as get_default_graph, name_scope as name_scope,
        reset_default_graph as reset_default_graph)
    from tensorweave.framework.indexed_slices import IndexedSlices as IndexedSlices
    from tensorweave.framework.tensor import Operation as Operation, Tensor as Tensor
    from tensorweave.framework.tensor_shape import (
        Dimension as Dimension, TensorShape as TensorShape,
        dimension_at_index as dimension_at_index,
        dimension_value as dimension_value, disable_v2_tensorshape as disable_v2_tensorshape,
        enable_v2_tensorshape as enable_v2_tensorshape)
    from tensorweave.ops.array.core_ops import (
        identity as identity, no_op as no_op, placeholder as placeholder,
        placeholder_with_default as placeholder_with_default)
    from tensorweave.client.session import (
        InteractiveSession as InteractiveSession, Session as Session,
        get_default_session as get_default_session)
    from tensorweave.framework.proto.config_pb2 import (
        ConfigProto as ConfigProto, GPUOptions as GPUOptions, GraphOptions as GraphOptions,
        OptimizerOptions as OptimizerOptions, RunMetadata as RunMetadata,
        RunOptions as RunOptions)
    # TF programs import these from tensorflow.core.protobuf.{debug,rewriter_config}_pb2 (to
    # set RunOptions.debug_options or GraphOptions.rewrite_options); with no such package
    # here they sit beside ConfigProto.
    from tensorweave.framework.proto.debug_pb2 import (
        DebugOptions as DebugOptions, DebugTensorWatch as DebugTensorWatch)
    from tensorweave.framework.proto.rewriter_config_pb2 import RewriterConfig as RewriterConfig
    # The other protocol messages TF 1.x exports at its root (tf.GraphDef, tf.NodeDef, ...).
    from tensorweave.framework.proto.graph_pb2 import (
        AttrValue as AttrValue, GraphDef as GraphDef, NameAttrList as NameAttrList,
        NodeDef as NodeDef)
    from tensorweave.framework.proto.meta_graph_pb2 import TensorInfo as TensorInfo
    from tensorweave.framework.proto.summary_pb2 import (
        HistogramProto as HistogramProto, LogMessage as LogMessage, SessionLog as SessionLog,
        SummaryMetadata as SummaryMetadata)

    # --- math (owner: math helper) ---
    import tensorweave.ops.math.math_ops  # installs the Tensor operators (+ - * / ...)
    from tensorweave.ops.math.clip_ops import (
        clip_by_global_norm as clip_by_global_norm, clip_by_norm as clip_by_norm,
        clip_by_value as clip_by_value, global_norm as global_norm)
    from tensorweave.ops.math.math_ops import (
        abs as abs, add as add, add_n as add_n, argmax as argmax, argmin as argmin,
        broadcast_dynamic_shape as broadcast_dynamic_shape,
        broadcast_static_shape as broadcast_static_shape,
        broadcast_to as broadcast_to, cast as cast, ceil as ceil, conj as conj,
        divide as divide, equal as equal, exp as exp, floor as floor, floordiv as floordiv,
        floormod as floormod, greater as greater,
        greater_equal as greater_equal, less as less, less_equal as less_equal, log as log,
        log1p as log1p, logical_and as logical_and, logical_not as logical_not,
        logical_or as logical_or, logical_xor as logical_xor, matmul as matmul,
        maximum as maximum, minimum as minimum, mod as mod, multiply as multiply,
        negative as negative, not_equal as not_equal, pow as pow, reciprocal as reciprocal,
        reduce_all as reduce_all, reduce_any as reduce_any, reduce_max as reduce_max,
        reduce_logsumexp as reduce_logsumexp, reduce_mean as reduce_mean,
        reduce_min as reduce_min, reduce_prod as reduce_prod,
        reduce_sum as reduce_sum, round as round, rsqrt as rsqrt, sigmoid as sigmoid,
        sign as sign, sqrt as sqrt, square as square, squared_difference as squared_difference,
        subtract as subtract, tanh as tanh, to_double as to_double, to_float as to_float,
        to_int32 as to_int32, to_int64 as to_int64, truediv as truediv,
        unsorted_segment_sum as unsorted_segment_sum, where as where)

    from tensorweave.ops.math.unary_ops import cos as cos, sin as sin
    from tensorweave.ops.math.complex_ops import (
        complex as complex, imag as imag, real as real)
    from tensorweave.ops.data_flow.count_ops import count_up_to as count_up_to

    # --- array + random (owner: array helper) ---
    from tensorweave.ops.array import (
        boolean_mask as boolean_mask, concat as concat, expand_dims as expand_dims, fill as fill,
        gather as gather, one_hot as one_hot, ones as ones, ones_like as ones_like, pad as pad,
        range as range, rank as rank, reshape as reshape, shape as shape, shape_n as shape_n,
        size as size, slice as slice, split as split, squeeze as squeeze, stack as stack,
        stop_gradient as stop_gradient, strided_slice as strided_slice, tile as tile,
        transpose as transpose, unstack as unstack, zeros as zeros, zeros_like as zeros_like)
    from tensorweave.ops.random.random_ops import (
        get_seed as get_seed, random_normal as random_normal, random_shuffle as random_shuffle,
        random_uniform as random_uniform, set_random_seed as set_random_seed,
        truncated_normal as truncated_normal)
    from tensorweave.ops.random.multinomial_ops import multinomial as multinomial

    # --- nn + losses (owner: nn helper) ---
    from tensorweave import nn as nn
    from tensorweave import losses as losses

    # --- variables + train (owner: training helper) ---
    from tensorweave.ops.state.scatter_ops import (
        scatter_add as scatter_add, scatter_div as scatter_div, scatter_max as scatter_max,
        scatter_min as scatter_min, scatter_mul as scatter_mul, scatter_sub as scatter_sub,
        scatter_update as scatter_update)
    from tensorweave.ops.state.scatter_nd_ops import (
        batch_scatter_update as batch_scatter_update, scatter_nd_add as scatter_nd_add,
        scatter_nd_sub as scatter_nd_sub, scatter_nd_update as scatter_nd_update)
    from tensorweave.ops.state.state_ops import (
        assign as assign, assign_add as assign_add, assign_sub as assign_sub)
    from tensorweave.state.variables import (
        Variable as Variable, all_variables as all_variables, global_variables as global_variables,
        local_variables as local_variables, model_variables as model_variables,
        moving_average_variables as moving_average_variables,
        trainable_variables as trainable_variables)
    from tensorweave.state.resource_variables import (
        disable_resource_variables as disable_resource_variables,
        enable_resource_variables as enable_resource_variables,
        resource_variables_enabled as resource_variables_enabled)
    from tensorweave.state.variable_meta import (
        variable_creator_scope as variable_creator_scope)
    from tensorweave.state.variable_policies import (
        VariableAggregation as VariableAggregation,
        VariableSynchronization as VariableSynchronization)
    from tensorweave.state.variable_initializers import (
        assert_variables_initialized as assert_variables_initialized,
        global_variables_initializer as global_variables_initializer,
        initialize_all_variables as initialize_all_variables,
        initialize_local_variables as initialize_local_variables,
        is_variable_initialized as is_variable_initialized,
        local_variables_initializer as local_variables_initializer,
        report_uninitialized_variables as report_uninitialized_variables,
        tables_initializer as tables_initializer, variables_initializer as variables_initializer)
    from tensorweave.state.variable_scope import (
        AUTO_REUSE as AUTO_REUSE, VariableScope as VariableScope,
        create_partitioned_variables as create_partitioned_variables,
        get_local_variable as get_local_variable, get_variable as get_variable,
        get_variable_scope as get_variable_scope, no_regularizer as no_regularizer,
        variable_scope as variable_scope)
    from tensorweave.state.init_ops import (
        constant_initializer as constant_initializer,
        glorot_normal_initializer as glorot_normal_initializer,
        glorot_uniform_initializer as glorot_uniform_initializer,
        ones_initializer as ones_initializer, orthogonal_initializer as orthogonal_initializer,
        random_normal_initializer as random_normal_initializer,
        random_uniform_initializer as random_uniform_initializer,
        truncated_normal_initializer as truncated_normal_initializer,
        variance_scaling_initializer as variance_scaling_initializer,
        zeros_initializer as zeros_initializer)
    from tensorweave.state import init_ops as initializers
    from tensorweave.state.template import make_template as make_template
    from tensorweave.ops.array.space_batch_ops import (
        batch_to_space as batch_to_space, batch_to_space_nd as batch_to_space_nd,
        space_to_batch as space_to_batch, space_to_batch_nd as space_to_batch_nd)
    from tensorweave.ops.array.depth_space_ops import (
        depth_to_space as depth_to_space, space_to_depth as space_to_depth)
    from tensorweave.nn_impl.space_to_batch_conv import (
        required_space_to_batch_paddings as required_space_to_batch_paddings)
    from tensorweave.ops.parsing.sequence_example_ops import (
        parse_single_sequence_example as parse_single_sequence_example)
    from tensorweave.readers.readers import (
        FixedLengthRecordReader as FixedLengthRecordReader, IdentityReader as IdentityReader,
        ReaderBase as ReaderBase, TFRecordReader as TFRecordReader,
        TextLineReader as TextLineReader, WholeFileReader as WholeFileReader)
    from tensorweave.autodiff.custom_gradient import custom_gradient as custom_gradient
    from tensorweave.autodiff.gradient_registry import (
        NoGradient as NoGradient, NotDifferentiable as NotDifferentiable,
        RegisterGradient as RegisterGradient)
    from tensorweave.ops.array.identity_n_ops import identity_n as identity_n
    from tensorweave import train as train

    # --- control flow + graph io (owner: control-flow helper) ---
    from tensorweave.ops.control_flow import (
        Assert as Assert, Print as Print, assert_equal as assert_equal,
        assert_greater as assert_greater, assert_greater_equal as assert_greater_equal,
        assert_less as assert_less, assert_less_equal as assert_less_equal,
        assert_negative as assert_negative, assert_non_negative as assert_non_negative,
        assert_none_equal as assert_none_equal, assert_positive as assert_positive,
        assert_rank as assert_rank, assert_type as assert_type, case as case, cond as cond,
        group as group, tuple as tuple, while_loop as while_loop)
    from tensorweave.framework.graph_io import import_graph_def as import_graph_def
    from tensorweave.data_flow.tensor_array import TensorArray as TensorArray

    # --- queues + input pipelines (owner: data helper) ---
    from tensorweave.data_flow.data_flow_ops import (
        ConditionalAccumulator as ConditionalAccumulator, FIFOQueue as FIFOQueue,
        PaddingFIFOQueue as PaddingFIFOQueue, PriorityQueue as PriorityQueue,
        QueueBase as QueueBase, RandomShuffleQueue as RandomShuffleQueue,
        SparseConditionalAccumulator as SparseConditionalAccumulator)
    from tensorweave import queue as queue
    from tensorweave import data as data

    # --- summaries + saver (owner: checkpoint helper) ---
    from tensorweave import summary as summary
    from tensorweave.summary.summary import Summary as Summary, Event as Event

    # --- autodiff + testing (owner: core) ---
    from tensorweave.autodiff.gradients import gradients as gradients, hessians as hessians
    from tensorweave.framework.op_def import define_op as define_op

    # --- versions and execution mode (TF 1.13+ names); tf.compat (tf.compat.v1 is this API) ---
    from tensorweave.framework import versions as version
    from tensorweave.framework.versions import (
        COMPILER_VERSION as COMPILER_VERSION, CXX11_ABI_FLAG as CXX11_ABI_FLAG,
        GIT_VERSION as GIT_VERSION, GRAPH_DEF_VERSION as GRAPH_DEF_VERSION,
        GRAPH_DEF_VERSION_MIN_CONSUMER as GRAPH_DEF_VERSION_MIN_CONSUMER,
        GRAPH_DEF_VERSION_MIN_PRODUCER as GRAPH_DEF_VERSION_MIN_PRODUCER,
        MONOLITHIC_BUILD as MONOLITHIC_BUILD, VERSION as VERSION,
        disable_eager_execution as disable_eager_execution,
        disable_v2_behavior as disable_v2_behavior,
        enable_eager_execution as enable_eager_execution,
        enable_v2_behavior as enable_v2_behavior, executing_eagerly as executing_eagerly)

    from tensorweave import app as app
    from tensorweave.app import flags as flags  # tf.flags is tf.app.flags (TF >= 1.5)
    from tensorweave.platform import tf_logging as logging
    from tensorweave.platform import gfile as gfile
    # tf.test, tf.distribute and tf.estimator: imported when first named (_LAZY, below).

    # --- device setter, partitioning, cluster resolution (owner: placement helper) ---
    from tensorweave.state.partitioned_variables import (
        fixed_size_partitioner as fixed_size_partitioner,
        min_max_variable_partitioner as min_max_variable_partitioner,
        variable_axis_size_partitioner as variable_axis_size_partitioner)
    from tensorweave.ops.nn.embedding_ops import (
        dynamic_partition as dynamic_partition, dynamic_stitch as dynamic_stitch)
    from tensorweave import contrib as contrib
    from tensorweave.contrib import lookup as lookup  # TF 1.15's tf.lookup: the same tables
    # DeepRec's pipeline stage (tf.staged and the hook that runs it)
    from tensorweave.train.prefetch import (
        make_prefetch_hook as make_prefetch_hook, staged as staged)
    # DeepRec's EmbeddingVariable API (tf.get_embedding_variable and its options)
    from tensorweave.train.embedding_variable import (
        CBFFilter as CBFFilter, CounterFilter as CounterFilter,
        EmbeddingVariableOption as EmbeddingVariableOption, GlobalStepEvict as GlobalStepEvict,
        InitializerOption as InitializerOption, L2WeightEvict as L2WeightEvict,
        get_embedding_variable as get_embedding_variable)
    # DeepRec's WorkQueue: dynamic data sharding (issue 35)
    from tensorweave.train.work_queue import WorkQueue as WorkQueue

    # --- SavedModel, MetaGraphDef (owner: saved-model helper) ---
    from tensorweave import saved_model as saved_model
    from tensorweave.framework.proto.meta_graph_pb2 import MetaGraphDef as MetaGraphDef

    # --- tf.metrics (owner: layers helper; tf.keras and tf.layers load when first named) ---
    from tensorweave import metrics as metrics
    from tensorweave.ops.linalg.linalg_ops import qr as qr

    # --- SparseTensor, sparse ops, gather_nd, unique (owner: sparse helper, issue 11) ---
    from tensorweave.framework.sparse_tensor import (
        SparseTensor as SparseTensor, SparseTensorValue as SparseTensorValue,
        convert_to_tensor_or_sparse_tensor as convert_to_tensor_or_sparse_tensor)
    from tensorweave.ops.array.gather_nd_ops import gather_nd as gather_nd, scatter_nd as scatter_nd
    from tensorweave.ops.array.unique_ops import unique as unique
    from tensorweave.ops.math.div_no_nan_ops import div_no_nan as div_no_nan
    from tensorweave.ops.sparse.conversion_ops import (
        sparse_placeholder as sparse_placeholder, sparse_reorder as sparse_reorder,
        sparse_reshape as sparse_reshape, sparse_retain as sparse_retain,
        sparse_tensor_to_dense as sparse_tensor_to_dense, sparse_to_dense as sparse_to_dense,
        sparse_to_indicator as sparse_to_indicator)
    from tensorweave.ops.sparse.segment_ops import (
        segment_sum as segment_sum, sparse_segment_mean as sparse_segment_mean,
        sparse_segment_sqrt_n as sparse_segment_sqrt_n, sparse_segment_sum as sparse_segment_sum)
    from tensorweave.ops.sparse.sparse_math_ops import (
        sparse_add as sparse_add, sparse_reduce_sum as sparse_reduce_sum,
        sparse_tensor_dense_matmul as sparse_tensor_dense_matmul)
    from tensorweave.ops.sparse.structure_ops import (
        sparse_concat as sparse_concat, sparse_fill_empty_rows as sparse_fill_empty_rows,
        sparse_slice as sparse_slice)
    from tensorweave.ops.sparse.sparse_split_softmax_ops import sparse_merge as sparse_merge
    from tensorweave.ops.sparse.sparse_split_softmax_ops import (
        sparse_maximum as sparse_maximum, sparse_minimum as sparse_minimum,
        sparse_softmax as sparse_softmax, sparse_split as sparse_split)
    from tensorweave import sparse as sparse

    # --- TFRecord files, tf.train.Example parsing (owner: input helper, issue 11) ---
    from tensorweave import io as io
    from tensorweave import python_io as python_io
    from tensorweave.ops.parsing.csv_ops import decode_csv as decode_csv
    from tensorweave.ops.parsing.parsing_ops import (
        FixedLenFeature as FixedLenFeature, FixedLenSequenceFeature as FixedLenSequenceFeature,
        SparseFeature as SparseFeature, VarLenFeature as VarLenFeature, decode_raw as decode_raw,
        parse_example as parse_example,
        parse_single_example as parse_single_example)

    # --- whole-file ops, confined on a server (owner: security helper, issue 12) ---
    from tensorweave.ops.io.file_ops import (
        matching_files as matching_files, read_file as read_file, write_file as write_file)

    # --- tf.as_string, string hashing (owner: feature-column helper, issue 11) ---
    from tensorweave.ops.lookup.hash_ops import (
        as_string as as_string, string_to_hash_bucket_fast as string_to_hash_bucket_fast,
        string_to_hash_bucket as string_to_hash_bucket,
        string_to_hash_bucket_strong as string_to_hash_bucket_strong)

    # --- numerics checks, tf.debugging (issue 11's "noticed": TF1 programs call these) ---
    from tensorweave.ops.control_flow.numerics_ops import (
        add_check_numerics_ops as add_check_numerics_ops, check_numerics as check_numerics,
        is_finite as is_finite, is_inf as is_inf, is_nan as is_nan,
        verify_tensor_all_finite as verify_tensor_all_finite)
    from tensorweave import debugging as debugging

    # --- tf.linalg, and the TF1 top-level names of the matrix ops ---
    from tensorweave import linalg as linalg
    from tensorweave.ops.linalg.linalg_ops import (
        eye as eye, matrix_transpose as matrix_transpose, trace as trace)
    from tensorweave.ops.linalg.decomp_ops import (
        cholesky as cholesky, matrix_determinant as matrix_determinant,
        matrix_inverse as matrix_inverse, matrix_solve as matrix_solve)
    from tensorweave.ops.linalg.einsum_ops import einsum as einsum
    from tensorweave.ops.linalg.matrix_ops import (
        diag as diag, diag_part as diag_part, matrix_band_part as matrix_band_part,
        matrix_diag as matrix_diag, matrix_diag_part as matrix_diag_part,
        matrix_set_diag as matrix_set_diag)
    from tensorweave.math_impl.norm_ops import norm as norm
    from tensorweave.math_impl.tensordot_ops import tensordot as tensordot

    # --- tf.image (no codecs), and tf.random_crop ---
    from tensorweave import image as image
    from tensorweave.image import random_crop as random_crop

    # --- map_fn, scan, foldl, foldr (one op each way, not a while_loop over stacked state) ---
    from tensorweave.higher_order import (
        foldl as foldl, foldr as foldr, map_fn as map_fn, scan as scan)

    # --- tf.print (PrintV2 of a StringFormat, as TF builds it) ---
    from tensorweave.ops.control_flow.print_ops import print_v2 as print  # noqa: A001 - TF's name

    # --- tf.py_func: Python code as an op of the graph (runs in the building process) ---
    from tensorweave.ops.script_ops import numpy_function as numpy_function, py_func as py_func

    # --- array ops TF1 programs use for sequences, sets and sorting ---
    from tensorweave.ops.array.sequence_ops import (
        linspace as linspace, meshgrid as meshgrid, reverse as reverse,
        reverse_sequence as reverse_sequence)
    from tensorweave.ops.nn.nn_extra_ops import sequence_mask as sequence_mask
    from tensorweave.ops.array.sequence_ops import linspace as lin_space
    from tensorweave.ops.array.sequence_ops import reverse as reverse_v2
    from tensorweave.ops.stats.set_sort_ops import (
        argsort as argsort, setdiff1d as setdiff1d, sort as sort,
        unique_with_counts as unique_with_counts)

    # --- tf.strings, and the TF1 top-level names of the string ops ---
    from tensorweave import strings as strings
    from tensorweave.ops.strings.regex_ops import regex_replace as regex_replace
    from tensorweave.ops.strings.split_ops import (
        reduce_join as reduce_join, string_join as string_join, string_split as string_split)
    from tensorweave.ops.strings.string_ops import (
        string_strip as string_strip, string_to_number as string_to_number, substr as substr)

    # --- tf.math, and the TF1 top-level names of the math it added ---
    from tensorweave import math as math
    from tensorweave import random as random
    from tensorweave.math import (
        acos as acos, acosh as acosh, asin as asin, asinh as asinh, atan as atan, atan2 as atan2,
        atanh as atanh, bincount as bincount, confusion_matrix as confusion_matrix,
        cosh as cosh, count_nonzero as count_nonzero, cumprod as cumprod, cumsum as cumsum,
        digamma as digamma, erf as erf, erfc as erfc, expm1 as expm1,
        invert_permutation as invert_permutation, is_non_decreasing as is_non_decreasing,
        is_strictly_increasing as is_strictly_increasing, lgamma as lgamma,
        log_sigmoid as log_sigmoid, polygamma as polygamma, rint as rint,
        scalar_mul as scalar_mul, segment_max as segment_max, segment_mean as segment_mean,
        segment_min as segment_min, segment_prod as segment_prod, sinh as sinh, tan as tan,
        unsorted_segment_max as unsorted_segment_max,
        unsorted_segment_mean as unsorted_segment_mean,
        unsorted_segment_min as unsorted_segment_min,
        unsorted_segment_prod as unsorted_segment_prod,
        unsorted_segment_sqrt_n as unsorted_segment_sqrt_n)

    newaxis = None

    __version__ = VERSION
    # TF 1.x's dunder spellings of the same constants (programs print them).
    __git_version__ = GIT_VERSION
    __compiler_version__ = COMPILER_VERSION
    __cxx11_abi_flag__ = CXX11_ABI_FLAG
    __monolithic_build__ = MONOLITHIC_BUILD
    # "grpc://" sessions: the client finds the backend by the target's scheme, and imports the
    # distributed runtime on the first such session (a program that only runs local sessions,
    # or only names tf.estimator, never loads it).
    from tensorweave.client.session import register_session_backend  # noqa: E402
    register_session_backend("grpc", "tensorweave.distributed.session:GrpcSessionRuntime")

    # Imported when a program first names them (`tf.estimator`, `tf.keras`, `tf.layers`,
    # `tf.feature_column`, `from tensorweave import estimator`): most processes, task servers
    # among them, use none, and together they cost every process ~60 ms of its start.
    from typing import Any as _Any  # noqa: E402

    from tensorweave.base import lazy as _lazy  # noqa: E402
    _LAZY = {"estimator": "tensorweave.estimator", "distribute": "tensorweave.distribute",
             "dtypes": "tensorweave.dtypes",
             "test": "tensorweave.testing.tf_test", "keras": "tensorweave.keras",
             "layers": "tensorweave.layers", "feature_column": "tensorweave.feature_column"}

    def __getattr__(name: str) -> "_Any":
        return _lazy.load(globals(), _LAZY, name,
                          f"module 'tensorweave' has no attribute {name!r}")


    def __dir__() -> list[str]:
        return _lazy.names(globals(), _LAZY)

    # Last: compat.v1 looks names up on this module.
    from tensorweave import compat as compat  # noqa: E402
finally:
    if _GC_WAS_ON:
        _gc.enable()

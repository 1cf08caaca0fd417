"""`tf.train`: optimizers, slots and the global step.

Example:
    >>> step = tf.train.get_or_create_global_step()
    >>> train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=step)
"""
# ruff: noqa: F401  (this module only re-exports)
from tensorweave.train.optimizer import Optimizer as Optimizer
from tensorweave.train.gradient_descent import (
    GradientDescentOptimizer as GradientDescentOptimizer)
from tensorweave.train.momentum import MomentumOptimizer as MomentumOptimizer
from tensorweave.train.adagrad import AdagradOptimizer as AdagradOptimizer
from tensorweave.train.adam import AdamOptimizer as AdamOptimizer
from tensorweave.train.adam_async import AdamAsyncOptimizer as AdamAsyncOptimizer  # DeepRec
from tensorweave.train.adagrad_decay import (  # DeepRec
    AdagradDecayOptimizer as AdagradDecayOptimizer)
from tensorweave.train.rmsprop import RMSPropOptimizer as RMSPropOptimizer
from tensorweave.train.training_util import (
    assert_global_step as assert_global_step, create_global_step as create_global_step,
    get_global_step as get_global_step,
    get_or_create_global_step as get_or_create_global_step, global_step as global_step)
from tensorweave.framework.graph_io import write_graph as write_graph
from tensorweave.train.coordinator import Coordinator as Coordinator, LooperThread as LooperThread
from tensorweave.train.input import (
    batch as batch, batch_join as batch_join, input_producer as input_producer,
    limit_epochs as limit_epochs, maybe_batch as maybe_batch,
    maybe_batch_join as maybe_batch_join, maybe_shuffle_batch as maybe_shuffle_batch,
    maybe_shuffle_batch_join as maybe_shuffle_batch_join,
    range_input_producer as range_input_producer, shuffle_batch as shuffle_batch,
    shuffle_batch_join as shuffle_batch_join, slice_input_producer as slice_input_producer,
    string_input_producer as string_input_producer)
from tensorweave.train.queue_runner import (
    QueueRunner as QueueRunner, add_queue_runner as add_queue_runner,
    start_queue_runners as start_queue_runners)
from tensorweave.framework.checkpoint_state import CheckpointState as CheckpointState
from tensorweave.state.partitioned_variables import SaveSliceInfo as SaveSliceInfo
from tensorweave.train.checkpoint_management import (
    NewCheckpointReader as NewCheckpointReader, checkpoint_exists as checkpoint_exists,
    get_checkpoint_state as get_checkpoint_state, latest_checkpoint as latest_checkpoint,
    latest_valid_checkpoint as latest_valid_checkpoint, list_variables as list_variables,
    load_checkpoint as load_checkpoint, load_variable as load_variable,
    update_checkpoint_state as update_checkpoint_state,
    get_checkpoint_mtimes as get_checkpoint_mtimes, remove_checkpoint as remove_checkpoint,
    generate_checkpoint_state_proto as generate_checkpoint_state_proto)
from tensorweave.train.saver import Saver as Saver
from tensorweave.train.meta_graph_io import (
    export_meta_graph as export_meta_graph, import_meta_graph as import_meta_graph)
from tensorweave.train.checkpoint_utils import init_from_checkpoint as init_from_checkpoint
from tensorweave.framework.proto.saver_pb2 import SaverDef as SaverDef
from tensorweave.framework.proto.meta_graph_pb2 import QueueRunnerDef as QueueRunnerDef
from tensorweave.summary.writer import summary_iterator as summary_iterator
from tensorweave.train.basic_session_run_hooks import (
    CheckpointSaverHook as CheckpointSaverHook,
    CheckpointSaverListener as CheckpointSaverListener, FeedFnHook as FeedFnHook,
    FinalOpsHook as FinalOpsHook, ProfilerHook as ProfilerHook,
    GlobalStepWaiterHook as GlobalStepWaiterHook, LoggingTensorHook as LoggingTensorHook,
    NanLossDuringTrainingError as NanLossDuringTrainingError, NanTensorHook as NanTensorHook,
    StepCounterHook as StepCounterHook, StopAtStepHook as StopAtStepHook,
    SummarySaverHook as SummarySaverHook)
from tensorweave.train.hook_utils import SecondOrStepTimer as SecondOrStepTimer
from tensorweave.train.monitored_session import (
    MonitoredSession as MonitoredSession, MonitoredTrainingSession as MonitoredTrainingSession,
    SingularMonitoredSession as SingularMonitoredSession)
from tensorweave.train.session_creators import (
    ChiefSessionCreator as ChiefSessionCreator, SessionCreator as SessionCreator,
    WorkerSessionCreator as WorkerSessionCreator)
from tensorweave.train.scaffold import Scaffold as Scaffold
from tensorweave.train.session_manager import SessionManager as SessionManager
from tensorweave.train.session_run_hook import (
    SessionRunArgs as SessionRunArgs, SessionRunContext as SessionRunContext,
    SessionRunHook as SessionRunHook, SessionRunValues as SessionRunValues)
from tensorweave.train.supervisor import Supervisor as Supervisor
from tensorweave.train.sync_replicas_optimizer import (
    SyncReplicasOptimizer as SyncReplicasOptimizer)
from tensorweave.train import basic_session_run_hooks as basic_session_run_hooks
from tensorweave.train.learning_rate_decay import (
    cosine_decay as cosine_decay, cosine_decay_restarts as cosine_decay_restarts,
    exponential_decay as exponential_decay, inverse_time_decay as inverse_time_decay,
    linear_cosine_decay as linear_cosine_decay, natural_exp_decay as natural_exp_decay,
    piecewise_constant as piecewise_constant, polynomial_decay as polynomial_decay)
from tensorweave.train.moving_averages import (
    ExponentialMovingAverage as ExponentialMovingAverage)
from tensorweave.train.device_setter import (
    GreedyLoadBalancingStrategy as GreedyLoadBalancingStrategy,
    byte_size_load_fn as byte_size_load_fn, replica_device_setter as replica_device_setter)

# --- optimizers of the parameter-server workload (owner: sparse helper, issue 11) ---
from tensorweave.train.adadelta import AdadeltaOptimizer as AdadeltaOptimizer
from tensorweave.train.ftrl import FtrlOptimizer as FtrlOptimizer
from tensorweave.readers.readers import match_filenames_once as match_filenames_once
from tensorweave.train.proximal import (
    ProximalAdagradOptimizer as ProximalAdagradOptimizer,
    ProximalGradientDescentOptimizer as ProximalGradientDescentOptimizer)

# --- tf.train.Example protos (owner: input helper, issue 11) ---
from tensorweave.framework.proto.example_pb2 import (
    Example as Example, SequenceExample as SequenceExample)
from tensorweave.framework.proto.feature_pb2 import (
    BytesList as BytesList, Feature as Feature, FeatureList as FeatureList,
    FeatureLists as FeatureLists, Features as Features, FloatList as FloatList,
    Int64List as Int64List)

# The distributed runtime (gRPC) is imported on first use, keeping `import tensorweave` light.
_DISTRIBUTED = {"Server": "tensorweave.distributed.server",
                "ClusterSpec": "tensorweave.distributed.cluster",
                # TF's tensorflow_server.proto messages, as tf.train exports them
                "ServerDef": "tensorweave.distributed.protocol.cluster_pb2",
                "ClusterDef": "tensorweave.distributed.protocol.cluster_pb2",
                "JobDef": "tensorweave.distributed.protocol.cluster_pb2"}


def __getattr__(name: str):  # noqa: ANN202 - PEP 562 module attribute hook
    module = _DISTRIBUTED.get(name)
    if module is None:
        raise AttributeError(f"module 'tensorweave.train' has no attribute {name!r}")
    import importlib
    importlib.import_module("tensorweave.distributed")  # registers the grpc:// backend
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(list(globals()) + list(_DISTRIBUTED))

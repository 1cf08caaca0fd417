"""`tf.Session`, `tf.InteractiveSession` and the default-session stack.

Example:
    >>> with tf.Session() as sess:
    ...     print(sess.run({"y": y}, feed_dict={x: [[1.0, 2.0]]}))
"""
from __future__ import annotations

import contextlib
import importlib
import logging
import threading
from typing import Any, Callable, Iterator

import numpy as np

from tensorweave.client.fetch import flatten_fetches, split_elements, to_client_value
from tensorweave.client.local import LocalRuntime
from tensorweave.framework import errors
from tensorweave.framework.convert import to_numpy
from tensorweave.framework.graph import Graph, get_default_graph
from tensorweave.framework.tensor import register_default_session_getter
from tensorweave.framework.proto.config_pb2 import ConfigProto, RunOptions
from tensorweave.framework.tensor import Tensor
from tensorweave.framework.sparse_tensor import SparseTensor, sparse_feed_parts
from tensorweave.runtime import intra_op
from tensorweave.runtime.step import StepState
from tensorweave.runtime.step_stats import StepStatsCollector

# Session backends by URL scheme. A higher layer registers itself here (the client
# never imports it): `tensorweave.distributed` registers "grpc" as a lazy
# "module:attribute" reference, so `import tensorweave` makes "grpc://" targets work
# and the module that serves them is imported on the first such session.
_BACKENDS: dict[str, Callable[..., Any] | str] = {}
log = logging.getLogger("tensorweave.session")
_local = threading.local()


def register_session_backend(scheme: str, factory: Callable[..., Any] | str) -> None:
    """`factory(target, graph, config) -> runtime` serves targets 'scheme://...'.

    Args:
        scheme: the URL scheme, e.g. "grpc".
        factory: a callable, or "package.module:attribute" naming one (imported on
            first use).

    Example:
        >>> register_session_backend("grpc", "tensorweave.distributed.session:GrpcSessionRuntime")
    """
    _BACKENDS[scheme] = factory


def _backend(target: str) -> Callable[..., Any] | None:
    scheme = target.split("://", 1)[0] if "://" in target else ""
    factory = _BACKENDS.get(scheme)
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = _BACKENDS[scheme] = getattr(importlib.import_module(module), attr)
    return factory


def _default_sessions() -> list["Session"]:
    stack = getattr(_local, "sessions", None)
    if stack is None:
        stack = _local.sessions = []
    return stack


def get_default_session() -> "Session | None":
    """The innermost session entered with `with sess:` / `as_default()` in this thread."""
    stack = _default_sessions()
    return stack[-1] if stack else None


# Tensor.eval, Operation.run and Variable.load (lower layers) find the session here.
register_default_session_getter(get_default_session)


class Session:
    """A connection to a runtime that runs the ops of one graph.

    Args:
        target: '' for in-process, or 'grpc://host:port' for a server's master.
        graph: the graph to run (default: the default graph).
        config: a `tf.ConfigProto`.

    Raises:
        ValueError: for a target whose scheme no backend serves.

    Example:
        >>> sess = tf.Session()
        >>> sess.run(tf.constant(2) * 3)
        6
    """

    def __init__(self, target: str = "", graph: Any = None, config: Any = None) -> None:
        if graph is not None and not isinstance(graph, Graph):
            raise TypeError(f"graph must be a tf.Graph, but got {type(graph).__name__} "
                            f"({graph!r}).")
        if config is not None and not isinstance(config, ConfigProto):
            raise TypeError(f"config must be a tf.ConfigProto, but got "
                            f"{type(config).__name__}.")
        self._graph = graph if graph is not None else get_default_graph()
        self._config = config if config is not None else ConfigProto()
        micro = self._config.graph_options.optimizer_options.micro_batch_num
        if micro > 1:
            # DeepRec splits each batch into micro-batches and sums their gradients;
            # running the whole batch at once would silently change the update.
            raise ValueError(
                f"ConfigProto graph_options.optimizer_options.micro_batch_num={micro} "
                "(DeepRec's auto micro-batch) is not supported by tensorweave: leave it "
                "unset (0 or 1) and give the session the batch size you want each step "
                "to train on")
        self._target = target.decode() if isinstance(target, bytes) else target
        self._closed = False
        self._steps: set[StepState] = set()
        self._steps_lock = threading.Lock()
        self._default_cm: list[Any] = []
        self._runtime = self._make_runtime()

    def _make_runtime(self) -> Any:
        if not self._target:
            if self._config.intra_op_parallelism_threads > 0:
                # As TF sizes its intra-op pool: big matmuls split over this many threads
                # that never spin, OpenBLAS on one (runtime/intra_op.py).
                intra_op.use_own_threads(self._config.intra_op_parallelism_threads)
            return LocalRuntime(self._graph, self._config)
        factory = _backend(self._target)
        if factory is None:
            # TF 1.x: NotFoundError ("no session factory registered" for the target).
            raise errors.NotFoundError(
                None, None, f"No session factory serves the target {self._target!r}: use '' "
                f"for an in-process session or 'grpc://host:port' for a server.")
        return factory(self._target, self._graph, self._config)

    @property
    def graph(self) -> Any:
        return self._graph

    @property
    def graph_def(self) -> Any:
        """The graph as a GraphDef; with `GraphOptions.infer_shapes`, each node carries
        its `_output_shapes` (as TF)."""
        return self._graph.as_graph_def(add_shapes=self._config.graph_options.infer_shapes)

    @property
    def sess_str(self) -> str:
        return self._target

    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None,
            run_metadata: Any = None) -> Any:
        """Runs the ops needed for `fetches`; returns values in the same structure.

        Raises:
            RuntimeError: if the session is closed.
            ValueError / TypeError: for a feed of the wrong shape or dtype (naming it).
            tf.errors.OpError: a kernel failure, naming the node.
        """
        if self._closed:
            raise RuntimeError("Attempted to use a closed Session.")
        if options is not None:
            self._check_run_options(options)
        elements, rebuild = flatten_fetches(fetches, self._graph)
        feed_tensors, feed_values = self._prepare_feeds(feed_dict)
        fetch_tensors, targets = split_elements(elements)
        step = StepState(timeout_s=self._timeout_s(options), options=options,
                         stats=_collector_for(options, run_metadata))
        if run_metadata is not None and options is not None and options.output_partition_graphs:
            step.partition_graphs = []
        with self._steps_lock:
            self._steps.add(step)
        try:
            values = self._runtime.run(feed_tensors, feed_values, fetch_tensors, targets, step)
        except errors.OpError as e:
            # As TF: a failed step is raised by Session.run. The runtime's frames (TF's
            # C++ ones) are not the program's; the message names the node and where the
            # program created it.
            raise e.with_traceback(None) from None
        finally:
            step.end()
            with self._steps_lock:
                self._steps.discard(step)
        if run_metadata is not None:
            _fill_run_metadata(run_metadata, step)
        by_id = {id(t): to_client_value(v) for t, v in zip(fetch_tensors, values)}
        return rebuild(by_id)

    def _check_run_options(self, options: Any) -> None:
        # As TF: RunOptions.inter_op_thread_pool picks one of the session's pools
        # (ConfigProto.session_inter_op_thread_pool, else the one default pool; -1: the
        # caller's thread). The step runs on tensorweave's own threads either way.
        pools = max(1, len(self._config.session_inter_op_thread_pool))
        if not -1 <= options.inter_op_thread_pool < pools:
            raise errors.InvalidArgumentError(
                None, None, f"Invalid inter_op_thread_pool: {options.inter_op_thread_pool} "
                f"(RunOptions): this session has {pools} inter-op thread pool(s) "
                "(ConfigProto.session_inter_op_thread_pool); use an index below that or -1.")
        if options.debug_options.debug_tensor_watch_opts:
            _warn_debug_watches_once(options.debug_options)

    def _timeout_s(self, options: Any) -> float | None:
        ms = options.timeout_in_ms if options is not None and options.timeout_in_ms else \
            self._config.operation_timeout_in_ms
        return ms / 1000.0 if ms and ms > 0 else None

    def _prepare_feeds(self, feed_dict: Any) -> tuple[list[Tensor], list[Any]]:
        tensors: list[Tensor] = []
        values: list[Any] = []
        for key, value in (feed_dict or {}).items():
            if isinstance(key, SparseTensor):  # expands to its three dense tensors, as TF
                for part, part_value in sparse_feed_parts(key, value):
                    tensors.append(part)
                    values.append(self._check_feed(part, part_value))
                continue
            try:
                t = self._graph.as_graph_element(key, allow_tensor=True, allow_operation=False)
            except (KeyError, ValueError, TypeError) as e:
                raise TypeError(f"Cannot interpret feed_dict key {key!r} as a Tensor: {e}"
                                ) from None
            if not isinstance(t, Tensor):
                raise TypeError(f"Cannot feed {key!r}: feed keys must be Tensors or names.")
            tensors.append(t)
            values.append(self._check_feed(t, value))
        return tensors, values

    @staticmethod
    def _check_feed(t: Tensor, value: Any) -> np.ndarray:
        if isinstance(value, Tensor):
            raise TypeError(f"The value of a feed cannot be a tf.Tensor object (feeding "
                            f"{t.name!r}). Acceptable feeds are Python scalars, strings, "
                            "lists, NumPy arrays and numpy ndarrays.")
        dtype = t.dtype.base_dtype
        try:
            arr = to_numpy(value, dtype)
        except (TypeError, ValueError) as e:
            raise TypeError(f"Cannot feed value {value!r} to Tensor {t.name!r} of dtype "
                            f"{dtype.name}: {e}") from None
        if isinstance(value, np.ndarray) and value.dtype.kind == "f" and \
                (dtype.is_integer or dtype.is_bool) and not np.all(np.mod(value, 1) == 0):
            raise TypeError(f"Cannot feed non-integral values of dtype {value.dtype} to Tensor "
                            f"{t.name!r} of dtype {dtype.name}.")
        if not t.shape.is_compatible_with(arr.shape):
            raise ValueError(f"Cannot feed value of shape {arr.shape} for Tensor {t.name!r}, "
                             f"which has shape {t.shape}")
        return arr

    def make_callable(self, fetches: Any, feed_list: Any = None,
                      accept_options: bool = False) -> Callable[..., Any]:
        """A function running `fetches`: `f(*feed_values)` with `feed_list` fed.

        As TF: with a `feed_list` the function also takes `run()`'s keyword arguments
        (options=, run_metadata=); without one it takes them only with
        `accept_options=True`. Fetches that cannot be run fail here, not at the first
        call.

        Raises:
            TypeError: `feed_list` is not a list or tuple, or a fetch cannot be run.

        Example:
            >>> step = sess.make_callable(train_op, feed_list=[x, y])
            >>> step(batch_x, batch_y)
            >>> traced = sess.make_callable(loss, accept_options=True)
            >>> traced(options=tf.RunOptions(trace_level=3), run_metadata=tf.RunMetadata())
        """
        if feed_list is not None:
            if not isinstance(feed_list, (list, tuple)):
                raise TypeError(f"`feed_list` must be a list or tuple, got "
                                f"{type(feed_list).__name__}.")
            feeds = list(feed_list)

            def with_feeds(*feed_values: Any, **run_kwargs: Any) -> Any:
                return self.run(fetches, feed_dict=dict(zip(feeds, feed_values)), **run_kwargs)
            return with_feeds
        flatten_fetches(fetches, self._graph)
        if accept_options:
            def with_options(options: Any = None, run_metadata: Any = None) -> Any:
                return self.run(fetches, options=options, run_metadata=run_metadata)
            return with_options

        def plain() -> Any:
            return self.run(fetches)
        return plain

    def list_devices(self) -> list[Any]:
        """The devices this session can use: each has `name`, `device_type`,
        `memory_limit_bytes` and `incarnation` (as TF's).

        Example:
            >>> [d.name for d in tf.Session().list_devices()]
            ['/job:localhost/replica:0/task:0/device:CPU:0']
        """
        return self._runtime.list_devices()

    def close(self) -> None:
        """Closes the session; pending steps are cancelled (CancelledError)."""
        if self._closed:
            return
        self._closed = True
        with self._steps_lock:
            steps = list(self._steps)
        for s in steps:
            s.cancel(errors.CancelledError(None, None, "The step's operation was cancelled: "
                                           "the session was closed while the step was "
                                           "running (Session::Close() cancels the steps "
                                           "in flight)."))
        self._runtime.close()

    @contextlib.contextmanager
    def as_default(self) -> Iterator["Session"]:
        stack = _default_sessions()
        stack.append(self)
        try:
            yield self
        finally:
            stack.remove(self)

    def __enter__(self) -> "Session":
        graph_cm = self._graph.as_default()
        sess_cm = self.as_default()
        graph_cm.__enter__()
        sess_cm.__enter__()
        self._default_cm.append((graph_cm, sess_cm))
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        graph_cm, sess_cm = self._default_cm.pop()
        sess_cm.__exit__(exc_type, exc, tb)
        graph_cm.__exit__(exc_type, exc, tb)
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed and not self._steps:
                self._closed = True
        except AttributeError:
            pass

    @staticmethod
    def reset(target: str, containers: list[str] | None = None, config: Any = None) -> None:
        """Clears resource containers (all when None) on the target's cluster."""
        factory = _backend(target)
        reset_fn = getattr(factory, "reset", None)
        if reset_fn is None:
            raise errors.NotFoundError(
                None, None, f"No session factory serves the target {target!r}: Session.reset "
                f"needs a server target like 'grpc://host:port'.")
        reset_fn(target, containers, config)


_debug_warned = False


def _warn_debug_watches_once(debug_options: Any) -> None:
    # tfdbg's watches (RunOptions.debug_options) ask TF to copy tensors to debug URLs
    # (file:// dump directories, grpc:// debug servers). tensorweave has no tfdbg: it
    # runs the step as asked and says once that the watched tensors go nowhere.
    global _debug_warned
    urls = sorted({u for w in debug_options.debug_tensor_watch_opts for u in w.debug_urls})
    if urls and not _debug_warned:
        _debug_warned = True
        names = sorted({w.node_name for w in debug_options.debug_tensor_watch_opts})
        log.warning("RunOptions.debug_options watches %s with debug URLs %s: tensorweave has "
                    "no tfdbg, so no debug tensors are written there (the step runs as usual).",
                    names[:5], urls[:5])


def _collector_for(options: Any, run_metadata: Any) -> StepStatsCollector | None:
    # As TF: any trace level above NO_TRACE records node stats, if there is somewhere
    # to put them. An untraced step carries None and the executor skips all timing.
    if run_metadata is None or options is None or options.trace_level == RunOptions.NO_TRACE:
        return None
    return StepStatsCollector()


def _fill_run_metadata(run_metadata: Any, step: StepState) -> None:
    """Replaces `run_metadata`'s contents with this step's (as TF's ParseFromString)."""
    run_metadata.Clear()
    if step.stats is not None:
        step.stats.to_proto(run_metadata.step_stats)
    for gd in getattr(step, "partition_graphs", None) or ():
        run_metadata.partition_graphs.add().CopyFrom(gd)


class InteractiveSession(Session):
    """A Session that installs itself as the default session on creation."""

    def __init__(self, target: str = "", graph: Any = None, config: Any = None) -> None:
        super().__init__(target, graph, config)
        self._cm = self.as_default()
        self._cm.__enter__()

    def close(self) -> None:
        if not self._closed:
            try:
                self._cm.__exit__(None, None, None)
            except ValueError:
                pass
        super().close()


__all__ = ["Session", "InteractiveSession", "get_default_session", "ConfigProto", "RunOptions"]

"""Issue 15, "messages that tell the truth": `tf.train.Server` raises TF's error classes
(with our clear text), and run-time shape mismatches read as TF words them, plus the
node and the line of the program that created it (not numpy's gufunc text)."""
from __future__ import annotations

import os
import socket

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.topology import free_ports
from suite_markers import PORT

HERE = os.path.basename(__file__)


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_port_in_use_is_unknown_error_naming_port_and_task():
    # TF raises UnknownError ("Could not start gRPC server") for a port it cannot bind.
    (port,) = free_ports(1)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", port))
        busy.listen()
        with pytest.raises(tf.errors.UnknownError) as info:
            tf.train.Server({"ps": [f"localhost:{port}"]}, job_name="ps", task_index=0)
    text = str(info.value)
    assert f":{port}" in text and "in use" in text
    assert "/job:ps/replica:0/task:0" in text and "Free the port" in text


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_bad_address_is_invalid_argument_naming_it():
    # TF: InvalidArgumentError "Could not parse port for local server from ...".
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Could not parse port for local server: Address "
                             "'localhost:http' has port 'http'"):
        tf.train.Server({"ps": ["localhost:http"]}, job_name="ps", task_index=0)


@pytest.mark.transports("grpc", "tcp", "unix", why=PORT)
def test_missing_task_is_invalid_argument_and_missing_job_value_error():
    # As TF: a task index the job lacks is InvalidArgumentError (from the C++ server),
    # a job the cluster lacks is ValueError (from the Python ClusterSpec).
    with pytest.raises(tf.errors.InvalidArgumentError, match="No task with index 2 in job"):
        tf.train.Server({"ps": ["localhost:1"]}, job_name="ps", task_index=2)
    with pytest.raises(ValueError, match="No such job in cluster: 'worker'"):
        tf.train.Server({"ps": ["localhost:1"]}, job_name="worker", task_index=0)


def _run_error(fetch, feed) -> tf.errors.OpError:
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(fetch, feed)
    return info.value


def test_matmul_size_mismatch_in_tf_terms_with_node_and_site(graph):
    a = tf.placeholder(tf.float32, None, name="a")
    b = tf.placeholder(tf.float32, None, name="b")
    product = tf.matmul(a, b, name="product")
    err = _run_error(product, {a: np.ones((3, 5)), b: np.ones((4, 2))})
    first = err.message.splitlines()[0]
    assert first == "Matrix size-incompatible: In[0]: [3,5], In[1]: [4,2]"
    assert "[[node product (op MatMul)" in err.message and HERE in err.message
    assert "gufunc" not in err.message
    err = _run_error(product, {a: np.ones(3), b: np.ones((4, 2))})
    assert err.message.startswith("In[0] is not a matrix. Instead it has shape [3]")


def test_batch_matmul_mismatches_in_tf_terms(graph):
    x = tf.placeholder(tf.float32, [None, None, None])
    y = tf.placeholder(tf.float32, [None, None, None])
    z = tf.matmul(x, y)
    err = _run_error(z, {x: np.ones((2, 3, 5)), y: np.ones((2, 4, 2))})
    assert err.message.startswith("Matrix size-incompatible: In[0]: [2,3,5], In[1]: [2,4,2]")
    err = _run_error(z, {x: np.ones((2, 3, 4)), y: np.ones((3, 4, 2))})
    assert err.message.startswith("In[0] and In[1] must have compatible batch dimensions: "
                                  "[2,3,4] vs. [3,4,2]")


@pytest.mark.parametrize("build", [tf.add, tf.multiply, tf.maximum, tf.equal],
                         ids=["add", "multiply", "maximum", "equal"])
def test_broadcast_mismatch_in_tf_terms_with_node_and_site(graph, build):
    x = tf.placeholder(tf.float32, None, name="x")
    y = tf.placeholder(tf.float32, None, name="y")
    z = build(x, y, name="combined")
    err = _run_error(z, {x: np.ones((2, 3)), y: np.ones(4)})
    assert err.message.splitlines()[0] == "Incompatible shapes: [2,3] vs. [4]"
    assert f"[[node combined (op {z.op.type})" in err.message and HERE in err.message
    assert "could not be broadcast" not in err.message


def test_broadcast_mismatch_in_a_distributed_step(inprocess_cluster, graph):
    spec, _ = inprocess_cluster
    with tf.device("/job:ps/task:0"):
        x = tf.placeholder(tf.float32, None, name="x")
        z = tf.add(x, tf.placeholder_with_default(np.ones(4, np.float32), [None]), name="sum")
    with tf.Session(f"grpc://{spec['worker'][0]}") as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            sess.run(z, {x: np.ones((2, 3))})
    assert info.value.message.startswith("Incompatible shapes: [2,3] vs. [4]")
    assert "[[node sum (op AddV2) on device /job:ps" in info.value.message


def test_a_failing_step_names_its_task_alone_or_with_other_parts(inprocess_cluster, graph):
    """A part's error says which task it ran on: a step whose only part is the
    master's own task (run in the master's thread, no calls), and a step whose
    failing part is on the ps while another part runs on the worker."""
    spec, _ = inprocess_cluster
    with tf.device("/job:worker/task:0"):
        here = tf.debugging.check_numerics(tf.placeholder(tf.float32, [2]), "here bad")
    with tf.device("/job:ps/task:0"):
        there = tf.debugging.check_numerics(tf.placeholder(tf.float32, [2]), "there bad")
    with tf.device("/job:worker/task:0"):
        both = tf.identity(there) + 1.0
    inf = np.array([np.inf, 1.0], np.float32)
    with tf.Session(f"grpc://{spec['worker'][0]}") as sess:
        with pytest.raises(tf.errors.InvalidArgumentError) as alone:
            sess.run(here, {here.op.inputs[0]: inf})
        with pytest.raises(tf.errors.InvalidArgumentError) as with_others:
            sess.run(both, {there.op.inputs[0]: inf})
    assert "here bad" in alone.value.message
    assert "/job:worker/replica:0/task:0" in alone.value.message  # its node's device
    assert "there bad" in with_others.value.message
    assert "/job:ps/replica:0/task:0" in with_others.value.message

"""framework/device.py as the one home of task and device names: the helpers the
runtime, master, worker and session code use instead of building strings by hand."""
from __future__ import annotations

import doctest

import pytest

from tensorweave.framework import device as device_module
from tensorweave.framework.device import (device_task, parse_task_name, task_device, task_name,
                                          tasks_named)
from tensorweave.runtime.rendezvous import make_key, recv_task


def test_task_and_device_names_round_trip():
    task = task_name("ps", 2)
    assert task == "/job:ps/replica:0/task:2"
    assert task_device(task) == "/job:ps/replica:0/task:2/device:CPU:0"
    assert task_device(task, "GPU", 1) == "/job:ps/replica:0/task:2/device:GPU:1"
    assert device_task(task_device(task)) == task
    assert parse_task_name(task_device(task)) == ("ps", 2)


def test_device_task_canonicalizes_and_refuses_a_device_of_no_task():
    assert device_task("/job:worker/task:1/cpu:0") == "/job:worker/replica:0/task:1"
    assert device_task("/job:w/replica:3/task:0/device:CPU:0") == "/job:w/replica:3/task:0"
    with pytest.raises(ValueError, match="'/device:CPU:0' names no task"):
        device_task("/device:CPU:0")


def test_tasks_named_finds_each_task_of_a_message_once_in_order():
    text = ("Could not reach /job:ps/replica:0/task:1 (and /job:worker/task:0); "
            "/job:ps/replica:0/task:1 again, /job:my-job.v2/replica:0/task:12.")
    assert tasks_named(text) == ["/job:ps/replica:0/task:1", "/job:worker/task:0",
                                 "/job:my-job.v2/replica:0/task:12"]
    assert tasks_named("no task here: /device:CPU:0") == []


def test_recv_task_is_the_receiving_device_s_task():
    key = make_key(task_device(task_name("worker", 0)), task_device(task_name("ps", 1)), "x:0")
    assert recv_task(key) == "/job:ps/replica:0/task:1"
    # A key between devices of no task (an in-process session's) stays local: the device.
    assert recv_task(make_key("/device:CPU:0", "/device:CPU:0", "y:0")) == "/device:CPU:0"


def test_doctests():
    result = doctest.testmod(device_module)
    assert result.attempted > 0 and result.failed == 0

"""What TF 1.x's framework/device_test.py (and device_spec_test.py) check of
`tf.DeviceSpec`: parsing in any field order, the legacy "/cpu:0" spelling,
wildcards, mutation, merging and the errors for malformed specs."""
import pytest

import tensorweave as tf
from tensorweave.framework.device import canonical

DeviceSpec = tf.DeviceSpec


def test_empty_spec():
    d = DeviceSpec()
    assert d.to_string() == ""
    d.parse_from_string("")
    assert d.to_string() == ""


def test_constructor_fields_and_string():
    d = DeviceSpec(job="j", replica=0, task=1, device_type="CPU", device_index=2)
    assert (d.job, d.replica, d.task, d.device_type, d.device_index) == ("j", 0, 1, "CPU", 2)
    assert d.to_string() == "/job:j/replica:0/task:1/device:CPU:2"
    assert DeviceSpec(device_type="GPU", device_index=0).to_string() == "/device:GPU:0"
    # lower-case cpu/gpu are the legacy spelling: upper-cased
    assert DeviceSpec(job="foo", task=3, device_type="cpu", device_index=0).to_string() == \
        "/job:foo/task:3/device:CPU:0"
    assert DeviceSpec(job="foo", replica=12, device_type="gpu", device_index=2).to_string() \
        == "/job:foo/replica:12/device:GPU:2"


def test_mutation_and_wildcard_index():
    d = DeviceSpec()
    d.job = "foo"
    assert d.to_string() == "/job:foo"
    d.task = 3
    assert d.to_string() == "/job:foo/task:3"
    d.device_type, d.device_index = "CPU", 0
    assert d.to_string() == "/job:foo/task:3/device:CPU:0"
    d.task, d.replica = None, 12
    assert d.to_string() == "/job:foo/replica:12/device:CPU:0"
    d.device_type, d.device_index = None, None
    assert d.to_string() == "/job:foo/replica:12"
    assert DeviceSpec(job="foo", replica=12, task=3, device_type="GPU").to_string() == \
        "/job:foo/replica:12/task:3/device:GPU:*"


def test_replace_returns_a_new_spec():
    d = DeviceSpec().replace(job="foo")
    assert d.to_string() == "/job:foo"
    d = d.replace(task=3).replace(device_type="CPU", device_index=0)
    assert d.to_string() == "/job:foo/task:3/device:CPU:0"
    d2 = d.replace(task=None, replica=12)
    assert d2.to_string() == "/job:foo/replica:12/device:CPU:0"
    assert d.to_string() == "/job:foo/task:3/device:CPU:0"  # unchanged


@pytest.mark.parametrize("text, expected, fields", [
    ("/job:foo/replica:0", "/job:foo/replica:0", {"job": "foo", "replica": 0}),
    ("/replica:1/task:0/cpu:0", "/replica:1/task:0/device:CPU:0",
     {"replica": 1, "task": 0, "device_type": "CPU", "device_index": 0}),
    ("/replica:1/task:0/device:CPU:0", "/replica:1/task:0/device:CPU:0",
     {"replica": 1, "task": 0, "device_type": "CPU", "device_index": 0}),
    ("/job:muu/device:GPU:2", "/job:muu/device:GPU:2",
     {"job": "muu", "device_type": "GPU", "device_index": 2}),
    ("/job:muu/task:1/device:MyFunnyDevice:2", "/job:muu/task:1/device:MyFunnyDevice:2",
     {"device_type": "MyFunnyDevice"}),  # other device types keep their case
])
def test_parse_from_string_and_from_string(text, expected, fields):
    for d in (DeviceSpec.from_string(text), DeviceSpec().parse_from_string(text)):
        assert d.to_string() == expected
        assert {k: getattr(d, k) for k in fields} == fields


@pytest.mark.parametrize("text, expected", [
    ("/job:foo/replica:0", "/job:foo/replica:0"),
    ("/replica:0/job:foo", "/job:foo/replica:0"),
    ("/job:foo/task:0/replica:0", "/job:foo/replica:0/task:0"),
    ("/device:CPU:0", "/device:CPU:0"),
    ("/device:GPU:2", "/device:GPU:2"),
    ("/device:GPU:0/task:0/replica:0/job:foo", "/job:foo/replica:0/task:0/device:GPU:0"),
])
def test_canonical_name_orders_fields(text, expected):
    assert canonical(text) == expected


@pytest.mark.parametrize("text, message", [
    ("/job:j/replica:foo", "replica:foo"),
    ("/job:j/task:bar", "task:bar"),
    ("/barcpugpu:muu/baz:2", "barcpugpu"),
    ("/cpu:0/device:GPU:2", "multiple device types"),
    ("/job:muu/device:GPU:2/cpu:0", "multiple device types"),
])
def test_malformed_specs_are_value_errors_naming_the_part(text, message):
    with pytest.raises(ValueError, match=message):
        DeviceSpec.from_string(text)


def test_merge_from_and_make_merged_spec():
    d = DeviceSpec.from_string("/job:foo/replica:0")
    d.merge_from(DeviceSpec.from_string("/task:1/device:GPU:2"))
    assert d.to_string() == "/job:foo/replica:0/task:1/device:GPU:2"
    d = DeviceSpec()
    d.merge_from(DeviceSpec.from_string("/task:1/cpu:0"))
    assert d.to_string() == "/task:1/device:CPU:0"
    d.merge_from(DeviceSpec.from_string("/job:boo/device:GPU:0"))
    assert d.to_string() == "/job:boo/task:1/device:GPU:0"
    d.merge_from(DeviceSpec.from_string("/job:muu/cpu:2"))
    assert d.to_string() == "/job:muu/task:1/device:CPU:2"
    d.merge_from(DeviceSpec.from_string("/job:muu/device:MyFunnyDevice:2"))
    assert d.to_string() == "/job:muu/task:1/device:MyFunnyDevice:2"
    base = DeviceSpec.from_string("/job:foo/replica:0")
    merged = base.make_merged_spec(DeviceSpec.from_string("/task:1/device:GPU:2"))
    assert merged.to_string() == "/job:foo/replica:0/task:1/device:GPU:2"
    assert base.to_string() == "/job:foo/replica:0"


def test_nested_device_scopes_merge_like_merge_device():
    with tf.Graph().as_default():
        with tf.device("/device:GPU:0"):
            v1 = tf.Variable(1.0)
            with tf.device("/job:worker"):
                v2 = tf.Variable(1.0)
                with tf.device("/device:CPU:0"):
                    v3 = tf.Variable(1.0)
                    with tf.device("/job:ps"):
                        v4 = tf.Variable(1.0)
    assert v1.device == "/device:GPU:0"
    assert v2.device == "/job:worker/device:GPU:0"
    assert v3.device == "/job:worker/device:CPU:0"
    assert v4.device == "/job:ps/device:CPU:0"

"""ClusterSpec (TF 1.x semantics), its runtime helpers, cluster.proto and TF_CONFIG."""
from __future__ import annotations

import doctest
import json

import pytest

from tensorweave.distributed import cluster as cluster_module
from tensorweave.distributed import tf_config as tf_config_module
from tensorweave.distributed.cluster import ClusterSpec
from tensorweave.distributed.protocol.cluster_pb2 import ClusterDef, JobDef, ServerDef
from tensorweave.distributed.tf_config import TFConfig, load_tf_config, parse_tf_config
from tensorweave.framework.device import DeviceSpec

SPEC = {"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222", "w1:2222", "w2:2222"]}


# ----- construction ------------------------------------------------------------

def test_from_dict_of_lists():
    c = ClusterSpec(SPEC)
    assert c.jobs == ["ps", "worker"]
    assert c.num_tasks("ps") == 2 and c.num_tasks("worker") == 3
    assert c.task_indices("worker") == [0, 1, 2]
    assert c.task_address("worker", 2) == "w2:2222"
    assert c.as_dict() == SPEC


def test_from_tuple_and_sparse_dict():
    c = ClusterSpec({"ps": ("p0:1",), "worker": {3: "w3:1", 1: "w1:1"}})
    assert c.task_indices("worker") == [1, 3]
    assert c.num_tasks("worker") == 2
    assert c.task_address("worker", 3) == "w3:1"


def test_from_cluster_spec_is_a_copy():
    a = ClusterSpec(SPEC)
    b = ClusterSpec(a)
    assert a == b and a is not b
    b._cluster_spec["ps"][5] = "x:1"
    assert a.num_tasks("ps") == 2


def test_from_cluster_def():
    cd = ClusterDef()
    job = cd.job.add(name="worker")
    job.tasks[0] = "w0:1"
    job.tasks[2] = "w2:1"
    c = ClusterSpec(cd)
    assert c.as_dict() == {"worker": {0: "w0:1", 2: "w2:1"}}


def test_cluster_def_with_duplicate_job_names():
    cd = ClusterDef(job=[JobDef(name="ps", tasks={0: "a:1"}), JobDef(name="ps", tasks={1: "b:1"})])
    with pytest.raises(ValueError, match="'ps' is defined twice"):
        ClusterSpec(cd)


def test_bytes_job_names_and_addresses_are_accepted():
    c = ClusterSpec({b"ps": [b"p0:1"]})
    assert c.as_dict() == {"ps": ["p0:1"]}


def test_empty_cluster_and_empty_job():
    assert not ClusterSpec({})
    assert ClusterSpec({"ps": []})  # A job with no tasks still makes a non-empty cluster.
    c = ClusterSpec({"ps": []})
    assert c.as_dict() == {"ps": {}}
    assert c.job_tasks("ps") == []
    assert c.num_tasks("ps") == 0


@pytest.mark.parametrize("bad", [["a:1", "b:1"], "ps0:2222", 3, None, ("a:1",)])
def test_type_error_for_non_clusters(bad):
    with pytest.raises(TypeError, match=type(bad).__name__) as info:
        ClusterSpec(bad)
    assert "ClusterDef" in str(info.value)


def test_type_error_for_bad_job_name_tasks_index_address():
    with pytest.raises(TypeError, match="Job name 1"):
        ClusterSpec({1: ["a:1"]})
    with pytest.raises(TypeError, match="tasks for job 'ps'.*str"):
        ClusterSpec({"ps": "a:1"})
    with pytest.raises(TypeError, match="Task index '0' of job 'ps' must be an integer"):
        ClusterSpec({"ps": {"0": "a:1"}})
    with pytest.raises(TypeError, match="Task index True"):
        ClusterSpec({"ps": {True: "a:1"}})
    with pytest.raises(TypeError, match="/job:ps/task:0.*2222"):
        ClusterSpec({"ps": [2222]})
    with pytest.raises(ValueError, match="Task index -1 of job 'ps' is negative"):
        ClusterSpec({"ps": {-1: "a:1"}})


# ----- queries and errors --------------------------------------------------------

def test_jobs_are_sorted_and_task_indices_sorted():
    c = ClusterSpec({"worker": {5: "a:1", 0: "b:1", 2: "c:1"}, "chief": ["c:1"], "ps": ["p:1"]})
    assert c.jobs == ["chief", "ps", "worker"]
    assert c.task_indices("worker") == [0, 2, 5]


def test_job_tasks_has_none_in_gaps():
    c = ClusterSpec({"worker": {0: "w0:1", 3: "w3:1"}})
    assert c.job_tasks("worker") == ["w0:1", None, None, "w3:1"]
    assert ClusterSpec({"w": {2: "x:1"}}).job_tasks("w") == [None, None, "x:1"]


def test_as_dict_list_when_dense_dict_when_sparse():
    c = ClusterSpec({"dense": {1: "b:1", 0: "a:1"}, "sparse": {0: "a:1", 2: "c:1"},
                     "offset": {1: "b:1"}})
    assert c.as_dict() == {"dense": ["a:1", "b:1"], "offset": {1: "b:1"},
                           "sparse": {0: "a:1", 2: "c:1"}}
    assert isinstance(c.as_dict()["dense"], list)
    assert isinstance(c.as_dict()["sparse"], dict)


def test_unknown_job_is_a_value_error_naming_it_and_the_known_jobs():
    c = ClusterSpec(SPEC)
    for call in (lambda: c.num_tasks("chief"), lambda: c.task_indices("chief"),
                 lambda: c.job_tasks("chief"), lambda: c.task_address("chief", 0),
                 lambda: c.task_device("chief", 0)):
        with pytest.raises(ValueError,
                           match=r"No such job in cluster: 'chief'.*\['ps', 'worker'\]"):
            call()


def test_unknown_task_is_a_value_error_naming_it_and_the_known_tasks():
    c = ClusterSpec(SPEC)
    with pytest.raises(ValueError,
                       match=r"No task with index 7 in job 'ps'; it has tasks \[0, 1\]"):
        c.task_address("ps", 7)
    with pytest.raises(ValueError, match="No task with index 2 in job 'ps'"):
        c.task_device("ps", 2)


# ----- equality, bool, repr, hash -----------------------------------------------

def test_equality_by_content_design_example():
    assert ClusterSpec({"j": {0: "h"}}) == ClusterSpec({"j": ["h"]})
    assert ClusterSpec({"j": ["h"]}) == {"j": {0: "h"}}
    assert ClusterSpec({"j": ["h"]}) == {"j": ["h"]}
    assert {"j": ["h"]} == ClusterSpec({"j": ["h"]})
    assert not ClusterSpec({"j": ["h"]}) != ClusterSpec({"j": {0: "h"}})


def test_inequality():
    c = ClusterSpec(SPEC)
    assert c != ClusterSpec({"ps": ["ps0:2222"]})
    assert c != {"ps": ["other:1"], "worker": SPEC["worker"]}
    assert ClusterSpec({"j": {1: "h"}}) != ClusterSpec({"j": ["h"]})
    assert c != "not a cluster" and not (c == 3) and c != [1, 2]
    assert c != {"ps": 5}  # Not convertible: unequal, not an exception.


def test_equal_to_its_cluster_def():
    c = ClusterSpec(SPEC)
    assert c == c.as_cluster_def()


def test_bool():
    assert ClusterSpec(SPEC)
    assert not ClusterSpec({})


def test_repr_like_tf():
    c = ClusterSpec({"worker": {0: "w0:1", 2: "w2:1"}, "ps": ["ps0:2222"]})
    assert repr(c) == "ClusterSpec({'ps': ['ps0:2222'], 'worker': {0: 'w0:1', 2: 'w2:1'}})"
    assert str(c) == repr(c)
    assert repr(ClusterSpec({})) == "ClusterSpec({})"


def test_not_hashable():
    with pytest.raises(TypeError):
        hash(ClusterSpec(SPEC))


# ----- ClusterDef round trip and the protos ---------------------------------------

def test_round_trip_through_cluster_def():
    c = ClusterSpec({"ps": ["p0:1", "p1:1"], "worker": {0: "w0:1", 4: "w4:1"}})
    cd = c.as_cluster_def()
    assert [j.name for j in cd.job] == ["ps", "worker"]
    assert dict(cd.job[1].tasks) == {0: "w0:1", 4: "w4:1"}
    assert ClusterSpec(cd) == c
    wire = ClusterDef.FromString(cd.SerializeToString())
    assert ClusterSpec(wire).as_dict() == c.as_dict()


def test_as_cluster_def_returns_a_fresh_copy():
    c = ClusterSpec(SPEC)
    c.as_cluster_def().job[0].tasks[9] = "x:1"
    assert c.num_tasks("ps") == 2


def test_server_def_holds_cluster_and_session_config():
    sd = ServerDef(cluster=ClusterSpec(SPEC).as_cluster_def(), job_name="worker",
                   task_index=1, protocol="grpc", port=2222)
    sd.default_session_config.allow_soft_placement = True
    back = ServerDef.FromString(sd.SerializeToString())
    assert ClusterSpec(back.cluster) == SPEC
    assert (back.job_name, back.task_index, back.protocol, back.port) == ("worker", 1, "grpc", 2222)
    assert back.default_session_config.allow_soft_placement


def test_tf_field_numbers():
    assert JobDef.DESCRIPTOR.fields_by_name["tasks"].number == 2
    assert ClusterDef.DESCRIPTOR.fields_by_name["job"].number == 1
    numbers = {f.name: f.number for f in ServerDef.DESCRIPTOR.fields}
    assert numbers == {"cluster": 1, "job_name": 2, "task_index": 3,
                       "default_session_config": 4, "protocol": 5, "port": 6}


# ----- runtime helpers ------------------------------------------------------------

def test_task_device_and_all_tasks():
    c = ClusterSpec({"worker": {0: "w0:1", 2: "w2:1"}, "ps": ["p0:1"]})
    assert c.task_device("worker", 2) == "/job:worker/replica:0/task:2"
    assert DeviceSpec.from_string(c.task_device("ps", 0)).task == 0
    assert c.all_tasks() == [("ps", 0), ("worker", 0), ("worker", 2)]
    assert ClusterSpec({}).all_tasks() == []


def test_validate_device_accepts_known_and_unqualified_devices():
    c = ClusterSpec(SPEC)
    assert c.validate_device("/job:ps/task:1/cpu:0").task == 1
    assert c.validate_device("/job:worker").job == "worker"
    assert c.validate_device("/cpu:0").device_type == "CPU"
    assert c.validate_device("").job is None
    assert c.validate_device(None).job is None
    assert c.validate_device(DeviceSpec(job="ps", task=0)).task == 0


def test_validate_device_names_the_missing_task():
    c = ClusterSpec(SPEC)
    with pytest.raises(ValueError) as info:
        c.validate_device("/job:ps/task:3")
    assert str(info.value) == ("Device /job:ps/task:3 names task 3 of job 'ps', which has "
                               "tasks [0, 1]. Check tf.device(...) and the ClusterSpec.")


def test_validate_device_names_the_missing_job():
    with pytest.raises(ValueError, match=r"names job 'chief'.*\['ps', 'worker'\]"):
        ClusterSpec(SPEC).validate_device("/job:chief/task:0")


def test_validate_device_rejects_malformed_strings():
    with pytest.raises(ValueError, match="Invalid device specification"):
        ClusterSpec(SPEC).validate_device("/job:ps/task:x")


# ----- TF_CONFIG ---------------------------------------------------------------------

TF_CONFIG = {"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"],
                         "ps": ["p0:2222"]},
             "task": {"type": "worker", "index": 1}, "environment": "cloud"}


def test_tf_config_from_json_text():
    cfg = parse_tf_config(json.dumps({**TF_CONFIG, "rpc_layer": "grpc"}))
    assert isinstance(cfg, TFConfig)
    spec, task_type, task_index, rpc_layer = cfg
    assert spec == TF_CONFIG["cluster"]
    assert (task_type, task_index, rpc_layer) == ("worker", 1, "grpc")


def test_tf_config_from_environment(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(TF_CONFIG))
    cfg = parse_tf_config()
    assert cfg.task_type == "worker" and cfg.task_index == 1 and cfg.rpc_layer is None
    assert load_tf_config()["environment"] == "cloud"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_tf_config_unset_or_blank_means_local(monkeypatch, value):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    cfg = parse_tf_config(value)
    assert cfg == (ClusterSpec({}), None, None, None)
    assert not cfg.cluster_spec


def test_tf_config_from_dict_and_defaults():
    cfg = parse_tf_config({"cluster": {"ps": ["p0:1"]}, "task": {"type": "ps"}})
    assert cfg.task_index == 0
    assert parse_tf_config({"cluster": {"ps": ["p0:1"]}}).task_type is None
    assert parse_tf_config({"task": {"type": "worker", "index": 3}}).task_index == 3


def test_tf_config_sparse_cluster_and_string_indices():
    cfg = parse_tf_config('{"cluster": {"worker": {"0": "w0:1", "2": "w2:1"}},'
                          ' "task": {"type": "worker", "index": "2"}}')
    assert cfg.cluster_spec.job_tasks("worker") == ["w0:1", None, "w2:1"]
    assert cfg.task_index == 2


def test_tf_config_evaluator_may_be_outside_the_cluster():
    cfg = parse_tf_config({**TF_CONFIG, "task": {"type": "evaluator", "index": 0}})
    assert cfg.task_type == "evaluator"


def test_tf_config_malformed_json():
    with pytest.raises(ValueError, match=r"TF_CONFIG is not valid JSON.*line 1 column") as info:
        parse_tf_config('{"cluster": {"worker": ["w0:1",]}')
    assert '"task"' in str(info.value)  # Shows an example of what to set.


@pytest.mark.parametrize("text, message", [
    ('["w0:1"]', "must be a JSON object, got list"),
    ('{"cluster": ["w0:1"]}', "'cluster' must be an object"),
    ('{"cluster": {"worker": "w0:1"}}', "not a valid cluster: The tasks for job 'worker'"),
    ('{"cluster": {"worker": {"x": "w0:1"}}}', "cluster.worker key must be a non-negative"),
    ('{"task": "worker"}', "'task' must be an object"),
    ('{"task": {"index": 0}}', "has index 0 but no 'type'"),
    ('{"task": {"type": true, "index": 0}}', "'task.type' must be a job name"),
    ('{"task": {"type": ["worker"], "index": 0}}', "'task.type' must be a job name"),
    ('{"task": {"type": "worker", "index": -1}}', "task.index must be a non-negative"),
    ('{"task": {"type": "worker", "index": 1.5}}', "task.index must be a non-negative"),
    ('{"rpc_layer": 5}', "'rpc_layer' must be a string"),
])
def test_tf_config_malformed_content(text, message):
    with pytest.raises(ValueError, match=message):
        parse_tf_config(text)


def test_tf_config_task_type_not_in_cluster():
    with pytest.raises(ValueError,
                       match=r"task type 'master' is not a job.*\['chief', 'ps', 'worker'\]"):
        parse_tf_config({**TF_CONFIG, "task": {"type": "master", "index": 0}})


def test_tf_config_task_index_not_in_cluster():
    with pytest.raises(ValueError, match=r"task index 5 is not a task of job 'worker'.*\[0, 1\]"):
        parse_tf_config({**TF_CONFIG, "task": {"type": "worker", "index": 5}})


def test_load_tf_config_type_error():
    with pytest.raises(TypeError, match="list"):
        load_tf_config(["x"])


# ----- docstring examples ---------------------------------------------------------------

@pytest.mark.parametrize("module", [cluster_module, tf_config_module])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0

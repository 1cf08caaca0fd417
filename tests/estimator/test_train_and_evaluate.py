"""tf.estimator.TrainSpec / EvalSpec / train_and_evaluate (what TF 1.x's training_test.py
checks, in our words): spec validation, the local loop, the evaluator role, and the
evaluator task that `tensorweave launch --evaluator` / `tensorweave manifest --evaluator`
add. The whole program on a launched cluster is in test_estimator_cluster.py."""
import base64
import json
import threading

import pytest

import tensorweave as tf
from estimator_helpers import eval_input_fn, make_estimator, train_input_fn
from tensorweave.distributed.topology import Task, Topology, free_ports
from tensorweave.estimator import run_setup
from tensorweave.launch.cli import build_parser
from tensorweave.launch.launcher import Launcher, LaunchOptions
from tensorweave.launch.progress import ProgressTracker
from tensorweave.launch.manifest import ManifestOptions, build_manifests
from suite_markers import WHOLE_JOB

TrainSpec, EvalSpec = tf.estimator.TrainSpec, tf.estimator.EvalSpec


class _Hook(tf.train.SessionRunHook):
    pass


class _Exporter(tf.estimator.Exporter):
    """Records each call (the export itself is tested with SavedModel export)."""

    def __init__(self, name="rec"):
        self._name = name
        self.calls = []

    @property
    def name(self):
        return self._name

    def export(self, estimator, export_path, checkpoint_path, eval_result,
               is_the_final_export):
        self.calls.append((int(eval_result["global_step"]), is_the_final_export, export_path))
        return export_path.encode()


# ---- specs -----------------------------------------------------------------------------

def test_train_spec_fields_and_checks():
    spec = TrainSpec(train_input_fn, max_steps=10, hooks=[_Hook()])
    assert spec.max_steps == 10 and len(spec.hooks) == 1 and spec.input_fn is train_input_fn
    assert TrainSpec(train_input_fn).max_steps is None
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        TrainSpec("data")
    with pytest.raises(ValueError, match="max_steps > 0"):
        TrainSpec(train_input_fn, max_steps=0)
    with pytest.raises(TypeError, match="SessionRunHook"):
        TrainSpec(train_input_fn, hooks=[object()])


def test_eval_spec_defaults_are_tfs():
    spec = EvalSpec(eval_input_fn)
    assert (spec.steps, spec.name, spec.hooks, spec.exporters) == (100, None, (), ())
    assert (spec.start_delay_secs, spec.throttle_secs) == (120, 600)


def test_eval_spec_checks():
    with pytest.raises(TypeError, match="`input_fn` must be callable"):
        EvalSpec(None)
    with pytest.raises(ValueError, match="steps > 0"):
        EvalSpec(eval_input_fn, steps=0)
    with pytest.raises(TypeError, match="`name` must be string"):
        EvalSpec(eval_input_fn, name=1)
    with pytest.raises(ValueError, match="start_delay_secs >= 0"):
        EvalSpec(eval_input_fn, start_delay_secs=-1)
    with pytest.raises(ValueError, match="throttle_secs >= 0"):
        EvalSpec(eval_input_fn, throttle_secs=-1)
    with pytest.raises(TypeError, match="SessionRunHook"):
        EvalSpec(eval_input_fn, hooks=[1])


def test_eval_spec_exporters():
    one = _Exporter("a")
    assert EvalSpec(eval_input_fn, exporters=one).exporters == (one,)
    assert EvalSpec(eval_input_fn, exporters=[one, _Exporter("b")]).exporters[0] is one
    with pytest.raises(ValueError, match="unique names.*'a'"):
        EvalSpec(eval_input_fn, exporters=[one, _Exporter("a")])
    with pytest.raises(ValueError, match="name that is empty"):
        EvalSpec(eval_input_fn, exporters=[_Exporter("")])
    with pytest.raises(ValueError, match="must have a string name, given 123"):
        EvalSpec(eval_input_fn, exporters=[_Exporter(123)])
    with pytest.raises(TypeError, match="`exporters` must be an Exporter"):
        EvalSpec(eval_input_fn, exporters=[object()])


def test_train_and_evaluate_argument_types(tmp_path):
    est = make_estimator(tmp_path)
    train, evaluate = TrainSpec(train_input_fn, 5), EvalSpec(eval_input_fn)
    with pytest.raises(TypeError, match="`estimator` must have type"):
        tf.estimator.train_and_evaluate(object(), train, evaluate)
    with pytest.raises(TypeError, match="`train_spec` must have type"):
        tf.estimator.train_and_evaluate(est, evaluate, evaluate)
    with pytest.raises(TypeError, match="`eval_spec` must have type"):
        tf.estimator.train_and_evaluate(est, train, train)


# ---- local mode -----------------------------------------------------------------------------

def test_local_mode_evaluates_each_new_checkpoint_then_the_last(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    est = make_estimator(tmp_path, save_checkpoints_steps=40)
    exporter = _Exporter()
    metrics, exports = tf.estimator.train_and_evaluate(
        est, TrainSpec(train_input_fn, max_steps=100),
        EvalSpec(eval_input_fn, steps=None, throttle_secs=0, exporters=exporter))
    assert metrics["global_step"] == 100 and metrics["accuracy"] > 0.85
    # saves at 0 (not evaluated: the untrained model), 40, 80, and the final 100
    assert [(step, final) for step, final, _ in exporter.calls] == [
        (40, False), (80, False), (100, True)]
    assert exporter.calls[0][2] == str(tmp_path / "export" / "rec")
    assert exports == [(tmp_path / "export" / "rec").as_posix().encode()] * 3


def test_local_mode_throttles_evaluations_but_always_evaluates_the_end(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    est = make_estimator(tmp_path, save_checkpoints_steps=10)
    exporter = _Exporter()
    metrics, _ = tf.estimator.train_and_evaluate(
        est, TrainSpec(train_input_fn, max_steps=50),
        EvalSpec(eval_input_fn, steps=1, throttle_secs=3600, exporters=exporter))
    # The first save after step 0 is evaluated; the throttle skips the others; the last
    # checkpoint is evaluated at the end.
    assert [step for step, _, _ in exporter.calls] == [10, 50]
    assert metrics["global_step"] == 50


def test_local_mode_needs_checkpoints(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    est = make_estimator(tmp_path, save_checkpoints_steps=None, save_checkpoints_secs=None)
    with pytest.raises(ValueError, match="save_checkpoints_steps or save_checkpoints_secs"):
        tf.estimator.train_and_evaluate(est, TrainSpec(train_input_fn, max_steps=5),
                                        EvalSpec(eval_input_fn))


# ---- TF_CONFIG roles ---------------------------------------------------------------------------

CLUSTER = {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]}


def _tf_config(monkeypatch, task_type, index=0, cluster=CLUSTER):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": cluster, "task": {"type": task_type, "index": index}}))


def test_only_evaluator_zero(tmp_path, monkeypatch):
    _tf_config(monkeypatch, "evaluator", 1)
    est = make_estimator(tmp_path)
    with pytest.raises(ValueError, match="only be one `evaluator` task.*task id 1"):
        tf.estimator.train_and_evaluate(est, TrainSpec(train_input_fn, 5),
                                        EvalSpec(eval_input_fn))


def test_unknown_task_type_is_named(tmp_path, monkeypatch):
    _tf_config(monkeypatch, "trainer", 0, cluster={**CLUSTER, "trainer": ["127.0.0.1:4"]})
    est = make_estimator(tmp_path)
    with pytest.raises(ValueError, match="Task type 'trainer' is not supported"):
        tf.estimator.train_and_evaluate(est, TrainSpec(train_input_fn, 5),
                                        EvalSpec(eval_input_fn))


def test_evaluator_waits_for_checkpoints_and_stops_after_the_final_one(tmp_path, monkeypatch):
    """The evaluator polls model_dir while another Estimator (the chief's stand-in) trains
    in a thread; it must evaluate the final checkpoint and return by itself."""
    monkeypatch.delenv("TF_CONFIG", raising=False)
    trainer = make_estimator(tmp_path, save_checkpoints_steps=25)
    _tf_config(monkeypatch, "evaluator")
    evaluator_est = make_estimator(tmp_path)
    assert evaluator_est.config.task_type == "evaluator"
    exporter = _Exporter()
    errors = []

    def train():
        try:
            trainer.train(train_input_fn, max_steps=100)
        except Exception as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    thread = threading.Thread(target=train)
    thread.start()
    try:
        result = tf.estimator.train_and_evaluate(
            evaluator_est, TrainSpec(train_input_fn, max_steps=100),
            EvalSpec(eval_input_fn, steps=None, start_delay_secs=0, throttle_secs=0,
                     exporters=exporter))
    finally:
        thread.join()
    assert result is None and not errors
    steps = [step for step, _, _ in exporter.calls]
    assert steps and steps[-1] == 100 and steps == sorted(set(steps))
    assert exporter.calls[-1][1] is True and not any(final for _, final, _ in exporter.calls[:-1])
    tags = {v.tag for f in (tmp_path / "eval").glob("events.*")
            for e in tf.train.summary_iterator(str(f)) for v in e.summary.value}
    assert {"accuracy", "loss"} <= tags


# ---- the evaluator task in launch and manifest -----------------------------------------------

def test_topology_evaluator_is_a_task_outside_the_cluster():
    topo = Topology.local(ps=1, workers=1, chief=True, evaluator=True)
    assert [t.name for t in topo.tasks] == ["ps 0", "chief 0", "worker 0", "evaluator 0"]
    config = topo.tf_config(Task("evaluator", 0))
    assert "evaluator" not in config["cluster"]
    assert config["task"] == {"type": "evaluator", "index": 0}
    assert topo.address(Task("evaluator", 0)) == ""
    with pytest.raises(ValueError, match="no evaluator task"):
        topo.seed_flags(Task("worker", 0))
    with pytest.raises(ValueError, match="evaluator is not a job of the cluster"):
        Topology({"worker": ["a:1"], "evaluator": ["b:2"]})


def test_manifest_evaluator_replica_and_plain_job():
    opts = ManifestOptions(ps=1, workers=1, image="img", command=["python", "m.py"],
                           chief=True, evaluator=True, kind="both")
    docs = build_manifests(opts)
    specs = docs[0]["spec"]["tfReplicaSpecs"]
    assert list(specs) == ["PS", "Chief", "Worker", "Evaluator"]
    assert specs["Evaluator"]["replicas"] == 1
    jobs = [d for d in docs if d["kind"] == "Job"]
    services = [d["metadata"]["name"] for d in docs if d["kind"] == "Service"]
    assert "tensorweave-evaluator" not in services
    evaluator = [j for j in jobs if j["metadata"]["name"] == "tensorweave-evaluator-0"]
    assert len(evaluator) == 1
    env = {e["name"]: e["value"]
           for e in evaluator[0]["spec"]["template"]["spec"]["containers"][0]["env"]}
    config = json.loads(env["TF_CONFIG"])
    assert config["task"] == {"type": "evaluator", "index": 0}
    assert set(config["cluster"]) == {"ps", "chief", "worker"}
    with pytest.raises(ValueError, match="--evaluator and --pass-flags"):
        build_manifests(ManifestOptions(ps=1, workers=1, image="i", command=["x"],
                                        evaluator=True, pass_flags=True, kind="plain"))


def test_tf_config_as_base64_json_paperspace_form(tmp_path, monkeypatch):
    config = {"cluster": CLUSTER, "task": {"type": "worker", "index": 0}}
    text = json.dumps(config).encode()
    for encoded in (base64.b64encode(text), base64.urlsafe_b64encode(text).rstrip(b"=")):
        monkeypatch.setenv("TF_CONFIG", encoded.decode())
        run_config = tf.estimator.RunConfig()
        assert (run_config.task_type, run_config.task_id) == ("worker", 0)
        assert run_config.master == "grpc://127.0.0.1:2" and run_config.num_ps_replicas == 1
    monkeypatch.setenv("TF_CONFIG", "bm90IGpzb24=")  # base64 of "not json"
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON, nor base64 of JSON"):
        tf.estimator.RunConfig()


def test_cluster_roles_place_variables_on_the_ps_and_filter_devices(monkeypatch):
    _tf_config(monkeypatch, "worker", 0)
    config = tf.estimator.RunConfig()
    with tf.Graph().as_default(), tf.device(run_setup.device_fn(config)):
        v = tf.get_variable("v", [2])
        y = v * 2.0
    assert v.device == "/job:ps/task:0"
    assert y.device.startswith("/job:worker/task:0")
    assert list(run_setup.session_config(config).device_filters) == ["/job:ps",
                                                                     "/job:worker/task:0"]
    assert config.master == "grpc://127.0.0.1:2"  # the session goes to this task's server
    monkeypatch.delenv("TF_CONFIG")
    local = tf.estimator.RunConfig()
    assert run_setup.device_fn(local) is None and run_setup.session_config(local) is None


def _write_checkpoint(model_dir, step):
    with tf.Graph().as_default():
        tf.train.create_global_step()
        tf.get_variable("w", [64, 10])
        tf.get_variable("b", [10])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.assign(tf.train.get_global_step(), step))
            tf.train.Saver().save(sess, str(model_dir / "model.ckpt"), global_step=step)


@pytest.mark.cluster
@pytest.mark.parametrize("job_ended", [True, False])
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_worker_joining_after_the_job_ended(tmp_path, monkeypatch, job_ended):
    """Beyond TF 1.x (whose ps tasks never exit): a worker that cannot reach the ps tasks
    ends normally when model_dir already holds the final checkpoint, else it fails."""
    ports = free_ports(3)
    cluster = {"chief": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"],
               "ps": [f"127.0.0.1:{ports[2]}"]}  # nothing listens on the chief and ps ports
    (tmp_path / "m").mkdir()
    _write_checkpoint(tmp_path / "m", 5)  # training is under way when the worker starts
    _tf_config(monkeypatch, "worker", 0, cluster=cluster)
    # bounded waits for the missing tasks (beyond TF 1.x, which waits forever)
    est = make_estimator(tmp_path / "m",
                         session_config=tf.ConfigProto(operation_timeout_in_ms=2000))
    timer = threading.Timer(0.5, _write_checkpoint, (tmp_path / "m", 10)) if job_ended else None
    if timer:
        timer.start()
    try:
        specs = TrainSpec(train_input_fn, max_steps=10), EvalSpec(eval_input_fn)
        if job_ended:
            assert tf.estimator.train_and_evaluate(est, *specs) is None
        else:
            with pytest.raises(tf.errors.UnavailableError):
                tf.estimator.train_and_evaluate(est, *specs)
    finally:
        if timer:
            timer.join()


@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_launch_evaluator_flag_and_its_conflict_with_seed_flags():
    args = build_parser().parse_args(["launch", "--chief", "--evaluator"])
    assert args.evaluator and args.chief
    assert build_parser().parse_args(["manifest", "--image", "i", "--evaluator"]).evaluator
    launcher = Launcher(["python", "x.py"], LaunchOptions(ps=1, workers=1, evaluator=True))
    assert [t.name for t in launcher.topology.tasks][-1] == "evaluator 0"
    with pytest.raises(ValueError, match="--evaluator and --pass-flags do not mix"):
        Launcher(["python", "x.py"], LaunchOptions(evaluator=True, pass_flags=True))


@pytest.mark.cluster
@pytest.mark.transports("grpc", why=WHOLE_JOB)
def test_legacy_master_trains_and_evaluates_its_checkpoints(tmp_path, monkeypatch):
    _tf_config(monkeypatch, "master", 0, cluster={"master": [f"127.0.0.1:{free_ports(1)[0]}"]})
    est = make_estimator(tmp_path, save_checkpoints_steps=40)
    assert est.config.task_type == "master" and est.config.is_chief
    exporter = _Exporter()
    result = tf.estimator.train_and_evaluate(
        est, TrainSpec(train_input_fn, max_steps=100),
        EvalSpec(eval_input_fn, steps=None, throttle_secs=0, exporters=exporter))
    assert result is None
    assert [(step, final) for step, final, _ in exporter.calls] == [
        (40, False), (80, False), (100, True)]


def test_launch_progress_reads_the_estimator_log_lines():
    tracker = ProgressTracker()
    assert tracker.feed("INFO:tensorweave.train:loss = 0.31, step = 120 (0.9 sec)")
    assert (tracker.global_step, tracker.loss) == (120, 0.31)
    assert not tracker.feed("INFO:tensorweave:Start Tensorflow server.")
    assert tracker.feed("global step 130, loss 0.2") and tracker.global_step == 130

"""tf.app.flags and tf.app.run as TF 1.x trainer scripts use them."""
import pytest

from tensorweave.app import flags as flags_mod


def test_flags_parse_and_run(monkeypatch):
    fv = flags_mod._FlagValues()
    monkeypatch.setattr(flags_mod, "FLAGS", fv)
    flags_mod.DEFINE_string("ps_hosts", None, "ps")
    flags_mod.DEFINE_integer("task_index", None, "index")
    flags_mod.DEFINE_boolean("issync", False, "sync")
    flags_mod.DEFINE_float("lr", 0.1, "rate")
    rest = fv(["prog", "--ps_hosts=a:1,b:2", "--task_index", "1", "--issync", "--extra=x"])
    assert fv.ps_hosts == "a:1,b:2" and fv.task_index == 1 and fv.issync is True
    assert fv.lr == 0.1 and rest == ["prog", "--extra=x"]
    with pytest.raises(AttributeError, match="--nosuch"):
        fv.nosuch  # noqa: B018 - the attribute access is what raises


def test_app_run_calls_main_with_remaining_args(monkeypatch):
    import tensorweave as tf
    fv = flags_mod._FlagValues()
    monkeypatch.setattr(flags_mod, "FLAGS", fv)
    flags_mod.DEFINE_string("job_name", "", "job")
    seen = {}

    def main(argv):
        seen["argv"] = argv
        seen["job"] = tf.app.flags.FLAGS.job_name
        return 0
    with pytest.raises(SystemExit) as info:
        tf.app.run(main=main, argv=["prog", "--job_name=ps", "rest"])
    assert info.value.code == 0 and seen == {"argv": ["prog", "rest"], "job": "ps"}


def test_tf_flags_is_app_flags_with_absl_kinds(monkeypatch):
    import tensorweave as tf
    assert tf.flags is tf.app.flags
    fv = flags_mod._FlagValues()
    monkeypatch.setattr(flags_mod, "FLAGS", fv)
    tf.flags.DEFINE_list("worker_hosts", "a:1, b:2", "workers")
    tf.flags.DEFINE_enum("optimizer", "sgd", ["sgd", "adam"], "which")
    tf.flags.DEFINE_multi_string("tag", None, "tags")
    tf.flags.DEFINE_multi_integer("layer", [64], "sizes")
    tf.flags.DEFINE_bool("sync", True, "sync")
    assert fv.worker_hosts == ["a:1", "b:2"]  # a string default is split too
    rest = fv(["p", "--worker_hosts=x:1,y:2,z:3", "--optimizer=adam", "--tag=a", "--tag", "b",
               "--nosync", "left"])
    assert fv.worker_hosts == ["x:1", "y:2", "z:3"] and fv.optimizer == "adam"
    assert fv.tag == ["a", "b"] and fv.layer == [64] and fv.sync is False and rest == ["p", "left"]
    assert fv["optimizer"].value == "adam" and fv["optimizer"].default == "sgd"
    assert "layer" in fv and "nosuch" not in fv
    fv(["p", "--layer=3", "--layer=4"])
    assert fv.layer == [3, 4]


def test_flag_errors_name_the_flag(monkeypatch, capsys):
    fv = flags_mod._FlagValues()
    monkeypatch.setattr(flags_mod, "FLAGS", fv)
    flags_mod.DEFINE_enum("mode", "a", ["a", "b"], "m")
    flags_mod.DEFINE_string("data_dir", None, "where")
    with pytest.raises(ValueError, match="--mode is defined twice"):
        flags_mod.DEFINE_string("mode", "x", "again")
    with pytest.raises(ValueError, match="default 'c' is not one of"):
        flags_mod.DEFINE_enum("other", "c", ["a", "b"], "m")
    with pytest.raises(SystemExit):
        fv(["p", "--mode=c"])
    assert "'c' is not one of ['a', 'b']" in capsys.readouterr().err
    flags_mod.mark_flag_as_required("data_dir")
    with pytest.raises(SystemExit):
        fv(["p"])
    assert "--data_dir must be given" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        fv(["p", "--data_dir=/d", "--bogus=1"], known_only=False)
    assert "unknown flag --bogus" in capsys.readouterr().err
    assert fv(["p", "--data_dir=/d"]) == ["p"] and fv.data_dir == "/d"
    with pytest.raises(ValueError, match="no flag named --nope"):
        flags_mod.mark_flag_as_required("nope")

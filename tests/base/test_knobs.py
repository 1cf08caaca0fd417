"""The knob registry (tensorweave/base/knobs.py): one home for every TENSORWEAVE_* setting.

Each type's parser, bad values named in the error, old spellings read once-warned, the
generated docs/configuration.md kept current, and the check that no other module reads
a TENSORWEAVE_* variable (tools/check_env_reads.py) catching a stray read.
"""
import logging
import os
import subprocess
import sys

import pytest

from tensorweave.base import knob_types, knobs
from suite_paths import REPO_ROOT

ROOT = str(REPO_ROOT)
sys.path.insert(0, os.path.join(ROOT, "tools"))

import check_env_reads  # noqa: E402  (tools/ is not a package)
import gen_configuration_doc  # noqa: E402


@pytest.fixture
def env(monkeypatch):
    """A clean environment for every declared knob (and its old spellings)."""
    for k in knobs.all_knobs():
        for name in (k.name, *(a.name for a in k.aliases)):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(knob_types, "_WARNED", set())
    return monkeypatch


@pytest.mark.parametrize("text", ["1", "true", "TRUE", "yes", "On", " on "])
def test_bool_true_spellings(env, text):
    env.setenv("TENSORWEAVE_BIND_ALL", text)
    assert knobs.BIND_ALL.get() is True


@pytest.mark.parametrize("text", ["0", "false", "False", "no", "OFF", " 0"])
def test_bool_false_spellings(env, text):
    env.setenv("TENSORWEAVE_NOTIFY_JOB_DONE", text)
    assert knobs.NOTIFY_JOB_DONE.get() is False


def test_unset_or_blank_is_the_default(env):
    assert knobs.BULK.get() is True and knobs.BIND_ALL.get() is False
    env.setenv("TENSORWEAVE_BULK", "  ")
    assert knobs.BULK.get() is True and knobs.BULK.read() is None
    assert not knobs.BULK.is_set()
    assert knobs.SYNC_SERVE_SECS.get() == 10.0
    assert knobs.MAX_TENSOR_BYTES.get() == 16 << 30


@pytest.mark.parametrize("knob,text", [
    (knobs.BULK, "maybe"), (knobs.BIND_ALL, "2"), (knobs.NOTIFY_JOB_DONE, "False!"),
    (knobs.MAX_CONNECTIONS, "lots"), (knobs.MAX_CONNECTIONS, "0"),
    (knobs.MAX_CONNECTIONS, "2.5"), (knobs.SYNC_REPLICA_WARN_SECS, "0"),
    (knobs.SESSION_DEADLINE_SECS, "-1"), (knobs.HANDSHAKE_TIMEOUT_SECS, "soon"),
    (knobs.SYNC_SERVE_SECS, "nan"), (knobs.MAX_MESSAGE_BYTES, "12"),
    (knobs.MAX_TENSOR_BYTES, "1GB"), (knobs.SHM_RING_BYTES, "-1MiB"),
])
def test_a_bad_value_is_an_error_naming_variable_and_value(env, knob, text):
    env.setenv(knob.name, text)
    with pytest.raises(ValueError) as e:
        knob.get()
    msg = str(e.value)
    assert f"{knob.name}={text!r}" in msg and "must be" in msg and "unset it" in msg


def test_seconds_are_decimal_numbers_with_a_bound(env):
    env.setenv("TENSORWEAVE_SYNC_REPLICA_TIMEOUT_SECS", "0")  # >= 0: 0 waits forever
    assert knobs.SYNC_REPLICA_TIMEOUT_SECS.get() == 0.0
    env.setenv("TENSORWEAVE_SESSION_DEADLINE_SECS", " 2.5 ")
    assert knobs.SESSION_DEADLINE_SECS.get() == 2.5
    with pytest.raises(ValueError, match="must be > 0"):
        env.setenv("TENSORWEAVE_SESSION_DEADLINE_SECS", "0")
        knobs.SESSION_DEADLINE_SECS.get()


@pytest.mark.parametrize("text,value", [
    ("4096", 4096), ("512KiB", 512 << 10), ("16MiB", 16 << 20), ("16 mib", 16 << 20),
    ("1.5GiB", 3 << 29), ("1TiB", 1 << 40), ("0", 0), ("2048B", 2048)])
def test_sizes_are_bytes_or_binary_suffixes(env, text, value):
    env.setenv("TENSORWEAVE_SHM_RING_BYTES", text)
    assert knobs.SHM_RING_BYTES.get() == value


def test_counts_paths_lists_and_text(env):
    env.setenv("TENSORWEAVE_MAX_CONNECTIONS", "64")
    assert knobs.MAX_CONNECTIONS.get() == 64
    env.setenv("TENSORWEAVE_TLS_CA", " /etc/tw/ca.crt ")
    assert knobs.TLS_CA.get() == "/etc/tw/ca.crt"
    env.setenv("TENSORWEAVE_ALLOW_DIRS", os.pathsep.join(["/data", "", "/tmp/x"]))
    assert knobs.ALLOW_DIRS.get() == ("/data", "/tmp/x")
    env.setenv("TENSORWEAVE_TRANSPORT", " GRPC ")
    assert knobs.TRANSPORT.get() == "grpc"
    env.setenv("TENSORWEAVE_PROGRESS_PREFIX", "@p ")  # kept exactly: the blank is part of it
    assert knobs.PROGRESS_PREFIX.get() == "@p "


def test_reads_happen_at_use_time_and_from_a_given_mapping(env):
    assert knobs.MAX_CONNECTIONS.get() == 1024
    env.setenv("TENSORWEAVE_MAX_CONNECTIONS", "7")
    assert knobs.MAX_CONNECTIONS.get() == 7
    assert knobs.MAX_CONNECTIONS.get({"TENSORWEAVE_MAX_CONNECTIONS": "9"}) == 9
    assert knobs.MAX_CONNECTIONS.get({}) == 1024


def test_writers_produce_what_readers_read_back(env):
    for knob, value in [(knobs.BIND_ALL, True), (knobs.BULK, False),
                        (knobs.SYNC_SERVE_SECS, 1.5), (knobs.SHM_RING_BYTES, 3 << 20),
                        (knobs.ALLOW_DIRS, ("/a", "/b")), (knobs.TRANSPORT, "unix")]:
        setting = knob.setting(value)
        assert list(setting) == [knob.name]
        assert knob.get(setting) == value
    env.setenv("TENSORWEAVE_ALLOW_DIRS", "")  # so monkeypatch restores what export sets
    knobs.ALLOW_DIRS.export(("/srv",))
    assert os.environ["TENSORWEAVE_ALLOW_DIRS"] == "/srv"


def test_old_spelling_is_read_in_its_unit_and_warned_about_once(env, caplog):
    caplog.set_level(logging.WARNING, logger="tensorweave.knobs")
    env.setenv("TENSORWEAVE_SHM_RING_MB", "4")
    assert knobs.SHM_RING_BYTES.get() == 4 << 20  # the old name counted MiB
    env.setenv("TENSORWEAVE_HANDSHAKE_TIMEOUT_S", "2")
    for _ in range(3):
        assert knobs.HANDSHAKE_TIMEOUT_SECS.get() == 2.0
        assert knobs.SHM_RING_BYTES.get() == 4 << 20
    warned = [r.getMessage() for r in caplog.records]
    assert len(warned) == 2, warned
    assert ("TENSORWEAVE_SHM_RING_MB is deprecated: use TENSORWEAVE_SHM_RING_BYTES"
            in warned[0])
    assert "use TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS" in warned[1]


def test_new_name_wins_over_the_old_one(env, caplog):
    caplog.set_level(logging.WARNING, logger="tensorweave.knobs")
    env.setenv("TENSORWEAVE_HANDSHAKE_TIMEOUT_S", "2")
    env.setenv("TENSORWEAVE_HANDSHAKE_TIMEOUT_SECS", "3")
    assert knobs.HANDSHAKE_TIMEOUT_SECS.get() == 3.0
    assert "is ignored" in caplog.text


def test_bad_value_under_the_old_name_names_the_old_name(env):
    env.setenv("TENSORWEAVE_SHM_RING_MB", "big")
    with pytest.raises(ValueError, match="TENSORWEAVE_SHM_RING_MB='big' must be a size"):
        knobs.SHM_RING_BYTES.get()


def test_declarations_follow_the_rules():
    names = [k.name for k in knobs.all_knobs()]
    assert len(names) == len(set(names)) >= 20
    assert knobs.lookup("TENSORWEAVE_SHM_RING_MB") is knobs.SHM_RING_BYTES
    with pytest.raises(KeyError, match="TENSORWEAVE_NOPE"):
        knobs.lookup("TENSORWEAVE_NOPE")
    for k in knobs.all_knobs():
        assert k.doc and k.area
        if isinstance(k, knobs.Secs):
            assert k.name.endswith("_SECS")
        if isinstance(k, knobs.Bytes):
            assert k.name.endswith("_BYTES")
    with pytest.raises(ValueError, match="must end in _SECS"):
        knobs.Secs("TENSORWEAVE_WAIT", 1.0, doc="x")
    with pytest.raises(ValueError, match="spell seconds _SECS"):
        knobs.Int("TENSORWEAVE_WAIT_S", 1, doc="x")
    with pytest.raises(ValueError, match="declared twice"):
        knobs._declare("x", knobs.Bool("TENSORWEAVE_BULK", True, doc="again"))


def test_session_deadline_default_is_the_one_wait_default(env):
    from tensorweave.base.waits import DEFAULT_WAIT_SECS
    from tensorweave.train.session_deadline import session_deadline_secs
    assert knobs.SESSION_DEADLINE_SECS.default == DEFAULT_WAIT_SECS == session_deadline_secs()


def test_configuration_doc_is_current_and_lists_every_knob():
    with open(gen_configuration_doc.DOC, encoding="utf-8") as f:
        text = f.read()
    assert text == gen_configuration_doc.markdown(), \
        "docs/configuration.md is stale: run python tools/gen_configuration_doc.py"
    for k in knobs.all_knobs():
        assert f"`{k.name}`" in text
        assert all(f"`{a.name}`" in text for a in k.aliases)


def test_doc_check_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "configuration.md"
    stale.write_text(gen_configuration_doc.markdown().replace("TENSORWEAVE_BULK", "X"))
    assert gen_configuration_doc.main(["--check", "--path", str(stale)]) == 1
    assert gen_configuration_doc.main(["--path", str(stale)]) == 0
    assert gen_configuration_doc.main(["--check", "--path", str(stale)]) == 0


STRAY = '''
import os
from tensorweave.base import knobs
ENV_X = "TENSORWEAVE_X"
DERIVED = knobs.BULK.name
_BOTH = (ENV_X, DERIVED)

def literal():
    return os.environ.get("TENSORWEAVE_BULK", "1") != "0"

def constant():
    return os.getenv(ENV_X)

def through_a_parameter(name):
    return os.environ.get(name)

def caller():
    return through_a_parameter(DERIVED)

def loop():
    return [os.environ.get(n) for n in _BOTH]

def subscript_and_in():
    return os.environ["TENSORWEAVE_Y"] if "TENSORWEAVE_Y" in os.environ else None

def writes_are_fine(env):
    os.environ[ENV_X] = "1"
    env.update(knobs.BULK.setting(True))
    return os.environ.get("HOME")
'''


def test_env_read_check_catches_stray_reads(tmp_path):
    stray = tmp_path / "stray.py"
    stray.write_text(STRAY)
    found = {int(line.split(":")[1]): line for line in
             check_env_reads.reads(str(stray), *_parsed(stray))}
    body = STRAY.splitlines()

    def line_of(text):
        return next(i + 1 for i, t in enumerate(body) if text in t)

    expected = {line_of('os.environ.get("TENSORWEAVE_BULK"'): "TENSORWEAVE_BULK",
                line_of("os.getenv(ENV_X)"): "TENSORWEAVE_X",
                line_of("os.environ.get(name)"): "knobs.BULK.name",
                line_of("os.environ.get(n) for n"): "TENSORWEAVE_X, knobs.BULK.name",
                line_of('os.environ["TENSORWEAVE_Y"]'): "TENSORWEAVE_Y"}
    assert set(found) == set(expected), found  # the writes and the HOME read are not flagged
    for line, name in expected.items():
        assert f"stray.py:{line}: reads {name} " in found[line]
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "check_env_reads.py"),
                          str(stray)], capture_output=True, text=True)
    assert out.returncode == 1 and "stray.py:" in out.stderr


def _parsed(path):
    import ast
    tree = ast.parse(path.read_text())
    names = check_env_reads.constants({str(path): tree})
    return tree, names, check_env_reads.passed_names({str(path): tree}, names)

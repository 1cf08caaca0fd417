"""File confinement on a task (issue 12): the ops that read or write files on a server
(Saver in both formats, TFRecordDataset) are allowed only under the directories the
server allows; `..` and symlinks are resolved first. Beyond TF 1.x, which lets any
client that reaches a port write wherever the task's process can.

The roots in these tests are explicit (`allow_dirs=` / TENSORWEAVE_ALLOW_DIRS), so a
directory under the system temp dir that is not listed is outside them.
"""
import os

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.distributed.server import Server
from tensorweave.framework import file_access
from tensorweave.framework.tfrecord import TFRecordWriter
from tensorweave.testing.cluster import LocalCluster, cluster_dict
from suite_markers import OTHER_PROCESSES

pytestmark = pytest.mark.usefixtures("fresh_graph")


@pytest.fixture
def dirs(tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    return str(allowed), str(outside)


@pytest.fixture
def server(dirs):
    s = Server({"localhost": [f"localhost:{cluster_dict(1, 0)['ps'][0].split(':')[1]}"]},
               job_name="localhost", task_index=0, allow_dirs=[dirs[0]])
    yield s
    s.stop()


def _saver_graph(fmt="tensorweave"):
    v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
    return v, tf.train.Saver([v], checkpoint_format=fmt)


# ---- the policy itself ---------------------------------------------------------------
def test_policy_allows_the_root_and_below_and_nothing_else(dirs):
    allowed, outside = dirs
    p = file_access.FilePolicy([allowed])
    assert p.allows(allowed) and p.allows(os.path.join(allowed, "a", "b.ckpt"))
    assert not p.allows(os.path.join(outside, "m"))
    # A sibling sharing the root's name as a prefix is not under it.
    assert not p.allows(allowed + "-evil/m")


def test_policy_resolves_dotdot_before_the_check(dirs):
    allowed, outside = dirs
    p = file_access.FilePolicy([allowed])
    sneaky = os.path.join(allowed, "..", "outside", "m")
    with pytest.raises(tf.errors.PermissionDeniedError) as e:
        p.check(sneaky, "write", "SaveV2 save/SaveV2")
    assert outside in e.value.message and allowed in e.value.message
    assert "--allow-dir" in e.value.message


def test_policy_resolves_symlinks_before_the_check(dirs):
    allowed, outside = dirs
    os.symlink(outside, os.path.join(allowed, "link"))
    p = file_access.FilePolicy([allowed])
    assert not p.allows(os.path.join(allowed, "link", "m"))


def test_server_policy_defaults_to_cwd_and_temp_dir(monkeypatch):
    monkeypatch.delenv(file_access.ENV_ALLOW_DIRS, raising=False)
    roots = file_access.server_policy().roots
    assert os.path.realpath(os.getcwd()) in roots
    import tempfile
    assert os.path.realpath(tempfile.gettempdir()) in roots


def test_server_policy_reads_the_environment(monkeypatch, dirs):
    monkeypatch.setenv(file_access.ENV_ALLOW_DIRS, os.pathsep.join(dirs))
    assert file_access.server_policy().roots == tuple(os.path.realpath(d) for d in dirs)


def test_empty_allow_dirs_is_refused():
    with pytest.raises(ValueError, match="empty"):
        file_access.server_policy([])


# ---- a server's ops ------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["tensorweave", "tensorflow"])
@pytest.mark.transports()
def test_saver_on_a_server_writes_inside_and_is_refused_outside(server, dirs, fmt):
    allowed, outside = dirs
    v, saver = _saver_graph(fmt)
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        with pytest.raises(tf.errors.PermissionDeniedError) as e:
            saver.save(sess, os.path.join(outside, "pwned"))
        assert os.path.join(outside, "pwned") in e.value.message
        assert allowed in e.value.message
        assert os.listdir(outside) == []
        path = saver.save(sess, os.path.join(allowed, "model"))
        sess.run(tf.assign(v, tf.zeros([4])))
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run(v), np.arange(4))


@pytest.mark.transports()
def test_restore_from_outside_is_refused(server, dirs):
    allowed, outside = dirs
    v, saver = _saver_graph()
    with tf.Session() as local:  # a local session is not confined: write the bait
        local.run(v.initializer)
        bait = saver.save(local, os.path.join(outside, "bait"))
    with tf.Session(server.target) as sess:
        with pytest.raises(tf.errors.PermissionDeniedError, match="may not read"):
            saver.restore(sess, bait)


@pytest.mark.transports()
def test_dotdot_and_symlinked_directories_are_refused_on_a_server(server, dirs):
    allowed, outside = dirs
    os.symlink(outside, os.path.join(allowed, "link"))
    v, saver = _saver_graph()
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        for path in (os.path.join(allowed, "..", "outside", "m"),
                     os.path.join(allowed, "link", "m")):
            with pytest.raises(tf.errors.PermissionDeniedError, match="resolved"):
                saver.save(sess, path)
        assert os.listdir(outside) == []


@pytest.mark.transports()
def test_a_symlinked_checkpoint_file_is_refused(server, dirs):
    # The prefix is inside, but `<prefix>.index` points outside: reading it would leak.
    allowed, outside = dirs
    v, saver = _saver_graph("tensorflow")
    with tf.Session() as local:
        local.run(v.initializer)
        real = saver.save(local, os.path.join(outside, "secret"))
    for name in os.listdir(outside):
        if name.startswith("secret"):
            os.symlink(os.path.join(outside, name),
                       os.path.join(allowed, name.replace("secret", "m")))
    with tf.Session(server.target) as sess:
        with pytest.raises(tf.errors.PermissionDeniedError):
            saver.restore(sess, os.path.join(allowed, os.path.basename(real)
                                             .replace("secret", "m")))


@pytest.mark.transports()
def test_tfrecord_dataset_on_a_server_is_confined(server, dirs):
    allowed, outside = dirs
    for d in dirs:
        with TFRecordWriter(os.path.join(d, "r.tfrecord")) as w:
            w.write(b"record")
    names = tf.placeholder(tf.string, [])
    it = tf.data.TFRecordDataset(names).make_initializable_iterator()
    nxt = it.get_next()
    with tf.Session(server.target) as sess:
        sess.run(it.initializer, {names: os.path.join(allowed, "r.tfrecord")})
        assert sess.run(nxt) == b"record"
        sess.run(it.initializer, {names: os.path.join(outside, "r.tfrecord")})
        with pytest.raises(tf.errors.PermissionDeniedError, match="r.tfrecord"):
            sess.run(nxt)


# ---- a local session -------------------------------------------------------------------
def test_a_local_session_is_not_confined_by_default(monkeypatch, dirs):
    monkeypatch.delenv(file_access.ENV_ALLOW_DIRS, raising=False)
    v, saver = _saver_graph()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert saver.save(sess, os.path.join(dirs[1], "m"))


def test_a_local_session_is_confined_when_the_environment_says(monkeypatch, dirs):
    monkeypatch.setenv(file_access.ENV_ALLOW_DIRS, dirs[0])
    v, saver = _saver_graph()
    with tf.Session() as sess:
        sess.run(v.initializer)
        saver.save(sess, os.path.join(dirs[0], "m"))
        with pytest.raises(tf.errors.PermissionDeniedError):
            saver.save(sess, os.path.join(dirs[1], "m"))


# ---- the scenario, through a real cluster ------------------------------------
@pytest.mark.slow
@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_remote_client_cannot_make_the_ps_write_outside_its_roots(dirs):
    """A client that reaches the ps's port runs a Saver placed on /job:ps/task:0."""
    allowed, outside = dirs
    with LocalCluster(ps=1, workers=1,
                      env={file_access.ENV_ALLOW_DIRS: allowed}) as cluster:
        with tf.device("/job:ps/task:0"):
            v, saver = _saver_graph()
        with tf.Session(cluster.target("ps", 0)) as sess:
            sess.run(v.initializer)
            target = os.path.join(outside, f"pwned-{os.getpid()}")
            with pytest.raises(tf.errors.PermissionDeniedError) as e:
                saver.save(sess, target)
            assert target in e.value.message and "/job:ps" in e.value.message
            assert os.listdir(outside) == []
            # The ps keeps serving, and allowed paths still work.
            assert saver.save(sess, os.path.join(allowed, "model"))
            assert any(n.startswith("model") for n in os.listdir(allowed))


@pytest.mark.transports("grpc", "tcp", "unix", why=OTHER_PROCESSES)
def test_server_cli_allow_dir_confines_its_ops(dirs, tmp_path):
    """`tensorweave server --allow-dir DIR`, a real process, refuses a remote Saver
    outside DIR and lets it write inside."""
    import subprocess
    import sys
    import time
    allowed, outside = dirs
    spec = cluster_dict(1, 0)
    env = {k: v for k, v in os.environ.items() if k != file_access.ENV_ALLOW_DIRS}
    log = open(tmp_path / "server.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "tensorweave", "server", "--job", "ps",
                             "--task", "0", "--cluster", __import__("json").dumps(spec),
                             "--allow-dir", allowed], env=env, stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        port = int(spec["ps"][0].rsplit(":", 1)[1])
        import socket
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "server did not listen"
                time.sleep(0.1)
        with tf.device("/job:ps/task:0"):
            v, saver = _saver_graph("tensorflow")
        with tf.Session(f"grpc://{spec['ps'][0]}") as sess:
            sess.run(v.initializer)
            with pytest.raises(tf.errors.PermissionDeniedError, match="--allow-dir"):
                saver.save(sess, os.path.join(outside, "pwned"))
            assert saver.save(sess, os.path.join(allowed, "model"))
        assert os.listdir(outside) == []
    finally:
        proc.kill()
        proc.wait()
        log.close()


@pytest.mark.transports()
def test_allow_dir_flag_sets_the_environment(monkeypatch, dirs):
    from tensorweave.launch.cli import build_parser
    from tensorweave.launch.file_flags import apply_allow_dirs
    # Recorded by monkeypatch, so the variable the flag sets is gone after the test.
    monkeypatch.setenv(file_access.ENV_ALLOW_DIRS, "")
    args = build_parser().parse_args(["launch", "--allow-dir", dirs[0], "--allow-dir", dirs[1],
                                      ])
    apply_allow_dirs(args)
    assert os.environ[file_access.ENV_ALLOW_DIRS].split(os.pathsep) == \
        [os.path.realpath(d) for d in dirs]
    with pytest.raises(ValueError, match="not a directory"):
        apply_allow_dirs(build_parser().parse_args(
            ["server", "--allow-dir", os.path.join(dirs[0], "nope")]))


# ---- ReadFile / WriteFile / MatchingFiles ----------------------------------------------
def test_file_ops_behave_as_tf_locally(tmp_path):
    # Values checked against TF 2.21 (compat.v1) running the same graph.
    d = str(tmp_path)
    w = tf.write_file(os.path.join(d, "a/b/hello.txt"), "hi")  # directories created
    w2 = tf.io.write_file(os.path.join(d, "a/b/z.txt"), b"\x00\xff")
    r = tf.read_file(os.path.join(d, "a/b/hello.txt"))
    m = tf.matching_files(os.path.join(d, "a/*/*.txt"))
    m2 = tf.io.matching_files([os.path.join(d, "a/b/z*"), os.path.join(d, "a/b/h*")])
    none = tf.matching_files(os.path.join(d, "nope/*"))
    assert r.shape.ndims == 0 and m.shape.as_list() == [None]
    with tf.Session() as sess:
        sess.run([w, w2])
        assert sess.run(r) == b"hi"
        want = [os.path.join(d, "a/b/hello.txt").encode(), os.path.join(d, "a/b/z.txt").encode()]
        assert list(sess.run(m)) == want and list(sess.run(m2)) == want  # sorted, as TF
        assert sess.run(none).shape == (0,)
        with pytest.raises(tf.errors.NotFoundError, match="missing"):
            sess.run(tf.read_file(os.path.join(d, "missing")))


@pytest.mark.transports()
def test_file_ops_on_a_server_are_confined(server, dirs):
    allowed, outside = dirs
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("s3cret")
    os.symlink(outside, os.path.join(allowed, "link"))
    with tf.Session(server.target) as sess:
        sess.run(tf.write_file(os.path.join(allowed, "ok.txt"), "fine"))
        assert sess.run(tf.read_file(os.path.join(allowed, "ok.txt"))) == b"fine"
        assert list(sess.run(tf.matching_files(os.path.join(allowed, "*.txt")))) == \
            [os.path.join(allowed, "ok.txt").encode()]
        refused = [tf.read_file(os.path.join(outside, "secret.txt")),
                   tf.read_file(os.path.join(allowed, "link", "secret.txt")),
                   tf.write_file(os.path.join(outside, "new.txt"), "x"),
                   tf.matching_files(os.path.join(outside, "*")),
                   tf.matching_files(os.path.join(allowed, "*", "*.txt"))]  # via the link
        for t in refused:
            with pytest.raises(tf.errors.PermissionDeniedError, match="allow"):
                sess.run(t)
    assert sorted(os.listdir(outside)) == ["secret.txt"]

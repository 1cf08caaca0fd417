"""A process killed during a save leaves the previous checkpoint as the latest (issue 13).

Each file of a checkpoint is written under a temporary name, fsync'd and renamed,
the index last; the `checkpoint` state file (temp, fsync, rename) is the commit
point. The child processes here are killed with SIGKILL at chosen points of a save
(deterministic: from inside the rename that would come next) or from outside at
whatever moment a loop of saves of a few-MB variable has reached.
"""
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tensorweave as tf
from tensorweave.train import checkpoint_management as cm

pytestmark = pytest.mark.usefixtures("fresh_graph")

# The child saves model.ckpt-1 cleanly, then model.ckpt-2 with os.replace armed to
# SIGKILL the process just before the rename onto a file matching KILL_BEFORE.
_KILL_MID_SAVE = textwrap.dedent("""
    import os, re, signal, sys
    import numpy as np
    import tensorweave as tf
    d, fmt, sharded, pattern = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
    v = tf.Variable(np.zeros(1000, np.float32), name="v")
    w = tf.Variable(np.zeros(10, np.float32), name="w")
    step = tf.train.get_or_create_global_step()
    train = tf.group(tf.assign_add(v, tf.ones(1000)), tf.assign_add(w, tf.ones(10)),
                     tf.assign_add(step, 1))
    saver = tf.train.Saver(checkpoint_format=fmt, sharded=sharded, max_to_keep=1)
    real_replace = os.replace
    def replace(src, dst):
        if re.search(pattern, os.path.basename(dst)):
            os.kill(os.getpid(), signal.SIGKILL)
        real_replace(src, dst)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
        sess.run(train)
        os.replace = replace
        saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
    print("the save was not interrupted", flush=True)
""")


def _run_child(script, *args):
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, timeout=120)


def _restore_v(prefix):
    with tf.Graph().as_default():
        v = tf.Variable(np.zeros(1000, np.float32), name="v")
        w = tf.Variable(np.zeros(10, np.float32), name="w")
        tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, prefix)
            return sess.run(v), sess.run(w)


@pytest.mark.slow
@pytest.mark.parametrize("fmt,sharded", [("tensorweave", False), ("tensorweave", True),
                                         ("tensorflow", False), ("tensorflow", True)])
@pytest.mark.parametrize("kill_before", [
    r"^model\.ckpt-2(-\d{5}-of-\d{5}|\.data-\d{5}-of-\d{5})$",   # data written, not renamed
    r"^model\.ckpt-2\.index$",                                   # data renamed, no index
    r"^checkpoint$",                                             # complete, not committed
], ids=["before_data_rename", "before_index_rename", "before_state_file"])
def test_kill_mid_save_leaves_previous_checkpoint_latest(tmp_path, fmt, sharded, kill_before):
    d = str(tmp_path)
    r = _run_child(_KILL_MID_SAVE, d, fmt, "1" if sharded else "0", kill_before)
    assert r.returncode == -signal.SIGKILL, (r.returncode, r.stdout, r.stderr[-2000:])
    first = os.path.join(d, "model.ckpt-1")
    assert cm.latest_checkpoint(d) == first
    assert cm.get_checkpoint_state(d).all_model_checkpoint_paths == [first]
    assert cm.checkpoint_damage(first) is None   # max_to_keep=1 deleted nothing yet
    v, w = _restore_v(first)
    np.testing.assert_array_equal(v, np.ones(1000, np.float32))
    np.testing.assert_array_equal(w, np.ones(10, np.float32))
    # ...and a chief starting on the directory restores it, nothing set aside.
    with tf.Graph().as_default():
        v_t = tf.Variable(np.zeros(1000, np.float32), name="v")
        tf.Variable(np.zeros(10, np.float32), name="w")
        tf.train.get_or_create_global_step()
        with tf.train.MonitoredTrainingSession(checkpoint_dir=d, save_checkpoint_secs=None,
                                               save_summaries_steps=None) as sess:
            assert sess.run(v_t)[0] == 1.0
    assert not any(".damaged-" in f for f in os.listdir(d))


# The child saves a 4 MB variable over and over (its value: the step), printing each
# finished save; the test kills it from outside at whatever point the next save is.
_SAVE_LOOP = textwrap.dedent("""
    import os, sys
    import numpy as np
    import tensorweave as tf
    d, fmt = sys.argv[1], sys.argv[2]
    big = tf.Variable(np.zeros(1 << 20, np.float32), name="big")
    step = tf.train.get_or_create_global_step()
    train = tf.group(tf.assign_add(big, tf.ones(1 << 20)), tf.assign_add(step, 1))
    saver = tf.train.Saver(checkpoint_format=fmt, max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(1000):
            sess.run(train)
            saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
            print("saved", flush=True)
""")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["tensorweave", "tensorflow"])
@pytest.mark.parametrize("after_saves", [1, 3])
def test_sigkill_during_save_loop_leaves_latest_restorable(tmp_path, fmt, after_saves):
    d = str(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", _SAVE_LOOP, d, fmt],
                             stdout=subprocess.PIPE, text=True)
    try:
        for _ in range(after_saves):
            assert child.stdout.readline() == "saved\n"
        child.send_signal(signal.SIGKILL)   # lands in the next save, or between saves
    finally:
        child.kill()
        child.wait(timeout=60)
        child.stdout.close()
    latest = cm.latest_checkpoint(d)
    assert latest is not None
    assert cm.checkpoint_damage(latest) is None
    saved_step = int(latest.rsplit("-", 1)[1])
    assert saved_step >= after_saves
    with tf.Graph().as_default():
        big = tf.Variable(np.zeros(1 << 20, np.float32), name="big")
        step = tf.train.get_or_create_global_step()
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, latest)
            assert sess.run(step) == saved_step
            got = sess.run(big)
    assert got[0] == got[-1] == saved_step


@pytest.mark.slow
@pytest.mark.parametrize("fmt,sharded", [("tensorweave", False), ("tensorflow", True)])
def test_leftovers_of_a_killed_save_go_when_that_checkpoint_expires(tmp_path, fmt, sharded):
    d = str(tmp_path)
    r = _run_child(_KILL_MID_SAVE, d, fmt, "1" if sharded else "0",
                   r"^model\.ckpt-2(-\d{5}-of-\d{5}|\.data-\d{5}-of-\d{5})$")
    assert r.returncode == -signal.SIGKILL, r.stderr[-2000:]
    def leftovers():
        return sorted(f for f in os.listdir(d) if ".tmp" in f or f.endswith("_temp"))
    assert leftovers(), os.listdir(d)   # the killed writer's temporary files
    with tf.Graph().as_default():
        tf.Variable(np.zeros(1000, np.float32), name="v")
        tf.Variable(np.zeros(10, np.float32), name="w")
        step = tf.train.get_or_create_global_step()
        saver = tf.train.Saver(checkpoint_format=fmt, sharded=sharded, max_to_keep=1)
        with tf.Session() as sess:
            saver.restore(sess, cm.latest_checkpoint(d))
            for s in (2, 3):
                sess.run(tf.assign(step, s))
                saver.save(sess, os.path.join(d, "model.ckpt"), global_step=step)
    assert leftovers() == []
    assert cm.latest_checkpoint(d) == os.path.join(d, "model.ckpt-3")

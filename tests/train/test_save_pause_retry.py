"""A save across tasks does not deadlock with a step that waits on an earlier-paused task.

The Saver pauses tasks in sorted order. A step that already updated ps1 (so holds
ps1's gate until its part there ends) and then waits, inside that part, for an
update on ps0 would wait forever on ps0's pause while the save waits for it on
ps1. Pauses after the first give up early (AbortedError marked CONTENDED), the
save step's failure ends ps0's pause, the step finishes, and the Saver retries.
"""
import threading
import time

import pytest

import tensorweave as tf
from tensorweave.framework import errors
from tensorweave.runtime import update_gate
from tensorweave.testing.cluster import InProcessCluster
from tensorweave.train import checkpoint_management, save_retry
from tensorweave.train.saver import Saver

pytestmark = pytest.mark.usefixtures("fresh_graph")


def test_contended_pause_gives_up_within_its_window_and_grows_it():
    gate = update_gate.UpdateGate("/job:ps/task:1")
    gate.acquire_shared(7)
    # Gives up after its window (0.25 s), not the 30 s timeout, and says so.
    with pytest.raises(errors.AbortedError,
                       match=r"\[contended pause\].*/job:ps/task:1.*within 0.25 s"):
        gate.pause(timeout_s=30, contended=True)
    assert not gate.paused                    # the failed pause is undone
    with pytest.raises(errors.AbortedError, match="within 0.5 s"):
        gate.pause(timeout_s=30, contended=True)   # the window doubled
    gate.release_shared(7)
    owner = gate.pause(timeout_s=30, contended=True)
    gate.resume(owner)
    assert gate._contended_fails == 0         # a success resets the window


def test_run_save_gives_a_clear_deadline_error_when_always_contended():
    class Contended:
        calls = 0

        def run(self, fetch, feed):
            self.calls += 1
            raise errors.AbortedError(None, None, f"{update_gate.CONTENDED} Could not pause "
                                      "updates on /job:ps/task:1 within 0.25 s")
    sess = Contended()
    with pytest.raises(errors.DeadlineExceededError, match=r"/job:ps/task:1.*pause_timeout_s"):
        save_retry.run_save(sess, None, {}, timeout_s=0.3)
    assert sess.calls >= 2

    class OtherAbort:
        def run(self, fetch, feed):
            raise errors.AbortedError(None, None, "session was restarted")
    with pytest.raises(errors.AbortedError, match="restarted"):   # not retried
        save_retry.run_save(OtherAbort(), None, {}, timeout_s=5)


@pytest.mark.transports()
def test_save_does_not_deadlock_with_a_step_waiting_on_an_earlier_task(tmp_path):
    with InProcessCluster(ps=2, workers=1, protocol=None) as cluster:
        with tf.device("/job:ps/task:0"):
            v0 = tf.Variable(0.0, name="v0")
        with tf.device("/job:ps/task:1"):
            v1 = tf.Variable(0.0, name="v1")
        with tf.device("/job:worker/task:0"):
            gate_q = tf.FIFOQueue(1, tf.float32, shapes=[[]], name="gate_q")
        # The step: update ps1, wait for the test's go, update ps0, then ps1 again
        # with a value from ps0 (so ps1's part of the step waits on ps0).
        with tf.device("/job:ps/task:1"):
            a1 = tf.assign_add(v1, 1.0)
        with tf.device("/job:worker/task:0"), tf.control_dependencies([a1]):
            go = gate_q.dequeue()
        with tf.device("/job:ps/task:0"):
            a0 = tf.assign_add(v0, go)
        with tf.device("/job:ps/task:1"):
            b1 = tf.assign_add(v1, a0 * 10.0)
        saver = Saver([v0, v1], sharded=True, pause_timeout_s=20)
        worker = cluster.servers[("worker", 0)]
        with tf.Session(worker.target) as sess:
            sess.run(tf.global_variables_initializer())
            done = []
            step = threading.Thread(target=lambda: done.append(sess.run(b1)))
            step.start()
            deadline = time.monotonic() + 10
            while sess.run(v1) != 1.0:            # the step holds ps1 now
                assert time.monotonic() < deadline, "the step never updated ps1"
                time.sleep(0.01)
            saved = []
            save = threading.Thread(target=lambda: saved.append(
                saver.save(sess, str(tmp_path / "m"), write_meta_graph=False)))
            save.start()
            time.sleep(0.5)                       # the save is pausing ps0, then ps1
            sess.run(gate_q.enqueue(1.0))         # the step goes on to ps0
            save.join(30)
            step.join(30)
            # Without the contended pauses the save waits out pause_timeout_s and
            # raises DeadlineExceededError: nothing saved.
            assert saved and done == [11.0], (saved, done)
            final = sess.run([v0, v1])
    got = [checkpoint_management.load_variable(saved[0], n) for n in ("v0", "v1")]
    # Whole steps per task: ps1 has both of the step's updates or neither.
    assert float(got[1]) in (0.0, 11.0), got
    assert final == [1.0, 11.0]
    assert not any(g.paused for g in list(update_gate._GATES.values()))

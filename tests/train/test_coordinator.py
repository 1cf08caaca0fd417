"""Coordinator and LooperThread against TF 1.x's training/coordinator_test.py (our own
tests; threads are sequenced with events, never with timed sleeps).
"""
import sys
import threading

import pytest

import tensorweave as tf


def _raise_on_event(coord, go, ex, report_as_exception=True, done=None):
    """Waits for `go`, raises `ex` and reports it (as the exception or as exc_info)."""
    go.wait()
    try:
        raise ex
    except Exception as e:  # noqa: BLE001 - this is what the test reports
        coord.request_stop(e if report_as_exception else sys.exc_info())
    if done is not None:
        done.set()


def _raise_in_handler(coord, go, ex):
    with coord.stop_on_exception():
        go.wait()
        raise ex


def _threads(*targets_and_args):
    threads = [threading.Thread(target=t, args=a, daemon=True) for t, a in targets_and_args]
    for t in threads:
        t.start()
    return threads


def test_stop_api():
    coord = tf.train.Coordinator()
    assert not coord.should_stop()
    assert not coord.wait_for_stop(0.01)
    coord.request_stop()
    assert coord.should_stop()
    assert coord.wait_for_stop(0.01)
    assert coord.wait_for_stop()  # no timeout: returns at once once stopped


def test_stop_requested_from_another_thread_wakes_the_waiter():
    coord = tf.train.Coordinator()
    go = threading.Event()
    _threads((lambda: (go.wait(), coord.request_stop()), ()))
    assert not coord.should_stop()
    go.set()
    assert coord.wait_for_stop()  # blocks until the other thread stops it
    assert coord.should_stop()


def test_join_waits_for_threads_that_end_by_themselves():
    coord = tf.train.Coordinator()
    go = threading.Event()
    finished = []
    threads = _threads(*[(lambda i=i: (go.wait(), finished.append(i)), ()) for i in range(3)])
    go.set()
    coord.join(threads)
    assert sorted(finished) == [0, 1, 2]
    assert coord.joined


def test_join_all_registered_and_some_registered():
    coord = tf.train.Coordinator()
    go = threading.Event()
    t1, t2, t3 = (threading.Thread(target=go.wait, daemon=True) for _ in range(3))
    coord.register_thread(t1)
    coord.register_thread(t2)
    for t in (t1, t2, t3):
        t.start()
    go.set()
    coord.join([t3])  # registered threads are joined too
    assert not any(t.is_alive() for t in (t1, t2, t3))


def test_join_grace_expires_names_the_stragglers():
    coord = tf.train.Coordinator()
    hold = threading.Event()
    straggler = threading.Thread(target=hold.wait, name="straggler-7", daemon=True)
    straggler.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="threads still running: straggler-7"):
        coord.join([straggler], stop_grace_period_secs=0.01)
    hold.set()


def test_join_without_grace_expiry_error_when_ignoring_live_threads():
    coord = tf.train.Coordinator()
    hold = threading.Event()
    t = threading.Thread(target=hold.wait, daemon=True)
    t.start()
    coord.request_stop()
    coord.join([t], stop_grace_period_secs=0.01, ignore_live_threads=True)
    hold.set()


@pytest.mark.parametrize("as_exception", [True, False])
def test_join_reraises_the_first_reported_error(as_exception):
    coord = tf.train.Coordinator()
    go1, go2, done1 = threading.Event(), threading.Event(), threading.Event()
    threads = _threads(
        (_raise_on_event, (coord, go1, RuntimeError("First"), as_exception, done1)),
        (_raise_on_event, (coord, go2, RuntimeError("Too late"), as_exception)))
    go1.set()
    done1.wait()
    go2.set()
    with pytest.raises(RuntimeError, match="First"):
        coord.join(threads)


def test_join_reraises_errors_caught_by_stop_on_exception():
    coord = tf.train.Coordinator()
    go1, go2 = threading.Event(), threading.Event()
    threads = _threads((_raise_in_handler, (coord, go1, RuntimeError("First"))),
                       (_raise_in_handler, (coord, go2, RuntimeError("Too late"))))
    go1.set()
    coord.wait_for_stop()
    go2.set()
    with pytest.raises(RuntimeError, match="First"):
        coord.join(threads)


def test_out_of_range_is_a_clean_stop():
    coord = tf.train.Coordinator()
    go = threading.Event()
    threads = _threads((_raise_in_handler,
                        (coord, go, tf.errors.OutOfRangeError(None, None, "done"))))
    go.set()
    coord.join(threads)  # no error
    assert coord.should_stop()


def test_custom_clean_stop_exception_types():
    coord = tf.train.Coordinator(clean_stop_exception_types=(ValueError,))
    go = threading.Event()
    threads = _threads((_raise_in_handler, (coord, go, ValueError("clean"))))
    go.set()
    coord.join(threads)
    coord2 = tf.train.Coordinator(clean_stop_exception_types=(ValueError,))
    coord2.request_stop(tf.errors.OutOfRangeError(None, None, "now a real error"))
    with pytest.raises(tf.errors.OutOfRangeError):
        coord2.join([])


def test_clear_stop_clears_the_exception_too():
    coord = tf.train.Coordinator()
    go = threading.Event()
    threads = _threads((_raise_on_event, (coord, go, RuntimeError("First"))))
    go.set()
    with pytest.raises(RuntimeError, match="First"):
        coord.join(threads)
    coord.clear_stop()
    assert not coord.should_stop()
    go2 = threading.Event()
    threads = _threads((_raise_on_event, (coord, go2, RuntimeError("Second"))))
    go2.set()
    with pytest.raises(RuntimeError, match="Second"):
        coord.join(threads)


@pytest.mark.parametrize("as_exc_info", [False, True])
def test_request_stop_with_an_error_after_join_raises_it(as_exc_info):
    coord = tf.train.Coordinator()
    coord.request_stop()
    coord.join([])
    coord.request_stop()  # no error: nothing to raise
    try:
        raise ValueError("unexpected error")
    except ValueError as e:
        reported = sys.exc_info() if as_exc_info else e
    with pytest.raises(ValueError, match="unexpected error"):
        coord.request_stop(ex=reported)


def test_raise_requested_exception():
    coord = tf.train.Coordinator()
    coord.raise_requested_exception()  # nothing requested: no error
    coord.request_stop(RuntimeError("kept"))
    with pytest.raises(RuntimeError, match="kept"):
        coord.raise_requested_exception()


def _stop_at_zero(coord, n):
    if n[0] == 0:
        coord.request_stop()
    else:
        n[0] -= 1


@pytest.mark.parametrize("how", ["args", "kwargs", "mixed"])
def test_looper_thread_target_arguments(how):
    n = [3]
    coord = tf.train.Coordinator()
    call = {"args": {"args": (coord, n)}, "kwargs": {"kwargs": {"coord": coord, "n": n}},
            "mixed": {"args": (coord,), "kwargs": {"n": n}}}[how]
    thread = tf.train.LooperThread.loop(coord, 0, target=_stop_at_zero, **call)
    coord.join([thread])
    assert n[0] == 0


def test_looper_thread_subclass_hooks_and_errors():
    calls = []

    class Looper(tf.train.LooperThread):
        def start_loop(self):
            calls.append("start")

        def run_loop(self):
            calls.append("run")
            if calls.count("run") == 2:
                raise RuntimeError("loop failed")

        def stop_loop(self):
            calls.append("stop")  # not reached: the error ends the loop

    coord = tf.train.Coordinator()
    looper = Looper(coord, None)
    looper.start()
    with pytest.raises(RuntimeError, match="loop failed"):
        coord.join()
    assert calls == ["start", "run", "run"]
    with pytest.raises(ValueError, match="must be a Coordinator"):
        tf.train.LooperThread("not a coordinator", 1.0)

"""DaemonPool gives every pending item its own thread (items may wait on each other)."""
import threading

from tensorweave.runtime.threads import DaemonPool


def test_items_that_wait_on_each_other_do_not_deadlock():
    pool = DaemonPool(8, "t")
    for _ in range(50):  # the race needs back-to-back submits; repeat to catch it
        gate = threading.Event()
        first = pool.submit(gate.wait, 5)   # blocks until the second item runs
        second = pool.submit(gate.set)
        assert first.result(timeout=5) is True
        second.result(timeout=5)


def test_exceptions_reach_the_future():
    pool = DaemonPool(2, "t")
    fut = pool.submit(lambda: 1 / 0)
    try:
        fut.result(timeout=5)
    except ZeroDivisionError:
        pass
    else:
        raise AssertionError("expected ZeroDivisionError")

"""Helpers shared by the session tests."""
import threading
import time

import tensorweave as tf


def run_then_close(sess, fetch, wait=0.3, join=10.0):
    """Closes `sess` `wait` seconds after another thread entered `sess.run(fetch)`; returns
    (whether that thread is still running after `join` seconds, what its run raised or None)."""
    box = {}

    def blocked():
        try:
            sess.run(fetch)
        except BaseException as e:  # noqa: BLE001 - returned to the caller to check
            box["error"] = e
    t = threading.Thread(target=blocked)
    t.start()
    time.sleep(wait)
    sess.close()
    t.join(join)
    return t.is_alive(), box.get("error")


def close_while_blocked(sess, fetch, wait=0.3):
    """Closes `sess` while another thread is blocked in `sess.run(fetch)`; returns the
    messages of the CancelledErrors that run raised (empty if it raised none)."""
    _, error = run_then_close(sess, fetch, wait)
    return [error.message] if isinstance(error, tf.errors.CancelledError) else []

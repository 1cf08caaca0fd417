"""Helpers shared by the session tests."""
import threading
import time

import tensorweave as tf


def close_while_blocked(sess, fetch, wait=0.3):
    """Closes `sess` while another thread is blocked in `sess.run(fetch)`; returns the
    messages of the CancelledErrors that run raised (empty if it raised none)."""
    seen = []

    def blocked():
        try:
            sess.run(fetch)
        except tf.errors.CancelledError as e:
            seen.append(e.message)
    t = threading.Thread(target=blocked)
    t.start()
    time.sleep(wait)
    sess.close()
    t.join(10)
    return seen

"""`tf.logging` against TF 1.x's tf_logging.py behaviour (our own tests).

Deliberate difference: the logger is named "tensorweave" (TF 1.x: "tensorflow"); it is
the parent of the library's own loggers, so set_verbosity governs them too.
"""
import logging

import pytest

import tensorweave as tf


@pytest.fixture(autouse=True)
def _restore_verbosity():
    logger = logging.getLogger("tensorweave")
    saved = logger.level
    yield
    logger.setLevel(saved)


def _records(caplog):
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "tensorweave"]


def test_level_constants_have_tf_numeric_values():
    assert (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR,
            tf.logging.FATAL) == (10, 20, 30, 40, 50)


def test_logger_is_the_parent_of_the_library_loggers():
    assert tf.logging.get_logger().name == "tensorweave"
    assert logging.getLogger("tensorweave.coordinator").parent is tf.logging.get_logger()


def test_set_and_get_verbosity_round_trip_and_filter(caplog):
    caplog.set_level(logging.DEBUG)
    for level in (tf.logging.DEBUG, tf.logging.INFO, tf.logging.WARN, tf.logging.ERROR,
                  tf.logging.FATAL):
        tf.logging.set_verbosity(level)
        assert tf.logging.get_verbosity() == level
    tf.logging.set_verbosity(tf.logging.ERROR)
    tf.logging.info("hidden %d", 1)
    tf.logging.warn("hidden too")
    tf.logging.error("shown %s", "e")
    assert _records(caplog) == [(40, "shown e")]


def test_library_loggers_follow_set_verbosity(caplog):
    caplog.set_level(logging.DEBUG)
    tf.logging.set_verbosity(tf.logging.ERROR)
    logging.getLogger("tensorweave.coordinator").info("library info")
    assert not [r for r in caplog.records if r.getMessage() == "library info"]
    tf.logging.set_verbosity(tf.logging.INFO)
    logging.getLogger("tensorweave.coordinator").info("library info")
    assert [r for r in caplog.records if r.getMessage() == "library info"]


def test_each_function_logs_at_its_level(caplog):
    caplog.set_level(logging.DEBUG)
    tf.logging.set_verbosity(tf.logging.DEBUG)
    tf.logging.debug("d%d", 1)
    tf.logging.info("i%d", 2)
    tf.logging.warn("w%d", 3)
    tf.logging.warning("w%d", 4)
    tf.logging.error("e%d", 5)
    tf.logging.fatal("f%d", 6)  # logs only: TF 1.x's Python fatal does not exit
    tf.logging.log(tf.logging.INFO, "l%d", 7)
    tf.logging.vlog(15, "v%d", 8)
    tf.logging.TaskLevelStatusMessage("status")
    assert _records(caplog) == [(10, "d1"), (20, "i2"), (30, "w3"), (30, "w4"), (40, "e5"),
                                (50, "f6"), (20, "l7"), (15, "v8"), (40, "status")]


def test_log_if_logs_only_when_condition_holds(caplog):
    caplog.set_level(logging.DEBUG)
    tf.logging.set_verbosity(tf.logging.INFO)
    tf.logging.log_if(tf.logging.INFO, "no %d", False, 1)
    tf.logging.log_if(tf.logging.INFO, "yes %d", True, 2)
    assert _records(caplog) == [(20, "yes 2")]


def test_log_every_n_counts_per_call_site(caplog):
    caplog.set_level(logging.DEBUG)
    tf.logging.set_verbosity(tf.logging.INFO)
    for i in range(7):
        tf.logging.log_every_n(tf.logging.INFO, "a %d", 3, i)
    for i in range(2):  # another line: its own count, so its first call logs
        tf.logging.log_every_n(tf.logging.INFO, "b %d", 3, i)
    assert [m for _, m in _records(caplog)] == ["a 0", "a 3", "a 6", "b 0"]


def test_log_first_n_counts_per_call_site(caplog):
    caplog.set_level(logging.DEBUG)
    tf.logging.set_verbosity(tf.logging.INFO)
    for i in range(5):
        tf.logging.log_first_n(tf.logging.WARN, "first %d", 2, i)
    assert _records(caplog) == [(30, "first 0"), (30, "first 1")]



@pytest.mark.slow
def test_a_script_sees_info_lines_on_stderr_after_set_verbosity():
    # As in TF 1.x: with no logging configured, tf.logging prints "LEVEL:name:message"
    # to stderr, and INFO shows only after set_verbosity(INFO).
    import subprocess
    import sys
    script = ("import tensorweave as tf\n"
              "tf.logging.info('hidden before')\n"
              "tf.logging.set_verbosity(tf.logging.INFO)\n"
              "tf.logging.info('step %d', 7)\n"
              "tf.logging.warn('careful')\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120, check=True)
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith(("INFO:", "WARNING:"))]
    assert lines == ["INFO:tensorweave:step 7", "WARNING:tensorweave:careful"]

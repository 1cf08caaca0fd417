"""Where the tests find the repository and their data files, wherever a test file sits
under tests/<area>/.

Example:
    >>> from suite_paths import REPO_ROOT, TEST_DATA
    >>> TEST_DATA / "tf_written" / "ckpt"
"""
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO_ROOT = TESTS.parent
TEST_DATA = TESTS / "data"

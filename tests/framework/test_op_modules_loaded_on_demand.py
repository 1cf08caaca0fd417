"""A graph naming an op whose module is imported only by a lazily loaded library
(tf.feature_column's VocabularyLookup) imports in a process that never named that
library: the op registry loads the op modules on the first unknown name."""
import subprocess
import sys

from suite_paths import REPO_ROOT


def test_an_op_of_a_lazily_loaded_library_is_found():
    code = (
        "import sys\n"
        "import tensorweave  # noqa: F401\n"
        "assert 'tensorweave.ops.lookup.vocab_ops' not in sys.modules\n"
        "from tensorweave.framework.op_def import get_op_def\n"
        "print(get_op_def('VocabularyLookup').name)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(REPO_ROOT), timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "VocabularyLookup"

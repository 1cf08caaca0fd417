"""`tensorweave.python.*`: TF 1.15's internal module paths, served by tensorweave's modules.

Code written for TF imports from `tensorflow.python...`; with the package name
swapped it runs here: `tensorweave.python.<path>` offers the public names TF
1.15's module has at that path, each mapped onto our own module (the table is
`tensorweave/python/table.py`), never a copy. A TF name we have not built
raises AttributeError saying so.

Example:
    >>> from tensorweave.python.framework import ops
    >>> from tensorweave.python.training import session_run_hook
    >>> import tensorweave.python.ops.array_ops as array_ops
    >>> ops.get_default_graph() is tensorweave.get_default_graph()
    True
"""
from tensorweave.python.modules import install

install()

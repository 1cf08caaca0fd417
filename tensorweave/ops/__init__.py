"""The op families, one sub-package each: array, math, nn, control_flow, data_flow,
state, io, random, summary, training, dataset, sparse.

Each op is one stanza (definition, shape function, kernels, gradient) in its family's
modules; see docs/architecture.md and docs/op_authoring.md. Users reach ops through
`tensorweave` (`tf.*`), `tf.nn`, `tf.data`, ...
"""

import importlib as _importlib
import pkgutil as _pkgutil

from tensorweave.framework import op_def as _op_def

_loaded_all = False


def _load_every_op_module(_name: str) -> None:
    # Some op modules are imported only by the library that uses them (tf.feature_column
    # loads when first named): a graph imported before that (a meta graph with a
    # VocabularyLookup) still finds its ops. Once per process; cheap next to an import.
    global _loaded_all
    if _loaded_all:
        return
    _loaded_all = True
    for info in _pkgutil.walk_packages(__path__, __name__ + "."):
        _importlib.import_module(info.name)


_op_def.on_missing_op(_load_every_op_module)

"""TF 1.x's module attributes that programs print or check (Kubeflow's smoke test
prints `tf.__git_version__`), with honest values: tensorweave's own version, TF's
API level, and the GraphDef versions our exported graphs carry.
"""
from __future__ import annotations

import tensorweave as tf
from tensorweave.framework import versions


def test_dunder_names_are_the_constants_of_the_same_name():
    assert tf.__version__ == tf.VERSION == tf.version.VERSION == "1.15.0"
    assert tf.__git_version__ == tf.GIT_VERSION == tf.version.GIT_VERSION
    assert tf.__compiler_version__ == tf.COMPILER_VERSION == tf.version.COMPILER_VERSION
    assert tf.__cxx11_abi_flag__ == tf.CXX11_ABI_FLAG
    assert tf.__monolithic_build__ == tf.MONOLITHIC_BUILD


def test_values_say_what_tensorweave_is():
    assert tf.GIT_VERSION == f"tensorweave-{versions.TENSORWEAVE_VERSION}"
    assert isinstance(tf.COMPILER_VERSION, str) and tf.COMPILER_VERSION
    # ints, as TF's: no C++ library is built here
    assert tf.CXX11_ABI_FLAG == 0 and tf.MONOLITHIC_BUILD == 0
    assert type(tf.CXX11_ABI_FLAG) is int and type(tf.MONOLITHIC_BUILD) is int


def test_graph_def_versions_are_those_our_graph_defs_carry():
    assert tf.GRAPH_DEF_VERSION == tf.version.GRAPH_DEF_VERSION == 134  # TF 1.15's
    assert tf.GRAPH_DEF_VERSION_MIN_CONSUMER == tf.version.GRAPH_DEF_VERSION_MIN_CONSUMER
    assert tf.GRAPH_DEF_VERSION_MIN_PRODUCER == tf.version.GRAPH_DEF_VERSION_MIN_PRODUCER
    with tf.Graph().as_default() as g:
        tf.constant(1.0)
    graph_def = g.as_graph_def()
    assert graph_def.versions.producer == tf.GRAPH_DEF_VERSION
    assert graph_def.versions.min_consumer == tf.GRAPH_DEF_VERSION_MIN_CONSUMER
    assert tf.GRAPH_DEF_VERSION_MIN_PRODUCER <= graph_def.versions.producer


def test_compat_v1_has_them_too():
    v1 = tf.compat.v1
    for name in ("GIT_VERSION", "COMPILER_VERSION", "GRAPH_DEF_VERSION", "VERSION",
                 "CXX11_ABI_FLAG", "MONOLITHIC_BUILD"):
        assert getattr(v1, name) == getattr(tf, name), name
    assert v1.version.GIT_VERSION == tf.GIT_VERSION


def test_the_installed_package_carries_the_version_the_module_says():
    """pyproject.toml reads the version from `versions.py`, its one home."""
    from importlib import metadata
    assert metadata.version("tensorweave") == versions.TENSORWEAVE_VERSION

"""Issue 15, "a protobuf range as wide as real TF's": every generated *_pb2.py must load
under the lowest protobuf pyproject.toml allows. protobuf refuses gencode newer than its
runtime (VersionError at import), so each file's declared gencode version must not be
above that bound. (`python -m bench.protobuf_range` installs both ends and runs a
distributed step; this test catches a file regenerated with a too-new protoc.)"""
from __future__ import annotations

import re
import tomllib
from suite_paths import REPO_ROOT

ROOT = REPO_ROOT
_GENCODE = re.compile(r"ValidateProtobufRuntimeVersion\(\s*_runtime_version\.Domain\.PUBLIC,"
                      r"\s*(\d+),\s*(\d+),\s*(\d+),")


def _lowest_allowed() -> tuple[int, ...]:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    spec = next(d for d in deps if d.startswith("protobuf"))
    low = re.search(r">=\s*([\d.]+)", spec)
    assert low, f"{spec!r} has no lower bound"
    return tuple(int(p) for p in low.group(1).split("."))


def test_lower_bound_is_as_wide_as_tf_2_21():
    assert _lowest_allowed() <= (6, 31, 1)


def test_every_generated_module_loads_at_the_lowest_allowed_protobuf():
    low = _lowest_allowed()
    files = sorted((ROOT / "tensorweave").rglob("*_pb2.py"))
    assert len(files) >= 10
    too_new = {}
    for path in files:
        m = _GENCODE.search(path.read_text())
        assert m, f"{path} declares no gencode version"
        version = tuple(int(g) for g in m.groups())
        if version > low:
            too_new[str(path.relative_to(ROOT))] = ".".join(map(str, version))
    assert not too_new, (f"generated with a protoc newer than protobuf "
                         f"{'.'.join(map(str, low))}: {too_new}; regenerate with ./dev.sh protos")


def test_every_generated_module_has_its_checked_in_stub():
    for path in (ROOT / "tensorweave").rglob("*_pb2.py"):
        assert path.with_suffix(".pyi").exists(), f"{path} has no .pyi stub"

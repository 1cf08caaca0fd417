"""`tf.gfile` / `tf.io.gfile` over local files (tensorweave/platform/gfile.py), checked
against the behaviour TF 1.x's file_io_test.py and gfile_test.py describe."""
from __future__ import annotations

import os
import pathlib
import time

import numpy as np
import pytest

from tensorweave.framework import errors
from tensorweave.platform import gfile


def _write(path: pathlib.Path | str, text: str) -> None:
    with gfile.GFile(path, "w") as f:
        f.write(text)


def _tree(root: pathlib.Path) -> str:
    """root/file1.txt, root/sub1/file2.txt, root/sub2/deep/, root/sub3/."""
    gfile.MakeDirs(root / "sub1")
    gfile.MakeDirs(root / "sub2" / "deep")
    gfile.MakeDirs(root / "sub3")
    _write(root / "file1.txt", "1")
    _write(root / "sub1" / "file2.txt", "2")
    return str(root)


# --- paths and directories ---------------------------------------------------------------

def test_exists_and_isdir(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "f.txt"
    assert not gfile.Exists(f) and not gfile.IsDirectory(f)
    _write(f, "x")
    assert gfile.Exists(str(f)) and gfile.Exists(os.fsencode(f))  # str, bytes, PathLike
    assert not gfile.IsDirectory(f)
    assert gfile.IsDirectory(tmp_path) and gfile.Exists(tmp_path)


def test_makedirs_nested_and_existing(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "a" / "b" / "c"
    gfile.MakeDirs(d)
    gfile.MakeDirs(d)  # repeating is fine
    assert gfile.IsDirectory(d)
    gfile.MakeDirs("")  # TF: a no-op


def test_makedirs_over_a_file(tmp_path: pathlib.Path) -> None:
    _write(tmp_path / "f", "x")
    with pytest.raises(errors.FailedPreconditionError, match="f"):
        gfile.MakeDirs(tmp_path / "f")
    with pytest.raises(errors.FailedPreconditionError):
        gfile.MakeDirs(tmp_path / "f" / "below")


def test_mkdir_errors(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "d"
    gfile.MkDir(d)
    assert gfile.IsDirectory(d)
    with pytest.raises(errors.AlreadyExistsError, match=f"{d}.*MakeDirs"):
        gfile.MkDir(d)
    with pytest.raises(errors.NotFoundError, match="parent.*MakeDirs"):
        gfile.MkDir(tmp_path / "missing" / "d")


def test_listdir_names(tmp_path: pathlib.Path) -> None:
    _tree(tmp_path)
    _write(tmp_path / ".hidden", "h")
    assert gfile.ListDirectory(tmp_path) == [".hidden", "file1.txt", "sub1", "sub2", "sub3"]
    with pytest.raises(errors.NotFoundError, match="does not exist"):
        gfile.ListDirectory(tmp_path / "nope")
    with pytest.raises(errors.NotFoundError, match="is a file"):
        gfile.ListDirectory(tmp_path / "file1.txt")


def test_walk_in_order(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path / "t")
    got = list(gfile.Walk(root, in_order=True))
    assert got == [
        (root, ["sub1", "sub2", "sub3"], ["file1.txt"]),
        (os.path.join(root, "sub1"), [], ["file2.txt"]),
        (os.path.join(root, "sub2"), ["deep"], []),
        (os.path.join(root, "sub2", "deep"), [], []),
        (os.path.join(root, "sub3"), [], []),
    ]


def test_walk_post_order(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path / "t")
    dirs = [d for d, _, _ in gfile.Walk(root, in_order=False)]
    assert dirs == [os.path.join(root, "sub1"), os.path.join(root, "sub2", "deep"),
                    os.path.join(root, "sub2"), os.path.join(root, "sub3"), root]
    # tf.io.gfile.walk's keyword is `topdown`; positional in_order works for both.
    assert [d for d, _, _ in gfile.walk(root, topdown=False)] == dirs
    assert [d for d, _, _ in gfile.walk(root, False)] == dirs


def test_walk_pruning_missing_and_symlink_cycle(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path / "t")
    seen = []
    for dirname, subdirs, _ in gfile.Walk(root):
        seen.append(dirname)
        if "sub2" in subdirs:
            subdirs.remove("sub2")  # pruning in place skips it, as os.walk
    assert os.path.join(root, "sub2", "deep") not in seen
    assert list(gfile.Walk(tmp_path / "missing")) == []
    errs: list[errors.OpError] = []
    assert list(gfile.walk(tmp_path / "missing", onerror=errs.append)) == []
    assert isinstance(errs[0], errors.NotFoundError)
    os.symlink(root, os.path.join(root, "sub3", "loop"))
    dirs = [d for d, _, _ in gfile.Walk(root)]
    assert os.path.join(root, "sub3", "loop") not in dirs  # listed, never re-entered
    assert len(dirs) == 5


def test_glob_patterns_and_lists(tmp_path: pathlib.Path) -> None:
    d = tmp_path / "dir_(special)"
    gfile.MakeDirs(d)
    for name in ["file1.txt", "file2.txt", "file3.txt", "other.csv", ".dot.txt"]:
        _write(d / name, "x")
    paths = {n: os.path.join(d, n) for n in os.listdir(d)}
    assert gfile.Glob(os.path.join(d, "file*.txt")) == [
        paths["file1.txt"], paths["file2.txt"], paths["file3.txt"]]
    assert gfile.Glob(os.path.join(d, "file[13].txt")) == [paths["file1.txt"],
                                                           paths["file3.txt"]]
    assert paths[".dot.txt"] in gfile.Glob(os.path.join(d, "*.txt"))  # TF's `*` matches "."
    assert gfile.Glob([paths["file1.txt"], os.path.join(d, "*.csv")]) == [
        paths["file1.txt"], paths["other.csv"]]
    assert gfile.Glob([]) == [] and gfile.Glob(()) == []
    assert gfile.Glob(os.path.join(tmp_path, "nope", "*")) == []
    assert gfile.glob(pathlib.Path(d) / "*.csv") == [paths["other.csv"]]


@pytest.mark.parametrize("op", [gfile.Rename, gfile.Copy])
def test_rename_copy_overwrite(tmp_path: pathlib.Path, op) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    _write(src, "new")
    _write(dst, "old")
    with pytest.raises(errors.AlreadyExistsError, match=f"{dst}.*overwrite=True"):
        op(src, dst)
    assert gfile.GFile(dst).read() == "old" and gfile.Exists(src)
    op(src, dst, overwrite=True)
    assert gfile.GFile(dst).read() == "new"
    assert gfile.Exists(src) == (op is gfile.Copy)
    with pytest.raises(errors.NotFoundError, match=str(tmp_path / "absent")):
        op(tmp_path / "absent", tmp_path / "x")
    _write(src, "again")
    with pytest.raises(errors.NotFoundError):  # destination's directory is missing
        op(src, tmp_path / "nodir" / "f")


def test_rename_directory_and_copy_directory_refused(tmp_path: pathlib.Path) -> None:
    gfile.MakeDirs(tmp_path / "d1" / "inner")
    gfile.Rename(tmp_path / "d1", tmp_path / "d2")
    assert gfile.IsDirectory(tmp_path / "d2" / "inner") and not gfile.Exists(tmp_path / "d1")
    _write(tmp_path / "f", "x")
    with pytest.raises(errors.FailedPreconditionError, match="directory"):
        gfile.Copy(tmp_path / "d2", tmp_path / "d3")
    with pytest.raises(errors.FailedPreconditionError, match=str(tmp_path / "d2" / "f")):
        gfile.Copy(tmp_path / "f", tmp_path / "d2", overwrite=True)
    gfile.Copy(tmp_path / "f", tmp_path / "f", overwrite=True)  # onto itself: unchanged
    assert gfile.GFile(tmp_path / "f").read() == "x"


def test_remove_and_rmtree(tmp_path: pathlib.Path) -> None:
    root = _tree(tmp_path / "t")
    with pytest.raises(errors.FailedPreconditionError, match="DeleteRecursively"):
        gfile.Remove(root)
    gfile.Remove(os.path.join(root, "file1.txt"))
    assert not gfile.Exists(os.path.join(root, "file1.txt"))
    with pytest.raises(errors.NotFoundError, match="file1.txt"):
        gfile.Remove(os.path.join(root, "file1.txt"))
    gfile.DeleteRecursively(os.path.join(root, "sub1", "file2.txt"))  # a file: just it
    gfile.DeleteRecursively(root)
    assert not gfile.Exists(root)
    with pytest.raises(errors.NotFoundError, match=str(root)):
        gfile.DeleteRecursively(root)


def test_rmtree_removes_symlink_not_target(tmp_path: pathlib.Path) -> None:
    target = _tree(tmp_path / "t")
    link = tmp_path / "link"
    os.symlink(target, link)
    gfile.rmtree(link)
    assert not os.path.lexists(link) and gfile.Exists(os.path.join(target, "file1.txt"))


def test_stat(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "f"
    _write(f, "testing")
    st = gfile.Stat(f)
    assert st.length == 7 and not st.is_directory
    assert st.mtime_nsec == os.stat(f).st_mtime_ns
    assert abs(st.mtime_nsec / 1e9 - time.time()) < 60
    assert gfile.Stat(tmp_path).is_directory
    with pytest.raises(errors.NotFoundError, match="missing"):
        gfile.Stat(tmp_path / "missing")


# --- GFile ----------------------------------------------------------------------------

def test_gfile_text_and_binary(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "f"
    with gfile.GFile(f, "w") as fh:
        fh.write("héllo\r\n")
        fh.write(b"bytes too\n")  # TF's write takes str or bytes in any mode
    assert gfile.GFile(f, "r").read() == "héllo\r\nbytes too\n"  # no newline translation
    assert gfile.GFile(f, "rb").read() == "héllo\r\nbytes too\n".encode()
    with gfile.GFile(f, "wb") as fh:
        fh.write(b"\x00\xff")
        fh.write("z")
    assert gfile.GFile(f, "rb").read() == b"\x00\xffz"
    with pytest.raises(UnicodeDecodeError, match="'rb'"):
        gfile.GFile(f).read()
    with pytest.raises(TypeError, match="str or bytes"):
        gfile.GFile(f, "w").write(3)  # type: ignore[arg-type]


def test_gfile_read_n_counts_bytes(tmp_path: pathlib.Path) -> None:
    _write(tmp_path / "f", "testing1\ntesting2\ntesting3\n\ntesting5")
    fh = gfile.GFile(tmp_path / "f")
    assert fh.size() == 36
    assert fh.read(9) == "testing1\n" and fh.read(9) == "testing2\n"
    assert fh.read(1) == "t" and fh.read() == "esting3\n\ntesting5"
    assert fh.read(5) == ""  # at the end: empty, no error
    with pytest.raises(errors.InvalidArgumentError):
        fh.read(-2)
    _write(tmp_path / "u", "aé")  # "é" is 2 bytes: read(2) finishes the character
    fu = gfile.GFile(tmp_path / "u")
    assert fu.read(2) == "aé" and fu.tell() == 3


def test_gfile_lines_and_iteration(tmp_path: pathlib.Path) -> None:
    data = ["testing1\n", "testing2\n", "testing3\n", "\n", "testing5"]
    with gfile.GFile(tmp_path / "f", "w") as fh:
        fh.writelines(data)
    fh = gfile.GFile(tmp_path / "f")
    assert fh.readline() == "testing1\n" and fh.tell() == 9
    assert fh.readlines() == data[1:]
    assert fh.readline() == "" and fh.tell() == 36
    assert list(gfile.GFile(tmp_path / "f")) == data
    assert list(gfile.GFile(tmp_path / "f", "rb")) == [d.encode() for d in data]
    assert gfile.Open(tmp_path / "f", "rb").readlines()[0] == b"testing1\n"


def test_gfile_append(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "f"
    _write(f, "begin\n")
    for line in ["a1\n", "a2\n"]:
        with gfile.GFile(f, "a") as fh:
            fh.write(line)
    with gfile.GFile(f, "ab") as fh:
        fh.write(b"a3\n")
    assert gfile.GFile(f).read() == "begin\na1\na2\na3\n"


def test_gfile_seek_tell(tmp_path: pathlib.Path) -> None:
    _write(tmp_path / "f", "testing1\ntesting2\ntesting3\n\ntesting5")
    fh = gfile.GFile(tmp_path / "f")
    assert fh.tell() == 0
    assert fh.seek(18) == 18 and fh.readline() == "testing3\n"
    fh.seek(9)
    assert fh.tell() == 9 and fh.readline() == "testing2\n"
    fh.seek(position=9)  # TF's deprecated keyword
    assert fh.readline() == "testing2\n"
    fh.seek(0)
    fh.readline()
    fh.seek(9, 1)
    assert fh.tell() == 18
    fh.seek(-fh.size(), 2)
    assert fh.tell() == 0
    fh.seek(0, 2)
    assert fh.tell() == 36
    with pytest.raises(errors.InvalidArgumentError, match="before the start"):
        fh.seek(-1)
    with pytest.raises(errors.InvalidArgumentError, match="whence"):
        fh.seek(0, 3)
    with pytest.raises(TypeError):
        fh.seek()
    with pytest.raises(TypeError):
        fh.seek(offset=0, position=0)


def test_gfile_size_sees_buffered_writes_and_truncate(tmp_path: pathlib.Path) -> None:
    fh = gfile.GFile(tmp_path / "f", "w")
    fh.write("0" * 1000)
    assert fh.size() == 1000
    fh.close()
    with gfile.GFile(tmp_path / "f", "a+") as fh:
        fh.truncate(6)
        assert fh.size() == 6


def test_gfile_context_manager_closes(tmp_path: pathlib.Path) -> None:
    with gfile.GFile(tmp_path / "f", "w") as fh:
        assert not fh.closed
    assert fh.closed
    assert gfile.Exists(tmp_path / "f")  # "w" creates the file even with no write
    with pytest.raises(ValueError, match="closed"):
        fh.write("late")
    fh.close()  # closing twice is fine
    with pytest.raises(RuntimeError):
        with gfile.FastGFile(tmp_path / "g", "w") as g:
            g.write("partial")
            raise RuntimeError("boom")
    assert g.closed and gfile.GFile(tmp_path / "g").read() == "partial"


def test_gfile_mode_errors(tmp_path: pathlib.Path) -> None:
    _write(tmp_path / "f", "x")
    with pytest.raises(errors.PermissionDeniedError, match="not allow writing"):
        gfile.GFile(tmp_path / "f", "r").write("y")
    with pytest.raises(errors.PermissionDeniedError, match="not allow reading"):
        gfile.GFile(tmp_path / "f", "w").read()
    with pytest.raises(errors.InvalidArgumentError, match="mode"):
        gfile.GFile(tmp_path / "f", "x")
    fh = gfile.GFile(tmp_path / "missing")  # opened lazily, as TF: fails at first read
    with pytest.raises(errors.NotFoundError, match="missing"):
        fh.read()
    with pytest.raises(errors.NotFoundError, match="MakeDirs"):
        gfile.GFile(tmp_path / "nodir" / "f", "w").write("x")
    with pytest.raises(errors.FailedPreconditionError):
        gfile.GFile(tmp_path, "r").read()


def test_gfile_read_write_plus_mode(tmp_path: pathlib.Path) -> None:
    with gfile.GFile(tmp_path / "f", "w+") as fh:
        fh.write("testing")
        fh.seek(0)
        assert fh.read() == "testing"
    with gfile.GFile(tmp_path / "f", "rb+") as fh:
        fh.seek(4)
        fh.write(b"ED")
    assert gfile.GFile(tmp_path / "f").read() == "testEDg"


def test_gfile_as_file_object_for_numpy(tmp_path: pathlib.Path) -> None:
    # TF's testFileSeekableWithZip: np.load reads a .npz (a zip) through GFile.
    np.savez_compressed(tmp_path / "a.npz", a=np.arange(5))
    with gfile.GFile(tmp_path / "a.npz", "rb") as fh:
        np.testing.assert_array_equal(np.load(fh)["a"], np.arange(5))
    with gfile.GFile(tmp_path / "b.npy", "wb") as fh:
        np.save(fh, np.ones(3))
    np.testing.assert_array_equal(np.load(gfile.GFile(tmp_path / "b.npy", "rb")), np.ones(3))


# --- schemes, aliases, TF1 usage --------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: gfile.Exists("gs://bucket/train"),
    lambda: gfile.MakeDirs("hdfs://namenode/tmp/x"),
    lambda: gfile.GFile("s3://bucket/file.txt"),
    lambda: gfile.Glob(["/tmp/*", "gs://bucket/*"]),
])
def test_url_scheme_unimplemented(call) -> None:
    with pytest.raises(errors.UnimplementedError, match="://.*local files only"):
        call()


def test_file_scheme_is_local(tmp_path: pathlib.Path) -> None:
    _write(tmp_path / "f", "x")
    assert gfile.Exists("file://" + str(tmp_path / "f"))
    assert gfile.GFile("file://" + str(tmp_path / "f")).read() == "x"


def test_lowercase_names_take_tf_io_gfile_parameters(tmp_path: pathlib.Path) -> None:
    # tf.io.gfile's names use TF's newer parameter names (path, src/dst, pattern, topdown).
    d = str(tmp_path / "d")
    gfile.makedirs(path=d)
    gfile.mkdir(path=d + "/e")
    _write(tmp_path / "d" / "f", "x")
    gfile.copy(src=d + "/f", dst=d + "/g", overwrite=False)
    gfile.rename(src=d + "/g", dst=d + "/h")
    assert gfile.exists(path=d + "/h") and gfile.isdir(path=d + "/e")
    assert sorted(gfile.listdir(path=d)) == ["e", "f", "h"]
    assert gfile.glob(pattern=d + "/[fh]") == sorted([d + "/f", d + "/h"])
    assert gfile.stat(path=d + "/f").length == 1
    assert [top for top, _, _ in gfile.walk(d, topdown=False)][-1] == d
    gfile.remove(path=d + "/h")
    gfile.rmtree(path=d)
    assert not gfile.exists(d)
    assert gfile.Open is gfile.GFile and issubclass(gfile.FastGFile, gfile.GFile)
    assert issubclass(errors.NotFoundError, errors.OpError)


def test_tf1_train_dir_snippet(tmp_path: pathlib.Path) -> None:
    train_dir = str(tmp_path / "train")
    for _ in range(2):  # the second run finds the directory and starts afresh
        if gfile.Exists(train_dir):
            gfile.DeleteRecursively(train_dir)
        gfile.MakeDirs(train_dir)
        assert gfile.ListDirectory(train_dir) == []
        with gfile.GFile(os.path.join(train_dir, "log.txt"), "w") as f:
            f.write("step 0\n")
    assert gfile.Glob(os.path.join(train_dir, "*.txt")) == [os.path.join(train_dir, "log.txt")]


def test_tf1_and_tf2_names_reach_the_same_module(tmp_path):
    import tensorweave as tf
    assert tf.gfile is tf.io.gfile
    train_dir = str(tmp_path / "train")
    for _ in range(2):  # the TF1 trainer's opening lines, run twice
        if tf.gfile.Exists(train_dir):
            tf.gfile.DeleteRecursively(train_dir)
        tf.gfile.MakeDirs(train_dir)
        with tf.gfile.GFile(train_dir + "/flags.txt", "w") as f:
            f.write("lr=0.1\n")
    assert tf.io.gfile.listdir(train_dir) == ["flags.txt"]

"""tf.keras.utils.get_file: the cache first, file:// downloads, hashes, archives, offline errors.

No test here touches the network: origins are file:// URLs or unreachable ones
that must never be fetched because the file is already cached.
"""
import hashlib
import io
import os
import tarfile
import zipfile

import pytest

import tensorweave as tf
from tensorweave.keras.utils_data import validate_file

UNREACHABLE = "http://127.0.0.1:9/never-fetched.bin"  # port 9 (discard): nothing listens


def _source(tmp_path, data=b"hello data\n", name="src.bin"):
    path = tmp_path / "origin" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(data)
    return path, path.as_uri()


def test_a_cached_file_is_returned_without_any_download(tmp_path, capsys):
    cached = tmp_path / "cache" / "datasets" / "data.bin"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"already here")
    got = tf.keras.utils.get_file("data.bin", UNREACHABLE, cache_dir=str(tmp_path / "cache"))
    assert got == str(cached)
    assert "Downloading" not in capsys.readouterr().out


def test_file_url_is_downloaded_into_cache_subdir_once(tmp_path, capsys):
    src, url = _source(tmp_path)
    cache = tmp_path / "cache"
    got = tf.keras.utils.get_file("copy.bin", url, cache_dir=str(cache), cache_subdir="mine")
    assert got == str(cache / "mine" / "copy.bin")
    assert open(got, "rb").read() == src.read_bytes()
    assert "Downloading data from " + url in capsys.readouterr().out
    src.unlink()  # the second call must use the cache
    assert tf.keras.utils.get_file("copy.bin", url, cache_dir=str(cache),
                                   cache_subdir="mine") == got


@pytest.mark.parametrize("algo", ["md5", "sha256"])
def test_a_cached_file_with_the_wrong_hash_is_fetched_again(tmp_path, algo):
    src, url = _source(tmp_path, b"fresh")
    digest = hashlib.new(algo, b"fresh").hexdigest()
    cached = tmp_path / "c" / "datasets" / "f.bin"
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"stale")
    got = tf.keras.utils.get_file("f.bin", url, file_hash=digest, cache_dir=str(tmp_path / "c"))
    assert open(got, "rb").read() == b"fresh"
    assert validate_file(got, digest)  # 'auto' tells md5 from sha256 by length


def test_md5_hash_is_the_older_spelling_of_file_hash(tmp_path):
    _, url = _source(tmp_path, b"abc")
    got = tf.keras.utils.get_file("a.bin", url, md5_hash=hashlib.md5(b"abc").hexdigest(),
                                  cache_dir=str(tmp_path / "c"))
    assert open(got, "rb").read() == b"abc"


def test_a_download_with_the_wrong_hash_is_removed_and_refused(tmp_path):
    _, url = _source(tmp_path, b"abc")
    with pytest.raises(ValueError, match="expected 0{64}"):
        tf.keras.utils.get_file("a.bin", url, file_hash="0" * 64, cache_dir=str(tmp_path / "c"))
    assert not (tmp_path / "c" / "datasets" / "a.bin").exists()


def test_offline_error_names_url_and_cache_path_and_leaves_no_partial_file(tmp_path):
    missing = (tmp_path / "nope.bin").as_uri()
    with pytest.raises(OSError) as err:
        tf.keras.utils.get_file("x.bin", missing, cache_dir=str(tmp_path / "c"))
    msg = str(err.value)
    assert "URL fetch failure on " + missing in msg
    assert str(tmp_path / "c" / "datasets" / "x.bin") in msg
    assert not (tmp_path / "c" / "datasets" / "x.bin").exists()


def test_extract_unpacks_tar_and_zip_next_to_the_archive(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("pkg/a.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"tar"))
    _, tar_url = _source(tmp_path, buf.getvalue(), "p.tar.gz")
    zpath = tmp_path / "origin" / "z.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        z.writestr("zdir/b.txt", "zip")
    cache = tmp_path / "c"
    tf.keras.utils.get_file("p.tar.gz", tar_url, extract=True, cache_dir=str(cache))
    tf.keras.utils.get_file("z.zip", zpath.as_uri(), extract=True, cache_dir=str(cache))
    assert (cache / "datasets" / "pkg" / "a.txt").read_text() == "tar"
    assert (cache / "datasets" / "zdir" / "b.txt").read_text() == "zip"
    # untar: the archive is cached as fname.tar.gz, the unpacked fname is returned.
    got = tf.keras.utils.get_file("pkg", tar_url, untar=True, cache_dir=str(tmp_path / "u"))
    assert got == str(tmp_path / "u" / "datasets" / "pkg")
    assert os.path.isfile(got + ".tar.gz") and os.path.isdir(got)


def test_progbar_draws_steps_and_metric_means(capsys):
    bar = tf.keras.utils.Progbar(4, verbose=2, stateful_metrics=["acc"])
    bar.update(2, values=[("loss", 1.0), ("acc", 0.5)])
    bar.update(4, values=[("loss", 3.0), ("acc", 0.75)])
    out = capsys.readouterr().out
    assert out.startswith("4/4 - ") and out.endswith("- loss: 2.0000 - acc: 0.75\n")
    bar = tf.keras.utils.Progbar(10, verbose=1, interval=0)
    bar.add(5)
    bar.add(5)
    assert "10/10 [==============================]" in capsys.readouterr().out

"""`tf.keras.utils.get_file`: a file from a URL, through Keras's cache directory.

The cache comes first, as in TF: a file already at `cache_dir/cache_subdir/fname`
(and matching `file_hash`, when given) is returned without touching the
network, so programs run offline once their data is in place. `file://` URLs
work like any other (urllib).

Example:
    >>> path = tf.keras.utils.get_file(
    ...     "mnist.npz", "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz",
    ...     file_hash="731c5ac602752760c8e48fbffcf8c3b850d9dc2a2aedcf2cc48468fc17b673d1")
"""
from __future__ import annotations

import hashlib
import os
from typing import Any

from tensorweave.keras.utils_progbar import Progbar


def _resolve_algorithm(file_hash: str, algorithm: str) -> str:
    if algorithm == "auto":  # a sha256 digest is 64 hex digits, md5's is 32
        return "sha256" if len(file_hash) == 64 else "md5"
    if algorithm not in ("sha256", "md5"):
        raise ValueError(f"hash_algorithm {algorithm!r}: use 'sha256', 'md5' or 'auto'.")
    return algorithm


def hash_file(fpath: str, algorithm: str = "sha256", chunk_size: int = 65535) -> str:
    """The hex digest of a file (`algorithm`: 'sha256', 'md5' or 'auto', which is sha256).

    Example:
        >>> hash_file("/tmp/data.csv", "md5")
    """
    hasher = hashlib.md5() if algorithm == "md5" else hashlib.sha256()
    with open(fpath, "rb") as f:
        for chunk in iter(lambda: f.read(chunk_size), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


def validate_file(fpath: str, file_hash: str, algorithm: str = "auto",
                  chunk_size: int = 65535) -> bool:
    """Whether the file's digest is `file_hash` ('auto': sha256 for 64 digits, else md5).

    Example:
        >>> validate_file("/tmp/data.csv", "d41d8cd98f00b204e9800998ecf8427e")
    """
    algo = _resolve_algorithm(file_hash, algorithm)
    return hash_file(fpath, algo, chunk_size) == str(file_hash)


def _extract_archive(file_path: str, path: str, archive_format: Any = "auto") -> bool:
    """Unpacks a tar(.gz/.bz2) or zip archive into `path`; False if it is none of them."""
    import tarfile  # here, not at the top: with their compressors, ~18 ms of every
    import zipfile  # process's start (tf.keras is imported by tensorweave itself)
    if archive_format is None:
        return False
    formats = ["tar", "zip"] if archive_format == "auto" else (
        [archive_format] if isinstance(archive_format, str) else list(archive_format))
    for kind in formats:
        if kind == "tar" and tarfile.is_tarfile(file_path):
            with tarfile.open(file_path) as archive:
                archive.extractall(path, filter="data")  # no paths outside `path`
            return True
        if kind == "zip" and zipfile.is_zipfile(file_path):
            with zipfile.ZipFile(file_path) as archive:
                archive.extractall(path)
            return True
    return False


def _cache_dir(cache_dir: str | None, cache_subdir: str) -> str:
    base = os.path.expanduser(cache_dir or os.path.join("~", ".keras"))
    if os.path.isdir(base) and not os.access(base, os.W_OK):
        base = os.path.join("/tmp", ".keras")  # TF's fallback for a read-only home
    datadir = os.path.join(base, cache_subdir)
    os.makedirs(datadir, exist_ok=True)
    return datadir


def _download(origin: str, fpath: str) -> None:
    import urllib.error  # here: ~7 ms of every process's start (ssl, http.client)
    import urllib.request
    print("Downloading data from", origin)
    bar: list[Progbar] = []

    def progress(blocks: int, block_size: int, total: int) -> None:
        if not bar:
            bar.append(Progbar(total if total > 0 else None))
        else:
            bar[0].update(min(blocks * block_size, total) if total > 0 else blocks * block_size)

    try:
        urllib.request.urlretrieve(origin, fpath, progress)
    except (urllib.error.URLError, OSError, ValueError) as e:
        if os.path.exists(fpath):
            os.remove(fpath)  # never leave a partial file in the cache
        code = getattr(e, "code", None) or getattr(e, "errno", None)
        reason = getattr(e, "msg", None) or getattr(e, "reason", None) or str(e)
        raise OSError(f"URL fetch failure on {origin}: {code} -- {reason}. The file was to be "
                      f"cached at {fpath}; when offline, place the file there (get_file "
                      "returns a cached file without downloading).") from e
    except BaseException:
        if os.path.exists(fpath):
            os.remove(fpath)
        raise


def get_file(fname: str, origin: str, untar: bool = False, md5_hash: str | None = None,
             file_hash: str | None = None, cache_subdir: str = "datasets",
             hash_algorithm: str = "auto", extract: bool = False,
             archive_format: Any = "auto", cache_dir: str | None = None) -> str:
    """The local path of `fname` from `origin`, downloaded only if not cached.

    The file lives at `cache_dir/cache_subdir/fname` (default `~/.keras/datasets`;
    `/tmp/.keras` when the home cache is not writable; an absolute `fname` or
    `cache_subdir` is used as is). A cached file whose hash does not match
    `file_hash` (`md5_hash`, older spelling) is downloaded again. `extract`
    unpacks a tar or zip archive next to it; `untar` (older spelling) caches
    `fname + '.tar.gz'` and returns the unpacked `fname`.

    Raises:
        OSError: the download failed (TF's "URL fetch failure on <url>"), naming the
            cache path a manually placed file would be read from.
        ValueError: a file downloaded now does not match `file_hash`.

    Example:
        >>> path = tf.keras.utils.get_file("iris.csv", "file:///data/iris.csv",
        ...                                cache_dir="/tmp/cache")
    """
    if md5_hash is not None and file_hash is None:
        file_hash, hash_algorithm = md5_hash, "md5"
    datadir = _cache_dir(cache_dir, cache_subdir)
    target = os.path.join(datadir, fname)
    fpath = target + ".tar.gz" if untar else target

    download = not os.path.exists(fpath)
    if not download and file_hash is not None and not validate_file(fpath, file_hash,
                                                                   hash_algorithm):
        print(f"A local file was found at {fpath}, but its "
              f"{_resolve_algorithm(file_hash, hash_algorithm)} hash does not match "
              f"{file_hash}: downloading it again.")
        download = True
    if download:
        _download(origin, fpath)
        if file_hash is not None and not validate_file(fpath, file_hash, hash_algorithm):
            got = hash_file(fpath, _resolve_algorithm(file_hash, hash_algorithm))
            os.remove(fpath)
            raise ValueError(f"The file downloaded from {origin} has hash {got}, not the "
                             f"expected {file_hash}; it was removed from {fpath}.")

    if untar:
        if not os.path.exists(target):
            _extract_archive(fpath, datadir, "tar")
        return target
    if extract:
        _extract_archive(fpath, datadir, archive_format)
    return fpath


__all__ = ["get_file", "hash_file", "validate_file"]

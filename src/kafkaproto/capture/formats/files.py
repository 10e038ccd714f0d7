"""Where capture files live: local paths, or any pyarrow filesystem (S3,
GCS, HDFS, a URI ``pyarrow.fs.FileSystem.from_uri`` reads).

Local files are opened by the operating system (and mapped in memory for
byte ranges); a file elsewhere is read as a stream through pyarrow
(:class:`InputFile`), whole: byte ranges need a file mapped in memory.
"""

from __future__ import annotations

import os
import stat

__all__ = ["InputFile", "file_size", "head", "is_folder", "listing", "open_input", "resolve"]


def resolve(where, filesystem=None):
    """A path or URI (and maybe a filesystem) → ``(filesystem, path)``;
    ``filesystem`` is None for a local path (``file://`` URIs included)."""
    where = os.fspath(where)
    if filesystem is not None:
        import pyarrow.fs as pafs

        if isinstance(filesystem, pafs.LocalFileSystem):
            return None, os.path.abspath(where)
        return filesystem, where
    if "://" in where:
        import pyarrow.fs as pafs

        fs, path = pafs.FileSystem.from_uri(where)
        if isinstance(fs, pafs.LocalFileSystem):
            return None, path
        return fs, path
    return None, where


def _info(fs, path):
    info = fs.get_file_info(path)
    import pyarrow.fs as pafs

    if info.type == pafs.FileType.NotFound:
        raise FileNotFoundError(f"no such file or folder: {path}")
    return info


def is_folder(fs, path: str) -> bool:
    if fs is None:
        return os.path.isdir(path)
    import pyarrow.fs as pafs

    return _info(fs, path).type == pafs.FileType.Directory


def exists(fs, path: str) -> bool:
    if fs is None:
        return os.path.exists(path)
    import pyarrow.fs as pafs

    return fs.get_file_info(path).type != pafs.FileType.NotFound


def file_size(fs, path: str) -> int:
    if fs is None:
        return os.path.getsize(path)
    return _info(fs, path).size


def listing(fs, folder: str) -> list[tuple[str, int]]:
    """The files (not folders) directly in ``folder``: ``[(path, size)]``, by name."""
    if fs is None:
        out = []
        for name in sorted(os.listdir(folder)):
            path = os.path.join(folder, name)
            st = os.stat(path)
            if stat.S_ISREG(st.st_mode):
                out.append((path, st.st_size))
        return out
    import pyarrow.fs as pafs

    infos = fs.get_file_info(pafs.FileSelector(folder, recursive=False))
    return sorted((i.path, i.size) for i in infos if i.type == pafs.FileType.File)


def head(fs, path: str, n: int) -> bytes:
    """The first ``n`` bytes of a file (fewer when it is shorter)."""
    with open_input(fs, path) as fh:
        return fh.read(n)


def open_input(fs, path: str):
    """A file object to read ``path`` from its start (a local file, or an :class:`InputFile`)."""
    if fs is None:
        return open(path, "rb")
    return InputFile(fs, path)


class InputFile:
    """A file of a pyarrow filesystem as a binary file object (``read``,
    ``readinto``, ``tell``), named by its path; ``known_size`` is its size,
    which a stream read does not otherwise tell.  Reads go through a buffer
    of ``BUFFER`` bytes: a reader asking for a packet at a time costs one
    request to object storage a megabyte, not one a packet."""

    BUFFER = 1 << 20

    def __init__(self, fs, path: str) -> None:
        self._f = fs.open_input_stream(path, buffer_size=self.BUFFER)
        self.name = path
        self.known_size = _info(fs, path).size

    def read(self, n: int = -1) -> bytes:
        return self._f.read() if n is None or n < 0 else self._f.read(n)

    read1 = read

    def readinto(self, b) -> int:
        return self._f.readinto(b)

    def tell(self) -> int:
        return self._f.tell()

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> InputFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

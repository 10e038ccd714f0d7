"""A local filesystem seen through pyarrow's filesystem interface, which
records each file opened and each read: what a reader asks of object
storage, counted."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.fs as pafs


class CountingFileSystem(pafs.FileSystemHandler):
    """A local filesystem that records each file opened and each read (path, position, bytes)."""

    def __init__(self):
        self.local = pafs.LocalFileSystem()
        self.reads = []
        self.opened = []

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return self is not other

    def get_type_name(self):
        return "counting"

    def normalize_path(self, path):
        return path

    def get_file_info(self, paths):
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector):
        return self.local.get_file_info(selector)

    def open_input_file(self, path):
        self.opened.append(path)
        handler = self

        class Reader:
            def __init__(self):
                self.f = open(path, "rb")
                self.closed = False

            def read(self, n=-1):
                at = self.f.tell()
                data = self.f.read(n)
                handler.reads.append((path, at, len(data)))
                return data

            def seek(self, pos, whence=0):
                return self.f.seek(pos, whence)

            def tell(self):
                return self.f.tell()

            def close(self):
                self.closed = True
                self.f.close()

            def size(self):
                return os.path.getsize(path)

        return pa.PythonFile(Reader(), mode="r")

    open_input_stream = open_input_file

    def create_dir(self, *a):
        raise NotImplementedError

    delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = move = copy_file = create_dir
    open_output_stream = open_append_stream = create_dir

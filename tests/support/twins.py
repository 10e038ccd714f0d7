"""The compiled modules and their pure-Python twins, side by side, for the
tests that compare them (every compiled module has a ``<name>_py`` twin)."""

from __future__ import annotations

import importlib

#: every compiled module of kafkaproto (each beside its twin ``<name>_py``)
MODULES = ("_codec", "_pairing", "messages._engine", "records._batches", "arrow._columns", "arrow._messages",
           "arrow._headers", "arrow._frames", "arrow._records", "capture.walker._sink", "capture.walker._judge",
           "capture.walker._index", "capture.walker._tcp", "capture.walker._framing", "capture.walker._resume",
           "capture.walker._scan", "log._text")


class Impl:
    """One implementation, compiled or twin: its modules, and their names as attributes."""

    def __init__(self, compiled: bool):
        self.compiled = compiled
        self.modules = {}
        for name in MODULES:
            try:
                self.modules[name] = importlib.import_module(f"kafkaproto.{name}{'' if compiled else '_py'}")
            except ModuleNotFoundError:
                if compiled:
                    raise

    def module(self, name: str):
        return self.modules[name]

    def __getattr__(self, attr):
        for mod in self.__dict__.get("modules", {}).values():
            if hasattr(mod, attr):
                return getattr(mod, attr)
        raise AttributeError(attr)

    def arrow_messages(self, arr, kind, cls, versions=None, vvalid=None, hsizes=None):
        """The message loop with what kafkaproto.arrow hands it (plans, header table)."""
        from kafkaproto.arrow import _build, _common

        lib = self.modules["arrow._messages"]
        return lib.arrow_messages(arr, kind, cls, _build.message_plans(lib, cls),
                                  _common.header_table(cls.KIND == "request"), versions, vvalid, hsizes)


def compiled_impl():
    try:
        return Impl(True)
    except ImportError:
        return None


def pure_impl():
    return Impl(False)


def plain_tree(node):
    """An Arrow loop's output (length, null count, validity bitmap, buffers,
    children) as plain bytes: the twins must build the same buffers."""
    n, nulls, bitmap, bufs, kids = node
    return (n, nulls, None if bitmap is None else bytes(bitmap), tuple(bytes(b) for b in bufs),
            tuple(plain_tree(k) for k in kids))


def plain_walk(walked):
    """The batches a records loop walked (columns of arrays, and ``error``: batch row → text) as plain lists."""
    return {k: v if isinstance(v, dict) else v.tolist() for k, v in walked.items()}

"""Where a Kafka log lives: local folders or any pyarrow filesystem (S3, GCS,
HDFS, a URI), and what its folders and file names say.

A broker's ``log.dirs`` holds one folder per partition, ``<topic>-<partition>``
(a topic name may itself contain ``-`` and ``.``); a deleted topic's folders
wait as ``<topic>-<partition>.<uuid>-delete``, a partition being moved to
another log dir is copied into ``...-future``, and one the controller no
longer assigns here is renamed ``...-stray``.  In a partition folder every
segment is ``<base offset, 20 digits>.log`` with its ``.index``,
``.timeindex`` and (once a transaction was aborted in it) ``.txnindex``;
``<offset>.snapshot`` files keep the producers' state; ``.deleted``,
``.cleaned`` and ``.swap`` are segments on their way out or in.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pyarrow.fs as pafs

__all__ = ["Partition", "Segment", "Snapshot", "discover", "resolve"]

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_I64_MAX = 2**63 - 1
_I32_MAX = 2**31 - 1
_SNAPSHOT = re.compile(r"^(\d{20})\.snapshot$")
# <topic>-<partition>, then maybe .<32 hex>-delete / -future / -stray
_PARTITION = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)"
                        r"(?:\.(?P<uid>[0-9a-fA-F]{32})-(?P<state>delete|future|stray))?$")


@dataclass(frozen=True)
class Segment:
    """One segment file of a partition, and its index files (None when absent)."""

    topic: str
    partition: int
    base_offset: int
    path: str                      # the .log file
    size: int
    index: str | None = None       # .index: relative offset -> byte position
    index_size: int = 0
    timeindex: str | None = None   # .timeindex: timestamp -> relative offset
    timeindex_size: int = 0
    txnindex: str | None = None    # .txnindex: the transactions aborted in this segment
    txnindex_size: int = 0
    #: the next segment's base offset (None for the last, the active one)
    next_offset: int | None = None

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


@dataclass(frozen=True)
class Snapshot:
    """A producer-state snapshot file: the producers as they were at ``offset``."""

    offset: int
    path: str
    size: int


@dataclass
class Partition:
    """A partition folder: its segments in offset order."""

    topic: str
    partition: int
    path: str
    segments: list[Segment] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    #: "" for a live partition, else "delete", "future" or "stray" (from the folder's name)
    state: str = ""
    #: found by listing a log dir (not named by its path, or by its topic's)
    listed: bool = False

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


def resolve(where, filesystem=None) -> tuple[pafs.FileSystem, str]:
    """A path or URI (and maybe a filesystem) → (pyarrow filesystem, path in it).

    ``s3://bucket/logs``, ``gs://...``, ``hdfs://...``, ``file:///...`` go
    through :meth:`pyarrow.fs.FileSystem.from_uri`; a plain path is local
    (memory-mapped: a read is a view of the page cache, not a copy).
    """
    where = os.fspath(where)
    if filesystem is not None:
        return filesystem, where
    if "://" in where:
        fs, path = pafs.FileSystem.from_uri(where)
        if isinstance(fs, pafs.LocalFileSystem):
            fs = pafs.LocalFileSystem(use_mmap=True)
        return fs, path
    return pafs.LocalFileSystem(use_mmap=True), os.path.abspath(where)


def parse_partition_folder(name: str):
    """``orders-3`` → ("orders", 3, ""); ``orders-3.<uuid>-delete`` → ("orders", 3, "delete"); else None."""
    m = _PARTITION.match(name)
    if m is None:
        return None
    return m.group("topic"), int(m.group("partition")), m.group("state") or ""


def _partition_from_listing(fs, path: str, infos, topic: str, part: int, state: str, notes: list) -> Partition:
    logs, sizes = {}, {}
    snaps = []
    for info in infos:
        if info.type != pafs.FileType.File:
            continue
        name = info.base_name
        sizes[name] = info.size
        m = _SEGMENT.match(name)
        if m:
            base = int(m.group(1))
            if base > _I64_MAX:
                notes.append(("skipped", info.path, f"{name}: a base offset out of the range of offsets (above "
                                                    f"{_I64_MAX}), not read"))
            else:
                logs[base] = info
            continue
        m = _SNAPSHOT.match(name)
        if m and int(m.group(1)) > _I64_MAX:
            notes.append(("skipped", info.path, f"{name}: an offset out of the range of offsets, not read"))
        elif m:
            snaps.append(Snapshot(int(m.group(1)), info.path, info.size))
        elif name.endswith((".log.deleted", ".log.cleaned", ".log.swap")):
            notes.append(("skipped", info.path, f"{name}: a segment being deleted, cleaned or swapped in, not read"))
    segments = []
    bases = sorted(logs)
    for k, base in enumerate(bases):
        info = logs[base]
        stem = info.base_name[:-4]
        extra = {}
        for suffix, key in ((".index", "index"), (".timeindex", "timeindex"), (".txnindex", "txnindex")):
            if stem + suffix in sizes:
                extra[key] = f"{path}/{stem}{suffix}"
                extra[key + "_size"] = sizes[stem + suffix]
        segments.append(Segment(topic, part, base, info.path, info.size,
                                next_offset=bases[k + 1] if k + 1 < len(bases) else None, **extra))
    return Partition(topic, part, path, segments, sorted(snaps, key=lambda s: s.offset), state)


def discover(fs: pafs.FileSystem, where: str, *, topics=None, partitions=None, states=("",)):
    """The partitions under ``where`` → (partitions sorted by topic and number, notes).

    ``where`` is a partition folder (it holds ``*.log`` segments), a log dir
    (it holds partition folders), or a topic: ``<log dir>/<topic>`` names the
    folders ``<topic>-<n>`` beside it.  ``topics`` / ``partitions`` keep only
    those; ``states`` which folders to read besides live ones (``"delete"``:
    a deleted topic's folders, ``"future"``, ``"stray"``).  Notes are
    ``(kind, path, text)`` about what was left out.
    """
    where = where.rstrip("/") or "/"
    notes: list = []
    info = fs.get_file_info(where)
    folders = []
    if info.type == pafs.FileType.Directory:
        listing = fs.get_file_info(pafs.FileSelector(where))
        if any(_SEGMENT.match(i.base_name) for i in listing if i.type == pafs.FileType.File):
            parsed = parse_partition_folder(os.path.basename(where))
            if parsed is None:
                # a copy of a partition's files under another name: the name says nothing
                parsed = (os.path.basename(where), 0, "")
                notes.append(("name", where, "not named <topic>-<partition>: read as partition 0 of "
                                             f"topic {parsed[0]!r}"))
            folders.append((where, parsed, listing, False))
        else:
            for i in sorted(listing, key=lambda x: x.base_name):
                if i.type == pafs.FileType.Directory:
                    parsed = parse_partition_folder(i.base_name)
                    if parsed is not None:
                        folders.append((i.path, parsed, None, True))
    else:
        # a topic: <log dir>/<topic> names the folders <topic>-<n> beside it
        parent, topic = os.path.dirname(where), os.path.basename(where)
        if fs.get_file_info(parent).type != pafs.FileType.Directory:
            raise FileNotFoundError(f"no such log folder: {where}")
        for i in sorted(fs.get_file_info(pafs.FileSelector(parent)), key=lambda x: x.base_name):
            parsed = parse_partition_folder(i.base_name) if i.type == pafs.FileType.Directory else None
            if parsed is not None and parsed[0] == topic:
                folders.append((i.path, parsed, None, False))
        if not folders:
            raise FileNotFoundError(f"no such log folder, and no partition folders {topic}-<n> beside it: {where}")
    out = []
    for path, (topic, part, state), listing, listed in folders:
        if part > _I32_MAX:
            notes.append(("skipped", path, f"a partition number out of the range of partitions (above {_I32_MAX}), "
                                           "not read"))
            continue
        if topics is not None and topic not in topics:
            continue
        if partitions is not None and part not in partitions:
            continue
        if state not in states:
            notes.append(("skipped", path, f"a partition folder marked -{state}, not read"))
            continue
        if listing is None:
            listing = fs.get_file_info(pafs.FileSelector(path))
        found = _partition_from_listing(fs, path, listing, topic, part, state, notes)
        found.listed = listed
        out.append(found)
    out.sort(key=lambda p: (p.topic, p.partition, p.state))
    return out, notes

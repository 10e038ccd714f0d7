"""Synthetic Kafka traffic written as pcap/pcapng, for tests, demos and the
report benchmark (test support: not part of the installed package).

Every frame is built with the project's own encoder (message classes,
:func:`kafkaproto.encode_request` / :func:`~kafkaproto.encode_response`) and
every record batch with :func:`kafkaproto.records.encode`; packets with
:mod:`kafkaproto.capture.writer`.  The traffic is a small cast of clients
that a platform team would recognise:

- ``orders-producer``: a Java producer (ApiVersions v3 names its software),
  Produce v9 with zstd batches, acks=all;
- ``billing-consumer``: a librdkafka consumer, Fetch v12 with lz4 batches,
  Heartbeat and OffsetCommit, some rebalances;
- ``clicks-producer``: kafka-python style, Produce v7 with snappy and gzip;
- ``legacy-reporting``: an old client still on versions Kafka 4.0 removed
  (ApiVersions v0, CreateTopics v1 for its topic at start, Produce v2 with a
  magic 1 message set, Fetch v3, OffsetCommit v1, OffsetFetch v0).

Some responses carry errors (NOT_LEADER_OR_FOLLOWER, REBALANCE_IN_PROGRESS,
OFFSET_OUT_OF_RANGE) and latencies differ per API.  :func:`write_capture`
returns a :class:`Manifest` of what it wrote (records per topic, frames per
API and version, errors) that tests compare the report with.

    python tests/support/synthetic.py --size 64M traffic.pcap

(from the repository root, e.g. with ``.venv/bin/python``: the module needs
only kafkaproto and the standard library, so it runs as a plain script).
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from kafkaproto import records as _records
from kafkaproto.capture.pcap import LINKTYPE_ETHERNET
from kafkaproto.capture.writer import PcapngWriter, PcapWriter, TcpConversation
from kafkaproto.error_codes import ErrorCode
from kafkaproto.messages import get
from kafkaproto.protocol import encode_request, encode_response

__all__ = ["Manifest", "roll_capture", "write_capture"]

BROKER = ("10.0.0.1", 9092)
_T0 = 1_700_000_000_000_000_000  # ns
TOPICS = {"orders": 3, "payments": 2, "clicks": 4, "audit": 1}


@dataclass
class Manifest:
    """What :func:`write_capture` wrote."""

    path: str = ""
    file_bytes: int = 0
    connections: int = 0
    #: (api key, version, direction) -> frames
    frames: Counter = field(default_factory=Counter)
    #: (direction "produce"/"fetch", topic) -> records / batches / record-batch bytes
    records: Counter = field(default_factory=Counter)
    batches: Counter = field(default_factory=Counter)
    batch_bytes: Counter = field(default_factory=Counter)
    #: codec name -> batches (produce and fetch)
    codecs: Counter = field(default_factory=Counter)
    #: (api key, error name) -> occurrences in responses
    errors: Counter = field(default_factory=Counter)
    #: client id -> (software name, software version) or None
    software: dict[str, tuple[str, str] | None] = field(default_factory=dict)
    #: the produced records of each (topic, partition), in offset order: (offset, key, value, headers, ts ms)
    produced: dict[tuple[str, int], list] = field(default_factory=lambda: defaultdict(list))


def _msg(cls_name: str, /, **kw):
    return get(cls_name)(**kw)


def _sub(cls_name: str, struct_name: str, /, **kw):
    return getattr(get(cls_name), struct_name)(**kw)


class _Batches:
    """Record batches for one (topic, codec, magic), made once per shape and
    reused with a new base offset: encoding gigabytes of records record by
    record would make the generator slower than the job it measures."""

    def __init__(self, rng: random.Random, records_per_batch: int, value_size: int, keep_records: bool) -> None:
        self.rng = rng
        self.n = records_per_batch
        self.value_size = value_size
        self.keep = keep_records
        self.cache: dict[tuple, tuple[bytes, list]] = {}

    def _make(self, topic: str, codec: str, magic: int, variant: int):
        words = [b"order", b"paid", b"click", b"user", b"cart", b"eu-west", b"mobile", b"42", b"ok", b"retry"]
        recs = []
        for i in range(self.n):
            value = b" ".join(self.rng.choice(words) for _ in range(self.value_size // 5))[: self.value_size]
            key = None if i % 7 == 3 else f"{topic}-{variant}-{i}".encode()
            headers = [] if magic < 2 or i % 3 else [("trace", f"{variant:04x}{i:04x}".encode()), ("dup", b"1"),
                                                      ("dup", b"2")]
            recs.append((key, value, headers, 1_700_000_000_000 + variant * 1000 + i))
        blob = _records.encode(recs, magic=magic, codec=codec, base_offset=0)
        return blob, recs

    def get(self, topic: str, codec: str, magic: int, base_offset: int):
        variant = base_offset // self.n % 4  # a few distinct payloads per shape
        key = (topic, codec, magic, variant)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = self._make(topic, codec, magic, variant)
        blob, recs = got
        if magic == 2:
            # the base offset is outside the CRC of a v2 batch: patch it in place
            blob = struct.pack(">q", base_offset) + blob[8:]
        else:
            blob = _records.encode(recs, magic=magic, codec=codec, base_offset=base_offset)
        return blob, recs


class _Writer:
    def __init__(self, fh, fmt: str, linktype: int) -> None:
        if fmt == "pcapng":
            self.w = PcapngWriter(fh)
            self.w.interface(linktype, tsresol=9)
        else:
            self.w = PcapWriter(fh, linktype, nanos=True)

    def write(self, packets) -> None:
        for ts, data in packets:
            self.w.write(ts, data)


class _Client:
    def __init__(self, gen: _Generator, n: int, client_id: str, software, kind: str) -> None:
        self.gen = gen
        self.client_id = client_id
        self.software = software
        self.kind = kind
        port = 40000 + n
        self.conv = TcpConversation((f"10.0.1.{n % 250 + 1}", port), BROKER, linktype=gen.linktype,
                                    isn=(gen.rng.randrange(1 << 32), gen.rng.randrange(1 << 32)), ts=gen.clock)
        self.corr = 0
        self.offsets: dict[tuple[str, int], int] = defaultdict(int)

    def exchange(self, api_key: int, version: int, request, response_fn, latency_ms: float) -> None:
        """One request and its response, with ``latency_ms`` between them."""
        g = self.gen
        self.corr += 1
        req = encode_request(request, version, self.corr, self.client_id)
        self.conv.ts = g.clock
        g.out.write(self.conv.send(True, req, g.mss))
        g.manifest.frames[(api_key, version, "request")] += 1
        self.conv.ts = g.clock + int(latency_ms * 1e6)
        g.clock += g.rng.randrange(20_000, 200_000)
        if response_fn is None:  # acks=0 produce: no response
            return
        resp = encode_response(response_fn(), version, self.corr)
        g.out.write(self.conv.send(False, resp, g.mss))
        g.manifest.frames[(api_key, version, "response")] += 1

    def error(self, api_key: int, code: ErrorCode) -> int:
        if code:
            self.gen.manifest.errors[(api_key, code.name)] += 1
        return int(code)


class _Generator:
    def __init__(self, fh, *, seed: int, fmt: str, linktype: int, mss: int, records_per_batch: int,
                 value_size: int, keep_records: bool) -> None:
        self.rng = random.Random(seed)
        self.linktype = linktype
        self.mss = mss
        self.clock = _T0
        self.out = _Writer(fh, fmt, linktype)
        self.manifest = Manifest()
        self.batches = _Batches(self.rng, records_per_batch, value_size, keep_records)
        self.keep = keep_records

    # -- per-client conversations -------------------------------------------------
    def open(self, c: _Client) -> None:
        self.out.write(c.conv.handshake())
        self.manifest.connections += 1
        if c.software:
            req = _msg("ApiVersionsRequest", client_software_name=c.software[0],
                       client_software_version=c.software[1])
            version = 3
        else:
            req = _msg("ApiVersionsRequest")
            version = 0
        self.manifest.software[c.client_id] = c.software
        keys = [_sub("ApiVersionsResponse", "ApiVersion", api_key=k, min_version=0, max_version=v)
                for k, v in ((0, 11), (1, 16), (3, 12), (8, 9), (9, 9), (12, 4), (18, 4))]
        c.exchange(18, version, req, lambda: _msg("ApiVersionsResponse", error_code=0, api_keys=keys), 0.3)
        mversion = 12 if c.software else 1
        topics = [_sub("MetadataRequest", "MetadataRequestTopic", name=t) for t in TOPICS]

        def metadata():
            brokers = [_sub("MetadataResponse", "MetadataResponseBroker", node_id=1, host=BROKER[0], port=BROKER[1])]
            ts = [_sub("MetadataResponse", "MetadataResponseTopic", error_code=0, name=t,
                       partitions=[_sub("MetadataResponse", "MetadataResponsePartition", error_code=0,
                                        partition_index=p, leader_id=1, replica_nodes=[1], isr_nodes=[1])
                                   for p in range(n)]) for t, n in TOPICS.items()]
            return _msg("MetadataResponse", brokers=brokers, topics=ts, cluster_id="synthetic", controller_id=1)

        c.exchange(3, mversion, _msg("MetadataRequest", topics=topics), metadata, 1.2)
        if c.kind == "legacy":
            self.create_topic(c, 1, "audit")

    def create_topic(self, c: _Client, version: int, topic: str) -> None:
        CT = "CreateTopicsRequest"
        req = _msg(CT, timeout_ms=30000, topics=[_sub(CT, "CreatableTopic", name=topic, num_partitions=TOPICS[topic],
                                                      replication_factor=1)])
        code = c.error(19, ErrorCode.TOPIC_ALREADY_EXISTS)

        def response():
            return _msg("CreateTopicsResponse", topics=[_sub("CreateTopicsResponse", "CreatableTopicResult",
                                                             name=topic, error_code=code)])

        c.exchange(19, version, req, response, self.rng.uniform(5, 20))

    def produce(self, c: _Client, version: int, topic: str, codec: str, magic: int = 2) -> None:
        m = self.manifest
        parts = []
        answers = []
        for p in range(TOPICS[topic]):
            base = c.offsets[(topic, p)]
            blob, recs = self.batches.get(topic, codec, magic, base)
            c.offsets[(topic, p)] += len(recs)
            parts.append(_sub("ProduceRequest", "PartitionProduceData", index=p, records=blob))
            m.records[("produce", topic)] += len(recs)
            m.batches[("produce", topic)] += 1
            m.batch_bytes[("produce", topic)] += len(blob)
            m.codecs[codec] += 1
            if self.keep:
                for i, (k, v, h, ts) in enumerate(recs):
                    m.produced[(topic, p)].append((base + i, k, v, list(h), ts))
            err = ErrorCode.NOT_LEADER_OR_FOLLOWER if self.rng.random() < 0.02 else ErrorCode.NONE
            answers.append((p, c.error(0, err), base))
        req = _msg("ProduceRequest", acks=-1, timeout_ms=30000,
                   topic_data=[_sub("ProduceRequest", "TopicProduceData", name=topic, partition_data=parts)])

        def response():
            prs = [_sub("ProduceResponse", "PartitionProduceResponse", index=p, error_code=e, base_offset=b)
                   for p, e, b in answers]
            return _msg("ProduceResponse", responses=[_sub("ProduceResponse", "TopicProduceResponse", name=topic,
                                                           partition_responses=prs)])

        c.exchange(0, version, req, response, self.rng.uniform(2, 25))

    def fetch(self, c: _Client, version: int, topic: str, codec: str, magic: int = 2) -> None:
        m = self.manifest
        rng = self.rng
        req_parts = [_sub("FetchRequest", "FetchPartition", partition=p, fetch_offset=c.offsets[(topic, p)],
                          partition_max_bytes=1 << 20) for p in range(TOPICS[topic])]
        req = _msg("FetchRequest", max_wait_ms=500, min_bytes=1, topics=[
            _sub("FetchRequest", "FetchTopic", topic=topic, partitions=req_parts)])
        resp_parts = []
        for p in range(TOPICS[topic]):
            base = c.offsets[(topic, p)]
            if rng.random() < 0.01:
                err = c.error(1, ErrorCode.OFFSET_OUT_OF_RANGE)
                resp_parts.append(_sub("FetchResponse", "PartitionData", partition_index=p, error_code=err,
                                       high_watermark=-1, records=None))
                continue
            blob, recs = self.batches.get(topic, codec, magic, base)
            c.offsets[(topic, p)] += len(recs)
            m.records[("fetch", topic)] += len(recs)
            m.batches[("fetch", topic)] += 1
            m.batch_bytes[("fetch", topic)] += len(blob)
            m.codecs[codec] += 1
            resp_parts.append(_sub("FetchResponse", "PartitionData", partition_index=p, error_code=0,
                                   high_watermark=base + len(recs), records=blob))

        def response():
            return _msg("FetchResponse", responses=[_sub("FetchResponse", "FetchableTopicResponse", topic=topic,
                                                         partitions=resp_parts)])

        c.exchange(1, version, req, response, rng.uniform(1, 5) if rng.random() < 0.9 else rng.uniform(100, 500))

    def heartbeat(self, c: _Client) -> None:
        err = ErrorCode.REBALANCE_IN_PROGRESS if self.rng.random() < 0.1 else ErrorCode.NONE
        req = _msg("HeartbeatRequest", group_id="billing", generation_id=7, member_id="m-1")
        code = c.error(12, err)
        c.exchange(12, 4, req, lambda: _msg("HeartbeatResponse", error_code=code), self.rng.uniform(0.2, 2))

    def commit(self, c: _Client, version: int, topic: str) -> None:
        OC = "OffsetCommitRequest"
        parts = [_sub(OC, "OffsetCommitRequestPartition", partition_index=p, committed_offset=c.offsets[(topic, p)])
                 for p in range(TOPICS[topic])]
        req = _msg(OC, group_id="billing", generation_id_or_member_epoch=7, member_id="m-1",
                   topics=[_sub(OC, "OffsetCommitRequestTopic", name=topic, partitions=parts)])

        def response():
            ps = [_sub("OffsetCommitResponse", "OffsetCommitResponsePartition", partition_index=p, error_code=0)
                  for p in range(TOPICS[topic])]
            return _msg("OffsetCommitResponse", topics=[
                _sub("OffsetCommitResponse", "OffsetCommitResponseTopic", name=topic, partitions=ps)])

        c.exchange(8, version, req, response, self.rng.uniform(1, 8))

    def offset_fetch(self, c: _Client, topic: str) -> None:
        req = _msg("OffsetFetchRequest", group_id="reporting", topics=[
            _sub("OffsetFetchRequest", "OffsetFetchRequestTopic", name=topic, partition_indexes=[0])])

        def response():
            return _msg("OffsetFetchResponse", topics=[_sub(
                "OffsetFetchResponse", "OffsetFetchResponseTopic", name=topic, partitions=[_sub(
                    "OffsetFetchResponse", "OffsetFetchResponsePartition", partition_index=0, committed_offset=5,
                    metadata="", error_code=0)])])

        c.exchange(9, 0, req, response, self.rng.uniform(1, 3))

    def close(self, c: _Client) -> None:
        c.conv.ts = self.clock
        self.out.write(c.conv.close())


def write_capture(path, *, size: int = 8 << 20, seed: int = 1, fmt: str = "pcap",
                  linktype: int = LINKTYPE_ETHERNET, mss: int = 1460, records_per_batch: int = 50,
                  value_size: int = 200, keep_records: bool = False, connections: int = 4) -> Manifest:
    """Write about ``size`` bytes of traffic to ``path`` and describe it.

    ``mss``: largest TCP payload per packet (1460 on Ethernet; captures on
    loopback or with receive offload show up to 65483).  ``connections``: how
    many connections each client opens over the run (they take turns).
    ``keep_records``: fill :attr:`Manifest.produced` (small captures only).
    """
    with open(path, "wb") as fh:
        g = _Generator(fh, seed=seed, fmt=fmt, linktype=linktype, mss=mss, records_per_batch=records_per_batch,
                       value_size=value_size, keep_records=keep_records)
        n = 0
        rounds = 0
        while fh.tell() < size:
            cast = []
            for _ in range(connections):
                for client_id, software, kind in (
                        ("orders-producer", ("apache-kafka-java", "3.9.1"), "java"),
                        ("billing-consumer", ("confluent-kafka-python", "2.6.1-rdkafka-2.6.1"), "rdkafka"),
                        ("clicks-producer", ("kafka-python", "2.0.2"), "python"),
                        ("legacy-reporting", None, "legacy")):
                    n += 1
                    cast.append(_Client(g, n, client_id, software, kind))
            for c in cast:
                g.open(c)
            for _ in range(8):
                for c in cast:
                    if c.kind == "java":
                        g.produce(c, 9, "orders", "zstd")
                        g.produce(c, 9, "payments", "none")
                    elif c.kind == "rdkafka":
                        g.fetch(c, 12, "payments", "lz4")
                        g.heartbeat(c)
                        g.commit(c, 8, "payments")
                    elif c.kind == "python":
                        g.produce(c, 7, "clicks", "snappy" if g.rng.random() < 0.5 else "gzip")
                    else:
                        g.produce(c, 2, "audit", "gzip", magic=1)
                        g.fetch(c, 3, "audit", "none", magic=1)
                        g.commit(c, 1, "audit")
                        g.offset_fetch(c, "audit")
                    if fh.tell() >= size:
                        break
            for c in cast:
                g.close(c)
            rounds += 1
        g.manifest.path = str(path)
        g.manifest.file_bytes = fh.tell()
        return g.manifest


def roll_capture(path, folder, size: int, name: str | None = None) -> list[str]:
    """Cut a capture into files of at most about ``size`` bytes at record
    boundaries, as ``tcpdump -C`` rolls one: ``name``, ``name1``, ``name2``...
    in ``folder``, each with the file header (pcap) or the first section's
    header and interface blocks (pcapng).  Returns the paths in order."""
    import os

    name = name or os.path.basename(str(path))
    data = open(path, "rb").read()
    os.makedirs(folder, exist_ok=True)
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        order = "<" if data[8:12] == b"\x4d\x3c\x2b\x1a" else ">"
        pos, records = 0, []
        while pos + 8 <= len(data):
            length = struct.unpack_from(order + "I", data, pos + 4)[0]
            records.append((struct.unpack_from(order + "I", data, pos)[0], data[pos:pos + length]))
            pos += length
        head = b"".join(r for t, r in records if t in (0x0A0D0D0A, 1))
        body = [r for t, r in records if t not in (0x0A0D0D0A, 1)]
    else:
        order = "<" if data[:4] in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
        head, body, pos = data[:24], [], 24
        while pos + 16 <= len(data):
            incl = struct.unpack_from(order + "I", data, pos + 8)[0]
            body.append(data[pos:pos + 16 + incl])
            pos += 16 + incl
    paths: list[str] = []
    cur: list[bytes] = []
    have = len(head)

    def flush() -> None:
        out = os.path.join(str(folder), name + (str(len(paths)) if paths else ""))
        with open(out, "wb") as fh:
            fh.write(head + b"".join(cur))
        paths.append(out)

    for rec in body:
        if cur and have + len(rec) > size:
            flush()
            cur, have = [], len(head)
        cur.append(rec)
        have += len(rec)
    if cur or not paths:
        flush()
    return paths


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper().rstrip("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python tests/support/synthetic.py",
                                description="write a synthetic Kafka capture")
    p.add_argument("out")
    p.add_argument("--size", type=_size, default=8 << 20, help="bytes to write (K/M/G suffixes)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--format", choices=("pcap", "pcapng"), default="pcap")
    p.add_argument("--mss", type=int, default=1460)
    args = p.parse_args(argv)
    m = write_capture(args.out, size=args.size, seed=args.seed, fmt=args.format, mss=args.mss)
    print(f"{m.path}: {m.file_bytes} bytes, {m.connections} connections, "
          f"{sum(m.frames.values())} frames, {sum(m.records.values())} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

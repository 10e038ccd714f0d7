"""Synthetic Kafka traffic written as pcap/pcapng, for tests, demos and the
report benchmark (test support: not part of the installed package).

Every frame is built with the project's own encoder (message classes,
:func:`kafkaproto.encode_request` / :func:`~kafkaproto.encode_response`) and
every record batch with :func:`kafkaproto.records.encode`; packets with
:mod:`kafkaproto.capture.formats.writer`.  The traffic is a small cast of clients
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
OFFSET_OUT_OF_RANGE) and latencies differ per API.  That is the ``bulk``
profile (large record batches, the default).  The ``small`` profile is the
chatty side of a cluster, on long-lived connections, written in time order:

- producers sending 1-3 small record batches per Produce, several requests
  in flight (``chatty-java``: Produce v8 and v11, acks=1;
  ``rdkafka-acks-all``: Produce v7, acks=all; ``alerts-service``: now and
  then, Produce v9);
- classic group consumers (Fetch v11 in a fetch session: long polls that
  come back empty after ``max_wait_ms`` or with one small batch; FindCoordinator,
  JoinGroup/SyncGroup, Heartbeat, OffsetCommit, OffsetFetch on the
  coordinator's connection, ListOffsets at start) and KIP-848 consumers
  (ConsumerGroupHeartbeat, Fetch v17 by topic id after Metadata v12);
- a lag exporter pipelining Metadata, ListOffsets and OffsetFetch;
- several requests in one packet (pipelining, Nagle), frames cut across
  packets (a size prefix alone, a cut anywhere), reconnects.

``mixed`` interleaves both casts in one time line, ``small_share`` of the
bytes from the small one.  :func:`write_capture` returns a :class:`Manifest`
of what it wrote (records per topic, frames per API and version, errors)
that tests compare the report with.

    python tests/support/synthetic.py --size 64M traffic.pcap
    python tests/support/synthetic.py --size 1G --profile mixed mixed.pcap

(from the repository root, e.g. with ``.venv/bin/python``: the module needs
only kafkaproto and the standard library, so it runs as a plain script).
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import random
import struct
import sys
import uuid
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field

from kafkaproto import records as _records
from kafkaproto.capture.formats.writer import PcapngWriter, PcapWriter, TcpConversation, tcp_packet
from kafkaproto.capture.walker.packets import LINKTYPE_ETHERNET
from kafkaproto.error_codes import ErrorCode
from kafkaproto.messages import get
from kafkaproto.protocol import encode_request, encode_response

__all__ = ["PROFILES", "Manifest", "roll_capture", "write_capture"]

BROKER = ("10.0.0.1", 9092)
_T0 = 1_700_000_000_000_000_000  # ns
TOPICS = {"orders": 3, "payments": 2, "clicks": 4, "audit": 1}
#: the small-frame cast's topics
SMALL_TOPICS = {"events": 6, "sessions": 3, "alerts": 1}
PROFILES = ("bulk", "small", "mixed")
MS = 1_000_000  # ns


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
    profile: str = "bulk"
    packets: int = 0
    #: cast ("bulk"/"small") -> frames / packet bytes (packet records, headers included)
    cast_frames: Counter = field(default_factory=Counter)
    cast_bytes: Counter = field(default_factory=Counter)
    #: writes of several frames at once (one packet where they fit), and frames cut across packets on purpose
    coalesced_packets: int = 0
    split_frames: int = 0


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


class _Conversation(TcpConversation):
    """:class:`TcpConversation` whose packets are the writer's own packet for
    each direction, built once, with the length, sequence numbers and flags
    patched in: building every packet field by field costs ~20 µs, and a
    gigabyte of small frames is millions of packets.  The bytes are those
    :func:`tcp_packet` writes (IPv4).

    :meth:`send_at` is for captures written in time order: each direction's
    packets come in time order, and a packet acknowledges what the other
    side had sent by its time (a response written now may be due later)."""

    def __init__(self, *args, **kw) -> None:
        super().__init__(*args, **kw)
        self._templates: dict = {}
        self._ack: int | None = None
        self.last = {True: self.ts, False: self.ts}  # each direction's last packet, by from_client
        self._sent: dict[bool, deque] = {True: deque(), False: deque()}  # (time, sequence number after) per send
        self._acked = {True: 0, False: 0}

    def handshake(self) -> list[tuple[int, bytes]]:
        out = super().handshake()
        self.last = {True: self.ts, False: self.ts}
        self._acked = {True: self.seq[self.client], False: self.seq[self.server]}
        return out

    def send_at(self, from_client: bool, data, at: int, mss: int) -> list[tuple[int, bytes]]:
        """``data`` from time ``at`` (or right after this side's last packet)."""
        other = not from_client
        at = max(at, self.last[from_client])
        sent, ack = self._sent[other], self._acked[other]
        while sent and sent[0][0] <= at:
            ack = sent.popleft()[1]
        self._acked[other] = ack
        self.ts, self._ack = at, ack
        out = self.send(from_client, data, mss)
        self._ack = None
        self.last[from_client] = self.ts
        self._sent[from_client].append((self.ts, self.seq[self.client if from_client else self.server]))
        return out

    def close_at(self, at: int) -> list[tuple[int, bytes]]:
        self.ts = max(at, *self.last.values())
        return self.close()

    def _packet(self, sender, flags, payload=b"", seq=None) -> tuple[int, bytes]:
        receiver = self.server if sender == self.client else self.client
        tpl = self._templates.get(sender)
        if tpl is None:
            if ":" in sender[0]:  # IPv6: no template
                return super()._packet(sender, flags, payload, seq)
            tpl = self._templates[sender] = tcp_packet(self.linktype, sender[0], sender[1], receiver[0],
                                                       receiver[1], 0, 0, 0)
        ip = len(tpl) - 40  # link header, then 20 bytes of IPv4 and 20 of TCP
        buf = bytearray(tpl)
        _U16.pack_into(buf, ip + 2, 40 + len(payload))
        ack = self.seq[receiver] if self._ack is None else self._ack
        _SEQ.pack_into(buf, ip + 24, (self.seq[sender] if seq is None else seq) & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                       5 << 4, flags)
        buf += payload
        return self._tick(), buf


_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_SEQ = struct.Struct(">IIBB")  # sequence and acknowledgment numbers, data offset, flags


class _Writer:
    def __init__(self, fh, fmt: str, linktype: int) -> None:
        if fmt == "pcapng":
            self.w = PcapngWriter(fh)
            self.w.interface(linktype, tsresol=9)
        else:
            self.w = PcapWriter(fh, linktype, nanos=True)
        self.packets = 0

    def write(self, packets) -> None:
        for ts, data in packets:
            self.w.write(ts, data)
        self.packets += len(packets)


class _Timeline:
    """Packets written in time order across connections (the ``small`` and
    ``mixed`` profiles): a response due later waits here while other
    connections' packets are written."""

    def __init__(self, out: _Writer, manifest: Manifest) -> None:
        self.out = out
        self.heap: list = []
        self.n = 0
        self.cast = "bulk"  # whose packets come in: the manifest's cast_bytes
        self.cast_bytes = manifest.cast_bytes
        self.pending = 0

    def write(self, packets) -> None:
        size = 0
        heap = self.heap
        for ts, data in packets:
            heapq.heappush(heap, (ts, self.n, data))
            self.n += 1
            size += 16 + len(data)
        self.cast_bytes[self.cast] += size
        self.pending += size

    def until(self, ts: int) -> None:
        heap = self.heap
        write = self.out.w.write
        k = 0
        while heap and heap[0][0] <= ts:
            t, _, data = heapq.heappop(heap)
            write(t, data)
            self.pending -= 16 + len(data)
            k += 1
        self.out.packets += k

    def flush(self) -> None:
        self.until(1 << 63)


class _Client:
    def __init__(self, gen: _Generator, n: int, client_id: str, software, kind: str) -> None:
        self.gen = gen
        self.client_id = client_id
        self.software = software
        self.kind = kind
        port = 40000 + n
        self.conv = _Conversation((f"10.0.1.{n % 250 + 1}", port), BROKER, linktype=gen.linktype,
                                  isn=(gen.rng.randrange(1 << 32), gen.rng.randrange(1 << 32)), ts=gen.clock)
        self.corr = 0
        self.offsets: dict[tuple[str, int], int] = defaultdict(int)

    def _send(self, from_client: bool, data: bytes, at: int) -> None:
        g = self.gen
        if g.timeline is not None:
            g.out.write(self.conv.send_at(from_client, data, at, g.mss))
        else:
            self.conv.ts = at
            g.out.write(self.conv.send(from_client, data, g.mss))

    def exchange(self, api_key: int, version: int, request, response_fn, latency_ms: float) -> None:
        """One request and its response, with ``latency_ms`` between them."""
        g = self.gen
        self.corr += 1
        req = encode_request(request, version, self.corr, self.client_id)
        self._send(True, req, g.clock)
        g.manifest.frames[(api_key, version, "request")] += 1
        g.manifest.cast_frames["bulk"] += 1
        at = g.clock + int(latency_ms * 1e6)
        g.clock += g.rng.randrange(20_000, 200_000)
        if response_fn is None:  # acks=0 produce: no response
            return
        resp = encode_response(response_fn(), version, self.corr)
        self._send(False, resp, at)
        g.manifest.frames[(api_key, version, "response")] += 1
        g.manifest.cast_frames["bulk"] += 1

    def error(self, api_key: int, code: ErrorCode) -> int:
        if code:
            self.gen.manifest.errors[(api_key, code.name)] += 1
        return int(code)


class _Generator:
    def __init__(self, fh, *, seed: int, fmt: str, linktype: int, mss: int, records_per_batch: int,
                 value_size: int, keep_records: bool, timeline: bool = False) -> None:
        self.rng = random.Random(seed)
        self.linktype = linktype
        self.mss = mss
        self.clock = _T0
        self.writer = _Writer(fh, fmt, linktype)
        self.manifest = Manifest()
        #: the time-ordered profiles write through a timeline; bulk writes each exchange as it comes
        self.timeline = _Timeline(self.writer, self.manifest) if timeline else None
        self.out = self.timeline or self.writer
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
        if self.timeline is None:
            c.conv.ts = self.clock
            self.out.write(c.conv.close())
        else:
            self.out.write(c.conv.close_at(self.clock))


# ---------------------------------------------------------------------------
# the small-frame cast (profiles "small" and "mixed")

_MARK64 = 0x5EB0_C0DE_0000_0000
_MARK32 = 0x5EB0_C000


def _topic_id(topic: str) -> uuid.UUID:
    """The same id for a topic in every capture (Metadata v10+, Fetch v13+)."""
    return uuid.UUID(bytes=hashlib.md5(topic.encode()).digest())


def _member(group: str, index: int, kind: int = 0) -> str:
    """A group member's id, the same wherever it is named (its own requests, the leader's)."""
    if kind:
        return str(uuid.UUID(bytes=hashlib.md5(f"{group}/{index}/{kind}".encode()).digest()))
    return f"consumer-{group}-{index}-{hashlib.md5(f'{group}/{index}'.encode()).hexdigest()[:12]}"


class _Marks:
    """Hands out the marks a frame template is built with, in order."""

    def __init__(self) -> None:
        self.n64 = self.n32 = 0

    def i64(self) -> int:
        self.n64 += 1
        return _MARK64 + self.n64 - 1

    def i32(self) -> int:
        self.n32 += 1
        return _MARK32 + self.n32 - 1

    def blob(self, blob: bytes) -> bytes:
        """A v2 record batch whose base offset (outside its CRC) is a mark."""
        return _I64.pack(self.i64()) + blob[8:]


class _Shape:
    """An encoded frame and the places that change from one use to the next:
    the correlation id, and the fields encoded as marks, each found at
    exactly one place in the bytes."""

    __slots__ = ("data", "corr_at", "at64", "at32")

    def __init__(self, data: bytes, corr_at: int, marks: _Marks) -> None:
        self.data, self.corr_at = data, corr_at
        self.at64 = [self._find(_I64.pack(_MARK64 + i)) for i in range(marks.n64)]
        self.at32 = [self._find(_I32.pack(_MARK32 + i)) for i in range(marks.n32)]

    def _find(self, mark: bytes) -> int:
        at = self.data.find(mark)
        if at < 0 or self.data.find(mark, at + 1) >= 0:
            raise AssertionError(f"mark {mark.hex()} is in {'no' if at < 0 else 'more than one'} place")
        return at

    def fill(self, corr: int, v64=(), v32=()) -> bytearray:
        buf = bytearray(self.data)
        _I32.pack_into(buf, self.corr_at, corr)
        for at, v in zip(self.at64, v64):
            _I64.pack_into(buf, at, v)
        for at, v in zip(self.at32, v32):
            _I32.pack_into(buf, at, v)
        return buf


@dataclass
class _Call:
    """One request of the small cast, with its response (None: acks=0)."""

    api_key: int
    version: int
    req: _Shape
    r64: tuple = ()
    r32: tuple = ()
    resp: _Shape | None = None
    s64: tuple = ()
    s32: tuple = ()
    latency: int = 0  # ns


class _Link:
    """A connection of the small cast: each direction's packets in time
    order, requests answered in order."""

    def __init__(self, s: _Chatter, client_id: str, software) -> None:
        g = s.g
        k = s.opened
        s.opened += 1
        client = (f"10.0.{2 + k // 250 % 200}.{k % 250 + 1}", 50000 + k % 15000)
        self.conv = _Conversation(client, BROKER, linktype=g.linktype,
                                  isn=(s.rng.randrange(1 << 32), s.rng.randrange(1 << 32)), ts=g.clock)
        self.client_id = client_id
        self.corr = 0
        self.stale = False  # metadata to refresh
        g.out.write(self.conv.handshake())
        g.manifest.connections += 1
        g.manifest.software[client_id] = software
        s.links[self] = None


class _SmallBatches:
    """Small record batches (1-4 records of tens to hundreds of bytes, as a
    service emits events), one per (topic, codec, records, variant); the base
    offset is patched in where they are used."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.cache: dict[tuple, tuple[bytes, list]] = {}

    def get(self, topic: str, codec: str, n: int, variant: int) -> tuple[bytes, list]:
        key = (topic, codec, n, variant)
        got = self.cache.get(key)
        if got is None:
            rng = self.rng
            recs = []
            for i in range(n):
                user = rng.randrange(100_000)
                value = (f'{{"user":{user},"type":"{rng.choice(("view", "click", "login", "cart"))}",'
                         f'"path":"/{topic}/{rng.randrange(1000)}","ms":{rng.randrange(900)},'
                         f'"pad":"{"x" * rng.randrange(0, 160)}"}}').encode()
                headers = [("traceparent", f"00-{variant:032x}-{i:016x}-01".encode())] if i % 2 == 0 else []
                recs.append((str(user).encode(), value, headers, 1_700_000_000_000 + variant * 100 + i))
            blob = _records.encode(recs, codec=codec, base_offset=0, producer_id=4000 + variant, producer_epoch=0,
                                   base_sequence=0)
            got = self.cache[key] = (blob, recs)
        return got


class _Chatter:
    """The small cast: clients as coroutines that yield the time they next
    act (the time a response they wait for arrives, or a pause), frames
    encoded once per shape (:class:`_Shape`)."""

    #: a frame is written in two packets this often (a size prefix alone, or a cut anywhere)
    SPLIT = 0.03

    def __init__(self, g: _Generator, rng: random.Random, scale: int) -> None:
        self.g = g
        self.rng = rng
        self.m = g.manifest
        self.shapes: dict[tuple, _Shape] = {}
        self.batches = _SmallBatches(rng)
        self.log_end: dict[tuple[str, int], int] = defaultdict(int)
        self.opened = 0
        self.sessions = 0
        self.links: dict[_Link, None] = {}  # open connections, in the order they opened
        self.actors: list = []
        for k in range(scale):
            for i in range(4):  # half on a client from before flexible Produce (v9)
                self.add(self.producer(f"chatty-java-{k}{i}", ("apache-kafka-java", "3.9.1" if i % 2 else "2.7.2"),
                                       11 if i % 2 else 8, 1, "events", ("lz4", "none"), (0.5, 6)))
            for i in range(2):
                self.add(self.producer(f"rdkafka-acks-all-{k}{i}", ("librdkafka", "2.6.1"), 7, -1, "sessions",
                                       ("snappy", "none"), (1, 8)))
            self.add(self.producer(f"alerts-service-{k}", ("apache-kafka-java", "3.6.2"), 9, -1, "alerts",
                                   ("none",), (200, 900)))
            for i in range(3):
                self.add(self.classic_consumer(f"analytics-{k}{i}", ("apache-kafka-java", "3.9.1"), f"analytics-{k}",
                                               i, 3, "events"))
            self.add(self.classic_consumer(f"alerting-{k}", ("librdkafka", "2.6.1"), f"alerting-{k}", 0, 1, "alerts"))
            for i in range(2):
                self.add(self.kip848_consumer(f"sessions-848-{k}{i}", ("apache-kafka-java", "4.0.0"),
                                              f"sessions-{k}", i, 2, "sessions"))
            self.add(self.lag_exporter(f"lag-exporter-{k}", [f"analytics-{k}", f"alerting-{k}", f"sessions-{k}"]))

    def add(self, coroutine) -> None:
        self.actors.append((self.g.clock + len(self.actors) * 37_000, len(self.actors), coroutine))

    # -- frames ------------------------------------------------------------------
    def request(self, key: tuple, version: int, client_id: str, build) -> _Shape:
        shape = self.shapes.get(key)
        if shape is None:
            mk = _Marks()
            shape = self.shapes[key] = _Shape(encode_request(build(mk), version, 0, client_id), 8, mk)
        return shape

    def response(self, key: tuple, version: int, build) -> _Shape:
        shape = self.shapes.get(key)
        if shape is None:
            mk = _Marks()
            shape = self.shapes[key] = _Shape(encode_response(build(mk), version, 0), 4, mk)
        return shape

    def latency(self, lo_ms: float, hi_ms: float) -> int:
        """Mostly within [lo, hi]; one in fifty 5-20 times slower (a GC pause, a slow disk)."""
        ms = self.rng.uniform(lo_ms, hi_ms)
        if self.rng.random() < 0.02:
            ms *= self.rng.uniform(5, 20)
        return int(ms * MS)

    def error(self, api_key: int, code: ErrorCode) -> int:
        if code:
            self.m.errors[(api_key, code.name)] += 1
        return int(code)

    # -- packets -----------------------------------------------------------------
    def _send(self, link: _Link, from_client: bool, data, at: int) -> None:
        conv = link.conv
        g = self.g
        if len(data) > 8 and self.rng.random() < self.SPLIT:
            # a client that writes the size prefix on its own, or a write cut by the socket buffer
            cut = 4 if self.rng.random() < 0.5 else self.rng.randrange(1, len(data))
            g.out.write(conv.send_at(from_client, data[:cut], at, g.mss))
            at = conv.ts + self.rng.randrange(5_000, 60_000)
            data = data[cut:]
            self.m.split_frames += 1
        g.out.write(conv.send_at(from_client, data, at, g.mss))

    def call(self, link: _Link, calls: list[_Call], coalesce: bool = False) -> list[int]:
        """Send ``calls`` back to back on ``link`` now (in one write when
        ``coalesce``: several frames in a packet, as Nagle's algorithm and
        pipelining clients make them); their responses come in order, each
        after its latency and no earlier than the one before; responses ready
        within 50 µs of each other leave in one write.  Returns the time each
        response is written (0 where there is none)."""
        m = self.m
        now = self.g.clock
        corrs = []
        frames = []
        for c in calls:
            link.corr = (link.corr + 1) & 0x7FFFFFFF
            corrs.append(link.corr)
            frames.append(c.req.fill(link.corr, c.r64, c.r32))
            m.frames[(c.api_key, c.version, "request")] += 1
        m.cast_frames["small"] += len(calls)
        if coalesce and len(frames) > 1:
            self._send(link, True, b"".join(frames), now)
            m.coalesced_packets += 1
        else:
            for f in frames:
                self._send(link, True, f, now)
        done = []
        group: list = []
        t = link.conv.last[False]
        for c, corr in zip(calls, corrs):
            if c.resp is None:
                done.append(0)
                continue
            t = max(now + c.latency, t + 1_000)
            if group and t - group[0][0] > 50_000:
                self._respond(link, group)
                group = []
            group.append((t, c.resp.fill(corr, c.s64, c.s32)))
            m.frames[(c.api_key, c.version, "response")] += 1
            m.cast_frames["small"] += 1
            done.append(t)
        if group:
            self._respond(link, group)
        return done

    def _respond(self, link: _Link, group: list) -> None:
        if len(group) > 1:
            self.m.coalesced_packets += 1
        self._send(link, False, b"".join(d for _, d in group) if len(group) > 1 else group[0][1], group[-1][0])

    def close(self, link: _Link) -> None:
        self.g.out.write(link.conv.close_at(self.g.clock))
        self.links.pop(link, None)

    def wait(self, link: _Link, calls: list[_Call], coalesce: bool = False):
        """Send ``calls`` and wake when the last response is in."""
        done = self.call(link, calls, coalesce)
        yield max(done)

    # -- requests and responses -----------------------------------------------------
    def api_versions(self, link: _Link, software) -> _Call:
        req = self.request(("ApiVersions", link.client_id, software), 3, link.client_id,
                           lambda mk: _msg("ApiVersionsRequest", client_software_name=software[0],
                                           client_software_version=software[1]))
        resp = self.response(("ApiVersions",), 3, lambda mk: _msg("ApiVersionsResponse", error_code=0, api_keys=[
            _sub("ApiVersionsResponse", "ApiVersion", api_key=k, min_version=0, max_version=v)
            for k, v in ((0, 11), (1, 17), (2, 8), (3, 12), (8, 9), (9, 9), (10, 4), (11, 9), (12, 4), (14, 5),
                         (18, 4), (68, 1))]))
        return _Call(18, 3, req, resp=resp, latency=self.latency(0.1, 0.5))

    def metadata(self, link: _Link, topics) -> _Call:
        """Metadata v12 for ``topics`` (None: every topic), with topic ids."""
        MR = "MetadataResponse"
        every = {**SMALL_TOPICS, **TOPICS}
        names = tuple(topics) if topics is not None else tuple(every)
        req = self.request(("Metadata", link.client_id, topics is None, names), 12, link.client_id,
                           lambda mk: _msg("MetadataRequest", topics=None if topics is None else [
                               _sub("MetadataRequest", "MetadataRequestTopic", name=t) for t in names]))
        resp = self.response(("Metadata", names), 12, lambda mk: _msg(
            MR, brokers=[_sub(MR, "MetadataResponseBroker", node_id=1, host=BROKER[0], port=BROKER[1])],
            cluster_id="synthetic", controller_id=1, topics=[
                _sub(MR, "MetadataResponseTopic", error_code=0, name=t, topic_id=_topic_id(t), partitions=[
                    _sub(MR, "MetadataResponsePartition", error_code=0, partition_index=p, leader_id=1,
                         leader_epoch=3, replica_nodes=[1], isr_nodes=[1]) for p in range(every[t])])
                for t in names]))
        return _Call(3, 12, req, resp=resp, latency=self.latency(0.3, 3))

    def hello(self, link: _Link, software, topics):
        """ApiVersions, then Metadata (``topics``; False: none), waiting for each."""
        yield from self.wait(link, [self.api_versions(link, software)])
        if topics is not False:
            yield from self.wait(link, [self.metadata(link, topics)])

    def produce(self, link: _Link, version: int, acks: int, topic: str, codec: str) -> _Call:
        rng, m = self.rng, self.m
        P = SMALL_TOPICS[topic]
        first = rng.randrange(P)
        parts = tuple(sorted({(first + 2 * i) % P for i in range(rng.choice((1, 1, 1, 2, 3)))}))
        n = rng.choice((1, 1, 2, 3, 4))
        variant = rng.randrange(4)
        blob, recs = self.batches.get(topic, codec, n, variant)
        PR, PS = "ProduceRequest", "ProduceResponse"
        req = self.request(("Produce", link.client_id, version, acks, topic, parts, codec, n, variant), version,
                           link.client_id, lambda mk: _msg(PR, acks=acks, timeout_ms=30000, topic_data=[
                               _sub(PR, "TopicProduceData", name=topic, partition_data=[
                                   _sub(PR, "PartitionProduceData", index=p, records=mk.blob(blob)) for p in parts])]))
        bases, errs, answered = [], [], []
        for p in parts:
            base = self.log_end[(topic, p)]
            bases.append(base)
            m.records[("produce", topic)] += n
            m.batches[("produce", topic)] += 1
            m.batch_bytes[("produce", topic)] += len(blob)
            m.codecs[codec] += 1
            if self.g.keep:
                for i, (k, v, h, ts) in enumerate(recs):
                    m.produced[(topic, p)].append((base + i, k, v, list(h), ts))
            err = self.error(0, ErrorCode.NOT_LEADER_OR_FOLLOWER if rng.random() < 0.003 else ErrorCode.NONE)
            errs.append(err)
            if err:
                answered.append(-1)
                link.stale = True  # a client refreshes its metadata after NOT_LEADER_OR_FOLLOWER
            else:
                answered.append(base)
                self.log_end[(topic, p)] = base + n
        if acks == 0:
            return _Call(0, version, req, tuple(bases))
        errs_ = tuple(errs)
        resp = self.response(("Produce", version, topic, parts, errs_), version, lambda mk: _msg(PS, responses=[
            _sub(PS, "TopicProduceResponse", name=topic, partition_responses=[
                _sub(PS, "PartitionProduceResponse", index=p, error_code=e, base_offset=mk.i64(), log_start_offset=0)
                for p, e in zip(parts, errs_)])]))
        lat = self.latency(0.3, 3) if acks == 1 else self.latency(2, 15)
        return _Call(0, version, req, tuple(bases), resp=resp, s64=tuple(answered), latency=lat)

    # -- the cast ----------------------------------------------------------------
    def producer(self, client_id, software, version, acks, topic, codecs, think_ms):
        """A producer on one connection: up to 5 requests in flight, a few
        sent at once; Metadata every minute and after NOT_LEADER_OR_FOLLOWER;
        now and then a reconnect."""
        rng = self.rng
        link = _Link(self, client_id, software)
        yield from self.hello(link, software, [topic])
        inflight: deque = deque()
        refreshed = self.g.clock
        while True:
            now = self.g.clock
            while inflight and inflight[0] <= now:
                inflight.popleft()
            room = 5 - len(inflight)
            if room <= 0:
                yield inflight[0]
                continue
            if link.stale or now - refreshed > 60_000 * MS:
                link.stale = False
                refreshed = now
                inflight.extend(self.call(link, [self.metadata(link, [topic])]))
                room -= 1
                if not room:
                    continue
            k = min(room, rng.choice((1, 1, 1, 1, 2, 2, 3, 5)))
            codec = rng.choice(codecs)
            calls = [self.produce(link, version, acks, topic, codec) for _ in range(k)]
            inflight.extend(t for t in self.call(link, calls, coalesce=k > 1 and rng.random() < 0.7) if t)
            if rng.random() < 1 / 4000:  # a reconnect: the old connection closes once its answers are in
                if inflight:
                    yield inflight[-1]
                    inflight.clear()
                self.close(link)
                link = _Link(self, client_id, software)
                yield from self.hello(link, software, [topic])
                continue
            yield now + int(rng.uniform(*think_ms) * MS)

    def find_coordinator(self, link: _Link, group: str) -> _Call:
        FR = "FindCoordinatorResponse"
        req = self.request(("FindCoordinator", link.client_id, group), 4, link.client_id,
                           lambda mk: _msg("FindCoordinatorRequest", key_type=0, coordinator_keys=[group]))
        resp = self.response(("FindCoordinator", group), 4, lambda mk: _msg(FR, coordinators=[
            _sub(FR, "Coordinator", key=group, node_id=1, host=BROKER[0], port=BROKER[1], error_code=0)]))
        return _Call(10, 4, req, resp=resp, latency=self.latency(0.3, 2))

    def join(self, coord: _Link, group: str, index: int, members: int, topic: str, generation: int):
        """JoinGroup v9 (the first time without a member id: MEMBER_ID_REQUIRED),
        then SyncGroup v5 (the leader, member 0, sends the assignments);
        wakes when the assignment is in, and returns the partitions."""
        JR, JS, SR = "JoinGroupRequest", "JoinGroupResponse", "SyncGroupRequest"
        # the consumer protocol's subscription and assignment (version 0): opaque bytes to the broker
        name = struct.pack(">h", len(topic)) + topic.encode()
        meta = b"\x00\x00" + struct.pack(">i", 1) + name + b"\xff\xff\xff\xff"
        member = _member(group, index)

        def join_req(mid):
            return self.request(("JoinGroup", coord.client_id, group, mid), 9, coord.client_id, lambda mk: _msg(
                JR, group_id=group, session_timeout_ms=45000, rebalance_timeout_ms=300000, member_id=mid,
                protocol_type="consumer", protocols=[_sub(JR, "JoinGroupRequestProtocol", name="range",
                                                          metadata=meta)]))

        if generation == 1:
            code = self.error(11, ErrorCode.MEMBER_ID_REQUIRED)
            resp = self.response(("JoinGroup", member), 9, lambda mk: _msg(
                JS, error_code=code, generation_id=-1, protocol_name=None, leader="", member_id=member))
            yield from self.wait(coord, [_Call(11, 9, join_req(""), resp=resp, latency=self.latency(0.5, 2))])
        leader = index == 0
        resp = self.response(("JoinGroup", member, generation), 9, lambda mk: _msg(
            JS, error_code=0, generation_id=generation, protocol_type="consumer", protocol_name="range",
            leader=_member(group, 0), member_id=member,
            members=[_sub(JS, "JoinGroupResponseMember", member_id=_member(group, i), metadata=meta)
                     for i in range(members)] if leader else []))
        yield from self.wait(coord, [_Call(11, 9, join_req(member), resp=resp, latency=self.latency(3, 30))])

        def assignment(i):
            ps = [p for p in range(SMALL_TOPICS[topic]) if p % members == i]
            return (b"\x00\x00" + struct.pack(">i", 1) + name + struct.pack(">i", len(ps))
                    + b"".join(struct.pack(">i", p) for p in ps) + b"\xff\xff\xff\xff"), ps

        req = self.request(("SyncGroup", coord.client_id, group, member, generation), 5, coord.client_id,
                           lambda mk: _msg(SR, group_id=group, generation_id=generation, member_id=member,
                                           protocol_type="consumer", protocol_name="range", assignments=[
                                               _sub(SR, "SyncGroupRequestAssignment", member_id=_member(group, i),
                                                    assignment=assignment(i)[0]) for i in range(members)]
                                           if leader else []))
        mine, parts = assignment(index)
        resp = self.response(("SyncGroup", mine), 5, lambda mk: _msg(
            "SyncGroupResponse", error_code=0, protocol_type="consumer", protocol_name="range", assignment=mine))
        yield from self.wait(coord, [_Call(14, 5, req, resp=resp, latency=self.latency(1, 10))])
        return parts

    def offset_fetch(self, coord: _Link, version: int, group: str, topic: str | None, parts, member=None,
                     epoch: int = -1) -> _Call:
        """OffsetFetch (v8+: groups) for ``parts`` of ``topic`` (None: every
        topic the group committed, answered with the small topics')."""
        QR, QS = "OffsetFetchRequest", "OffsetFetchResponse"
        key = ("OffsetFetch", coord.client_id, version, group, topic, tuple(parts), member, epoch)
        req = self.request(key, version, coord.client_id, lambda mk: _msg(QR, require_stable=True, groups=[_sub(
                               QR, "OffsetFetchRequestGroup", group_id=group, member_id=member, member_epoch=epoch,
                               topics=None if topic is None else [_sub(QR, "OffsetFetchRequestTopics", name=topic,
                                                                       partition_indexes=list(parts))])]))
        tps = [(topic, p) for p in parts] if topic is not None else [
            (t, p) for t, n in SMALL_TOPICS.items() for p in range(n)]
        resp = self.response(("OffsetFetch", version, group, tuple(tps)), version, lambda mk: _msg(QS, groups=[_sub(
            QS, "OffsetFetchResponseGroup", group_id=group, error_code=0, topics=[_sub(
                QS, "OffsetFetchResponseTopics", name=t, partitions=[_sub(
                    QS, "OffsetFetchResponsePartitions", partition_index=p, committed_offset=mk.i64(),
                    committed_leader_epoch=3, metadata="", error_code=0) for tt, p in tps if tt == t])
                for t in dict.fromkeys(t for t, _ in tps)])]))
        return _Call(9, version, req, resp=resp, s64=tuple(self.log_end[tp] // 2 for tp in tps),
                     latency=self.latency(0.5, 4))

    def list_offsets(self, link: _Link, version: int, tps: list[tuple[str, int]]) -> _Call:
        LR, LS = "ListOffsetsRequest", "ListOffsetsResponse"
        topics = list(dict.fromkeys(t for t, _ in tps))
        req = self.request(("ListOffsets", link.client_id, version, tuple(tps)), version, link.client_id,
                           lambda mk: _msg(LR, replica_id=-1, isolation_level=1, topics=[_sub(
                               LR, "ListOffsetsTopic", name=t, partitions=[_sub(
                                   LR, "ListOffsetsPartition", partition_index=p, current_leader_epoch=3, timestamp=-1)
                                   for tt, p in tps if tt == t]) for t in topics]))
        resp = self.response(("ListOffsets", version, tuple(tps)), version, lambda mk: _msg(LS, topics=[_sub(
            LS, "ListOffsetsTopicResponse", name=t, partitions=[_sub(
                LS, "ListOffsetsPartitionResponse", partition_index=p, error_code=0, timestamp=-1, offset=mk.i64(),
                leader_epoch=3) for tt, p in tps if tt == t]) for t in topics]))
        return _Call(2, version, req, resp=resp, s64=tuple(self.log_end[tp] for tp in tps),
                     latency=self.latency(0.3, 3))

    def fetch(self, link: _Link, version: int, topic: str, parts: list[int], pos: dict, session: list,
              moved: tuple) -> tuple[_Call, tuple]:
        """A Fetch in a fetch session (KIP-227, ``session``: [id, epoch], id 0
        before the first): the first names every partition, later ones only
        those whose position ``moved``.  The broker answers at once with one
        small batch for each of up to two partitions that have records, else
        after ``max_wait_ms`` with nothing.  Returns the call and the
        partitions it moves."""
        m = self.m
        FR, FS = "FetchRequest", "FetchResponse"
        by_id = version >= 13
        tid = _topic_id(topic)
        named_as = {"topic_id": tid} if by_id else {"topic": topic}
        full = not session[0]
        named = tuple(parts) if full else moved
        req = self.request(("Fetch", link.client_id, version, topic, named, full), version, link.client_id,
                           lambda mk: _msg(FR, max_wait_ms=500, min_bytes=1, max_bytes=52428800, isolation_level=1,
                                           session_id=0 if full else mk.i32(), session_epoch=0 if full else mk.i32(),
                                           rack_id="", topics=[_sub(FR, "FetchTopic", **named_as, partitions=[_sub(
                                               FR, "FetchPartition", partition=p, current_leader_epoch=3,
                                               fetch_offset=mk.i64(), log_start_offset=-1, partition_max_bytes=1 << 20)
                                               for p in named])] if named else []))
        r64 = tuple(pos[p] for p in named)
        r32 = () if full else tuple(session)
        if full:
            self.sessions += 1
            session[:] = [1000 + self.sessions, 1]
        else:
            session[1] += 1
        data = {}
        for p in [p for p in parts if self.log_end[(topic, p)] > pos[p]][:2]:
            n = min(self.log_end[(topic, p)] - pos[p], 4)
            codec = "lz4" if topic == "events" else "none"
            blob, _ = self.batches.get(topic, codec, n, pos[p] % 4)
            data[p] = (codec, n, pos[p] % 4, blob)
            m.records[("fetch", topic)] += n
            m.batches[("fetch", topic)] += 1
            m.batch_bytes[("fetch", topic)] += len(blob)
            m.codecs[codec] += 1
        listed = parts if full else list(data)
        s64 = []
        for p in listed:
            hw = self.log_end[(topic, p)]
            s64 += [hw, hw, pos[p]] if p in data else [hw, hw]

        def build(mk):
            return _msg(FS, error_code=0, session_id=mk.i32(), responses=[_sub(
                FS, "FetchableTopicResponse", **named_as, partitions=[_sub(
                    FS, "PartitionData", partition_index=p, error_code=0, high_watermark=mk.i64(),
                    last_stable_offset=mk.i64(), log_start_offset=0, aborted_transactions=None,
                    records=mk.blob(data[p][3]) if p in data else b"") for p in listed])] if listed else [])

        resp = self.response(("Fetch", version, topic, tuple((p, data[p][:3] if p in data else None) for p in listed)),
                             version, build)
        for p, (_, n, _, _) in data.items():
            pos[p] += n
        lat = self.latency(0.3, 4) if data else 500 * MS + self.rng.randrange(0, 2 * MS)
        return _Call(1, version, req, r64, r32, resp, tuple(s64), (session[0],), lat), tuple(data)

    def consume(self, link: _Link, version: int, topic: str, parts: list[int], pos: dict, beat, beat_ms: int,
                commit):
        """The fetch loop; ``beat()`` every ``beat_ms`` and ``commit()`` every
        5 s on the coordinator's connection (a heartbeat thread: they do not
        wait for the fetch).  Returns when ``beat`` says the member must rejoin."""
        session = [0, 0]
        moved: tuple = ()
        beat_at = commit_at = self.g.clock
        while True:
            call, moved = self.fetch(link, version, topic, parts, pos, session, moved)
            done = self.call(link, [call])[0]
            while self.g.clock < done:
                now = self.g.clock
                if now >= beat_at:
                    beat_at = now + beat_ms * MS
                    if not (yield from beat()):
                        return
                if now >= commit_at:
                    commit_at = now + 5_000 * MS
                    commit()
                yield min(done, beat_at, commit_at)
            yield done + int(self.rng.uniform(0.05, 0.5) * MS)

    def commit_call(self, coord: _Link, version: int, group: str, topic: str, parts, pos: dict, member: str,
                    epoch: int) -> _Call:
        CR, CS = "OffsetCommitRequest", "OffsetCommitResponse"
        req = self.request(("OffsetCommit", coord.client_id, version, group, topic, tuple(parts), member, epoch),
                           version, coord.client_id, lambda mk: _msg(
                               CR, group_id=group, generation_id_or_member_epoch=epoch, member_id=member, topics=[_sub(
                                   CR, "OffsetCommitRequestTopic", name=topic, partitions=[_sub(
                                       CR, "OffsetCommitRequestPartition", partition_index=p, committed_offset=mk.i64(),
                                       committed_leader_epoch=3, committed_metadata="") for p in parts])]))
        resp = self.response(("OffsetCommit", version, topic, tuple(parts)), version, lambda mk: _msg(CS, topics=[_sub(
            CS, "OffsetCommitResponseTopic", name=topic, partitions=[_sub(
                CS, "OffsetCommitResponsePartition", partition_index=p, error_code=0) for p in parts])]))
        return _Call(8, version, req, tuple(pos[p] for p in parts), resp=resp, latency=self.latency(1, 8))

    def classic_consumer(self, client_id, software, group, index, members, topic):
        """A classic group member (Fetch v11 in a fetch session; JoinGroup,
        SyncGroup, Heartbeat every 3 s, OffsetCommit every 5 s on the
        coordinator's connection; OffsetFetch and ListOffsets after each join;
        REBALANCE_IN_PROGRESS now and then: a rejoin)."""
        link = _Link(self, client_id, software)
        yield from self.hello(link, software, [topic])
        yield from self.wait(link, [self.find_coordinator(link, group)])
        coord = _Link(self, client_id, software)
        yield from self.hello(coord, software, False)
        member = _member(group, index)
        generation = 1
        while True:
            parts = yield from self.join(coord, group, index, members, topic, generation)
            yield from self.wait(coord, [self.offset_fetch(coord, 8, group, topic, parts)])
            yield from self.wait(link, [self.list_offsets(link, 7, [(topic, p) for p in parts])])
            pos = {p: self.log_end[(topic, p)] for p in parts}
            gen_ = generation

            def beat():
                code = self.error(12, ErrorCode.REBALANCE_IN_PROGRESS if self.rng.random() < 0.01 else
                                  ErrorCode.NONE)
                req = self.request(("Heartbeat", client_id, group, gen_, member), 4, client_id, lambda mk: _msg(
                    "HeartbeatRequest", group_id=group, generation_id=gen_, member_id=member))
                resp = self.response(("Heartbeat", code), 4, lambda mk: _msg("HeartbeatResponse", error_code=code))
                done = self.call(coord, [_Call(12, 4, req, resp=resp, latency=self.latency(0.2, 2))])[0]
                if code:
                    yield done
                    return False
                return True

            def commit():
                self.call(coord, [self.commit_call(coord, 8, group, topic, parts, pos, member, gen_)])

            yield from self.consume(link, 11, topic, parts, pos, beat, 3_000, commit)
            generation += 1

    def kip848_consumer(self, client_id, software, group, index, members, topic):
        """A KIP-848 group member: ConsumerGroupHeartbeat v1 (a join with the
        subscription, then the member epoch alone every 5 s; FENCED_MEMBER_EPOCH
        now and then: a rejoin), Fetch v17 by topic id after Metadata v12,
        OffsetCommit v9 and OffsetFetch v9 with the member epoch."""
        link = _Link(self, client_id, software)
        yield from self.hello(link, software, [topic])
        yield from self.wait(link, [self.find_coordinator(link, group)])
        coord = _Link(self, client_id, software)
        yield from self.hello(coord, software, False)
        member = str(_member(group, index, 848))
        HR, HS = "ConsumerGroupHeartbeatRequest", "ConsumerGroupHeartbeatResponse"
        tid = _topic_id(topic)
        parts = [p for p in range(SMALL_TOPICS[topic]) if p % members == index]
        epoch = 4
        while True:
            epoch += 1
            req = self.request(("ConsumerGroupHeartbeat", client_id, group, member, 0), 1, client_id, lambda mk: _msg(
                HR, group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=300000,
                subscribed_topic_names=[topic], topic_partitions=[]))
            resp = self.response(("ConsumerGroupHeartbeat", member, epoch, "join"), 1, lambda mk: _msg(
                HS, error_code=0, member_id=member, member_epoch=epoch, heartbeat_interval_ms=5000,
                assignment=_sub(HS, "Assignment", topic_partitions=[_sub(HS, "TopicPartitions", topic_id=tid,
                                                                          partitions=parts)])))
            yield from self.wait(coord, [_Call(68, 1, req, resp=resp, latency=self.latency(2, 20))])
            yield from self.wait(coord, [self.offset_fetch(coord, 9, group, topic, parts, member, epoch)])
            pos = {p: self.log_end[(topic, p)] for p in parts}
            epoch_ = epoch

            def beat():
                code = self.error(68, ErrorCode.FENCED_MEMBER_EPOCH if self.rng.random() < 0.005 else ErrorCode.NONE)
                req = self.request(("ConsumerGroupHeartbeat", client_id, group, member, epoch_), 1, client_id,
                                   lambda mk: _msg(HR, group_id=group, member_id=member, member_epoch=epoch_,
                                                   rebalance_timeout_ms=-1, subscribed_topic_names=None,
                                                   topic_partitions=None))
                resp = self.response(("ConsumerGroupHeartbeat", member, epoch_, code), 1, lambda mk: _msg(
                    HS, error_code=code, member_id=None if code else member, member_epoch=-1 if code else epoch_,
                    heartbeat_interval_ms=5000 if not code else 0, assignment=None))
                done = self.call(coord, [_Call(68, 1, req, resp=resp, latency=self.latency(0.5, 4))])[0]
                if code:
                    yield done
                    return False
                return True

            def commit():
                self.call(coord, [self.commit_call(coord, 9, group, topic, parts, pos, member, epoch_)])

            yield from self.consume(link, 17, topic, parts, pos, beat, 5_000, commit)

    def lag_exporter(self, client_id, groups):
        """An admin client: every second Metadata, ListOffsets and OffsetFetch
        for every small topic, pipelined in one write."""
        software = ("apache-kafka-java", "3.7.0")
        link = _Link(self, client_id, software)
        yield from self.hello(link, software, None)
        tps = [(t, p) for t, n in SMALL_TOPICS.items() for p in range(n)]
        while True:
            calls = [self.metadata(link, None), self.list_offsets(link, 8, tps)]
            calls += [self.offset_fetch(link, 8, group, None, ()) for group in groups]
            done = self.call(link, calls, coalesce=True)
            yield max(done) + int(self.rng.uniform(800, 1200) * MS)

    # -- running -------------------------------------------------------------------
    def start(self) -> None:
        heapq.heapify(self.actors)

    def step(self) -> None:
        """Run the client whose time has come: what it writes is timed from
        ``max(its time, the clock)``."""
        g = self.g
        t, i, actor = heapq.heappop(self.actors)
        if t > g.clock:
            g.clock = t
        g.timeline.until(g.clock)
        g.timeline.cast = "small"
        heapq.heappush(self.actors, (next(actor), i, actor))

    def finish(self) -> None:
        for link in list(self.links):
            self.close(link)


# ---------------------------------------------------------------------------
# writing a capture


def _bulk_rounds(g: _Generator, connections: int, full):
    """The bulk cast, one client action per step: rounds of ``connections``
    connections per client, eight exchanges each, until ``full()``."""
    n = 0
    while not full():
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
        try:
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
                    yield
                    if full():
                        break
        finally:
            for c in cast:
                g.close(c)


def _interleave(g: _Generator, fh, size: int, profile: str, connections: int, share: float, seed: int,
                scale: int) -> None:
    """The time-ordered profiles: the small cast alone, or both casts, the
    bulk one acting whenever the small one has more than ``share`` of the
    bytes."""
    tl = g.timeline
    small = _Chatter(g, random.Random(seed * 1_000_003 + 848), scale)
    small.start()
    bulk = _bulk_rounds(g, connections, lambda: False) if profile == "mixed" else None
    cast = tl.cast_bytes
    while fh.tell() + tl.pending < size:
        if bulk is not None and cast["small"] >= share * (cast["small"] + cast["bulk"]):
            tl.until(g.clock)
            tl.cast = "bulk"
            next(bulk)
        else:
            small.step()
    if bulk is not None:
        tl.cast = "bulk"
        bulk.close()  # closes the round's connections
    tl.cast = "small"
    small.finish()
    tl.flush()


def write_capture(path, *, size: int = 8 << 20, seed: int = 1, fmt: str = "pcap",
                  linktype: int = LINKTYPE_ETHERNET, mss: int = 1460, records_per_batch: int = 50,
                  value_size: int = 200, keep_records: bool = False, connections: int = 4, profile: str = "bulk",
                  small_share: float = 0.2, small_scale: int = 1) -> Manifest:
    """Write about ``size`` bytes of traffic to ``path`` and describe it.

    ``profile``: ``bulk`` (large record batches, each exchange written as it
    comes), ``small`` (the chatty cast, in time order) or ``mixed`` (both in
    one time line, ``small_share`` of the bytes from the small cast);
    ``small_scale``: copies of the small cast (each 17 clients on 23
    connections).  ``mss``: largest TCP payload per packet (1460 on
    Ethernet; captures on loopback or with receive offload show up to
    65483).  ``connections``: how many connections each bulk client opens
    over the run (they take turns).  ``keep_records``: fill
    :attr:`Manifest.produced` (small captures only).  The same arguments
    write the same bytes.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile {profile!r}: one of {', '.join(PROFILES)}")
    with open(path, "wb") as fh:
        g = _Generator(fh, seed=seed, fmt=fmt, linktype=linktype, mss=mss, records_per_batch=records_per_batch,
                       value_size=value_size, keep_records=keep_records, timeline=profile != "bulk")
        g.manifest.profile = profile
        if profile == "bulk":
            for _ in _bulk_rounds(g, connections, lambda: fh.tell() >= size):
                pass
        else:
            _interleave(g, fh, size, profile, connections, small_share, seed, small_scale)
        m = g.manifest
        m.path = str(path)
        m.file_bytes = fh.tell()
        m.packets = g.writer.packets
        if profile == "bulk":
            m.cast_bytes["bulk"] = m.file_bytes
        return m


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


def replicate_capture(src, path, copies: int) -> int:
    """Real client traffic at scale: the classic pcap ``src`` (Ethernet,
    IPv4) written ``copies`` times into ``path``, copy ``i`` moved onto its
    own addresses (both ends of every IPv4 packet to 127.x.y.1, the IP header
    checksum made anew; TCP checksums are left as they are, which no reader
    here checks) and ``31 * i`` seconds later: each copy's connections are
    new connections, with the sample's frames.  Returns the bytes written."""
    data = open(src, "rb").read()
    if data[:4] != b"\xd4\xc3\xb2\xa1":
        raise ValueError(f"{src}: not a little-endian microsecond pcap file")
    linktype = struct.unpack_from("<I", data, 20)[0]
    if linktype != 1:
        raise ValueError(f"{src}: link type {linktype}, not Ethernet")
    records = []  # (offset of the record, offset of its IPv4 header or -1)
    pos = 24
    while pos + 16 <= len(data):
        incl = struct.unpack_from("<I", data, pos + 8)[0]
        ip = pos + 16 + 14
        is_ip4 = incl >= 34 and data[pos + 16 + 12:pos + 16 + 14] == b"\x08\x00" and data[ip] >> 4 == 4
        records.append((pos, ip if is_ip4 else -1))
        pos += 16 + incl
    written = 24
    with open(path, "wb") as out:
        out.write(data[:24])
        for i in range(copies):
            body = bytearray(data[24:pos])
            addr = bytes((127, 1 + i // 250, 1 + i % 250, 1))
            for rec, ip in records:
                at = rec - 24
                struct.pack_into("<I", body, at, struct.unpack_from("<I", body, at)[0] + 31 * i)
                if ip < 0:
                    continue
                h = ip - 24
                ihl = (body[h] & 0x0F) * 4
                body[h + 12:h + 16] = addr
                body[h + 16:h + 20] = addr
                struct.pack_into(">H", body, h + 10, 0)
                total = sum(struct.unpack_from(f">{ihl // 2}H", body, h))
                while total >> 16:
                    total = (total & 0xFFFF) + (total >> 16)
                struct.pack_into(">H", body, h + 10, ~total & 0xFFFF)
            out.write(body)
            written += len(body)
    return written


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
    p.add_argument("--profile", choices=PROFILES, default="bulk")
    p.add_argument("--small-share", type=float, default=0.2, help="mixed: the small cast's share of the bytes")
    args = p.parse_args(argv)
    m = write_capture(args.out, size=args.size, seed=args.seed, fmt=args.format, mss=args.mss, profile=args.profile,
                      small_share=args.small_share)
    print(f"{m.path}: {m.file_bytes} bytes, {m.packets} packets, {m.connections} connections, "
          f"{sum(m.frames.values())} frames, {sum(m.records.values())} records", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

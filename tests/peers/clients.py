"""Produce and consume real records with real Kafka clients.

A *record* given to the ``produce_*`` functions is a dict::

    {"key": bytes | None, "value": bytes | None,
     "headers": [(str, bytes | None), ...], "timestamp_ms": int | None}

(missing fields mean None / no headers).  Each ``produce_*`` function returns
the records exactly as they were handed to the client, normalised to that
shape plus ``partition`` and ``offset`` (None where the client does not
report it).  ``timestamp_ms`` None means the client stamped the record
itself at send time.

Each ``consume_*`` function returns records in the same shape plus
``timestamp_type`` (0 = CreateTime, 1 = LogAppendTime), sorted by
(partition, offset).

Compression codecs: ``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``.

Also here: consumers in a group (``consume_group_*``: subscribe, read,
commit, leave) and transactional producers (``transact_*``: transactions
committed or aborted, with offsets for a group), for confluent-kafka,
kafka-python and aiokafka.

Every network operation is bounded by ``timeout`` (seconds); on failure a
:class:`ClientError` (or :class:`TimeoutError`) is raised, never a hang.
Limits of individual clients raise :class:`UnsupportedByClient` before any
traffic is sent (see :data:`LIMITS`).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .brokers import BUILD_DIR, LOOPBACK, PeerUnavailable, api_versions

CODECS: tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")
PRODUCERS: tuple[str, ...] = ("confluent", "kafka_python", "aiokafka", "kcat")

#: What each producer cannot express.  Keys: ``null_header_value`` (a header
#: whose value is None), ``timestamp`` (an explicit record timestamp),
#: ``null_key_empty_value`` (a record with key None and an empty/None value),
#: ``empty_key_null_value`` (key b"" together with value None).
LIMITS: dict[str, dict[str, bool]] = {
    "confluent": {},
    "kafka_python": {"null_header_value": True},
    "aiokafka": {},
    "kcat": {"timestamp": True, "null_key_empty_value": True, "empty_key_null_value": True},
}

Record = dict[str, Any]

#: kafka-python settings for librdkafka's mock cluster.  Unpinned, kafka-python
#: opens with ApiVersions v4; the mock supports only v0-v2 and answers
#: UNSUPPORTED_VERSION in a body kafka-python cannot decode, so it never
#: bootstraps.  Pinning api_version=(2, 3, 0) makes it ask with ApiVersions v2.
KAFKA_PYTHON_MOCK_CONFIG: dict[str, Any] = {"api_version": (2, 3, 0)}


class ClientError(RuntimeError):
    """A client failed to produce, consume or create a topic."""


class UnsupportedByClient(ValueError):
    """The records ask for something the chosen client cannot send."""


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def _norm(rec: Record) -> Record:
    headers = [(str(k), None if v is None else bytes(v)) for k, v in (rec.get("headers") or [])]
    key = rec.get("key")
    value = rec.get("value")
    ts = rec.get("timestamp_ms")
    return {
        "key": None if key is None else bytes(key),
        "value": None if value is None else bytes(value),
        "headers": headers,
        "timestamp_ms": None if ts is None else int(ts),
    }


def _check_codec(compression: str | None) -> str:
    codec = (compression or "none").lower()
    if codec not in CODECS:
        raise ValueError(f"compression must be one of {CODECS}, not {compression!r}")
    return codec


def _host_port(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host or LOOPBACK, int(port)


def _remaining(deadline: float) -> float:
    return max(0.0, deadline - time.monotonic())


def _sorted(records: list[Record]) -> list[Record]:
    return sorted(records, key=lambda r: (r["partition"], r["offset"]))


def unique_topic(prefix: str = "peers") -> str:
    """A topic name that no earlier test used."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# --------------------------------------------------------------------------
# topics
# --------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int = 1, *, timeout: float = 15.0,
                 replication_factor: int = 1) -> int:
    """Create ``topic`` and return its partition count once metadata shows it.

    Uses confluent-kafka's AdminClient (CreateTopics).  A broker that does not
    offer CreateTopics (librdkafka's mock cluster) auto-creates the topic on a
    Metadata request instead; the mock then picks the partition count itself
    (4), whatever ``partitions`` says.
    """
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    deadline = time.monotonic() + timeout
    host, port = _host_port(bootstrap)
    has_create = 19 in api_versions(host, port, timeout=min(5.0, timeout))
    common = {"bootstrap.servers": bootstrap, "socket.timeout.ms": int(timeout * 1000)}
    if has_create:
        admin = AdminClient(common)
        futures = admin.create_topics(
            [NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)],
            operation_timeout=timeout, request_timeout=timeout)
        try:
            futures[topic].result(timeout=_remaining(deadline) or 0.1)
        except KafkaException as exc:
            raise ClientError(f"CreateTopics {topic!r} on {bootstrap} failed: {exc}") from exc
        client: Any = admin
    else:
        client = Producer({**common, "allow.auto.create.topics": True})
    while True:
        try:
            md = client.list_topics(topic=topic, timeout=max(0.5, min(5.0, _remaining(deadline))))
            tmd = md.topics.get(topic)
            if tmd is not None and tmd.error is None and tmd.partitions:
                return len(tmd.partitions)
        except KafkaException:
            pass
        if _remaining(deadline) <= 0:
            raise TimeoutError(f"topic {topic!r} not visible in metadata of {bootstrap} within {timeout}s")
        time.sleep(0.1)


# --------------------------------------------------------------------------
# producers
# --------------------------------------------------------------------------


def produce_confluent(bootstrap: str, topic: str, records: Sequence[Record],
                      compression: str = "none", *, partition: int | None = 0,
                      timeout: float = 15.0, config: dict[str, Any] | None = None) -> list[Record]:
    """Produce with confluent-kafka (librdkafka).  ``partition=None`` lets the
    client's partitioner choose."""
    from confluent_kafka import Producer

    codec = _check_codec(compression)
    sent = [_norm(r) for r in records]
    conf = {
        "bootstrap.servers": bootstrap,
        "compression.type": codec,
        "linger.ms": 20,
        "message.timeout.ms": int(timeout * 1000),
        "socket.timeout.ms": int(timeout * 1000),
        **(config or {}),
    }
    producer = Producer(conf)
    reports: dict[int, tuple[Any, Any]] = {}

    def on_delivery(i: int):
        def cb(err, msg):
            reports[i] = (err, msg)
        return cb

    for i, rec in enumerate(sent):
        kwargs: dict[str, Any] = {"key": rec["key"], "value": rec["value"],
                                  "headers": rec["headers"], "on_delivery": on_delivery(i)}
        if partition is not None:
            kwargs["partition"] = partition
        if rec["timestamp_ms"] is not None:
            kwargs["timestamp"] = rec["timestamp_ms"]
        producer.produce(topic, **kwargs)
    left = producer.flush(timeout)
    if left or len(reports) != len(sent):
        raise TimeoutError(f"confluent-kafka: {left} of {len(sent)} records undelivered after {timeout}s")
    for i, rec in enumerate(sent):
        err, msg = reports[i]
        if err is not None:
            raise ClientError(f"confluent-kafka: record {i} failed: {err}")
        rec["partition"], rec["offset"] = msg.partition(), msg.offset()
    return sent


def produce_kafka_python(bootstrap: str, topic: str, records: Sequence[Record],
                         compression: str = "none", *, partition: int | None = 0,
                         timeout: float = 15.0, config: dict[str, Any] | None = None) -> list[Record]:
    """Produce with kafka-python (pure Python; needs python-snappy, lz4 and
    zstandard for those codecs).  Header values must not be None."""
    from kafka import KafkaProducer

    codec = _check_codec(compression)
    sent = [_norm(r) for r in records]
    for i, rec in enumerate(sent):
        if any(v is None for _, v in rec["headers"]):
            raise UnsupportedByClient(f"kafka-python cannot send a None header value (record {i})")
    ms = int(timeout * 1000)
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        request_timeout_ms=ms,
        delivery_timeout_ms=ms + 20,  # must exceed linger_ms + request_timeout_ms
        max_block_ms=ms,
        bootstrap_timeout_ms=ms,
        **(config or {}),
    )
    try:
        deadline = time.monotonic() + timeout
        futures = [producer.send(topic, value=rec["value"], key=rec["key"], headers=rec["headers"],
                                 partition=partition, timestamp_ms=rec["timestamp_ms"])
                   for rec in sent]
        producer.flush(timeout=_remaining(deadline) or 0.1)
        for i, (rec, fut) in enumerate(zip(sent, futures)):
            try:
                meta = fut.get(timeout=max(0.1, _remaining(deadline)))
            except Exception as exc:
                raise ClientError(f"kafka-python: record {i} failed: {exc!r}") from exc
            rec["partition"], rec["offset"] = meta.partition, meta.offset
    finally:
        producer.close(timeout=5)
    return sent


async def produce_aiokafka_async(bootstrap: str, topic: str, records: Sequence[Record],
                                 compression: str = "none", *, partition: int | None = 0,
                                 timeout: float = 15.0,
                                 config: dict[str, Any] | None = None) -> list[Record]:
    """Produce with aiokafka (asyncio; needs cramjam for snappy/lz4/zstd)."""
    from aiokafka import AIOKafkaProducer

    codec = _check_codec(compression)
    sent = [_norm(r) for r in records]
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
        request_timeout_ms=int(timeout * 1000),
        **(config or {}),
    )

    async def run() -> None:
        await producer.start()
        futures = [await producer.send(topic, value=rec["value"], key=rec["key"],
                                       headers=rec["headers"], partition=partition,
                                       timestamp_ms=rec["timestamp_ms"])
                   for rec in sent]
        metas = await asyncio.gather(*futures)
        for rec, meta in zip(sent, metas):
            if meta is None:  # acks=0: aiokafka reports nothing
                rec["partition"], rec["offset"] = partition, None
            else:
                rec["partition"], rec["offset"] = meta.partition, meta.offset

    try:
        await asyncio.wait_for(run(), timeout)
    except asyncio.TimeoutError as exc:
        raise TimeoutError(f"aiokafka: produce to {bootstrap} not done within {timeout}s") from exc
    finally:
        try:
            await asyncio.wait_for(producer.stop(), 5)
        except (asyncio.TimeoutError, Exception):
            pass
    return sent


def produce_aiokafka(bootstrap: str, topic: str, records: Sequence[Record],
                     compression: str = "none", **kwargs) -> list[Record]:
    """Blocking wrapper around :func:`produce_aiokafka_async` (runs its own
    event loop; call the async version from inside a running loop)."""
    return asyncio.run(produce_aiokafka_async(bootstrap, topic, records, compression, **kwargs))


# -- kcat -------------------------------------------------------------------

KCAT_LIB_DIR = BUILD_DIR / "lib"


def kcat_path() -> str:
    path = shutil.which("kcat")
    if not path:
        raise PeerUnavailable("kcat is not on PATH: run tools/peers/install_peers.sh")
    return path


def kcat_bundled_librdkafka_env() -> dict[str, str]:
    """Environment that makes kcat load the librdkafka shipped inside the
    confluent-kafka wheel instead of the system one (Debian 12's librdkafka
    2.0.2 cannot parse tansu's ApiVersions response: before librdkafka 2.2 it
    skipped one byte too few per tagged field)."""
    import confluent_kafka

    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    candidates = sorted(libs.glob("librdkafka*.so*")) if libs.is_dir() else []
    if not candidates:
        raise PeerUnavailable(f"no librdkafka in {libs} (confluent-kafka not installed from a wheel?)")
    KCAT_LIB_DIR.mkdir(parents=True, exist_ok=True)
    link = KCAT_LIB_DIR / "librdkafka.so.1"
    target = str(candidates[0])
    if not (link.is_symlink() and os.readlink(link) == target):
        tmp = KCAT_LIB_DIR / f".librdkafka.{os.getpid()}.tmp"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(target)
        os.replace(tmp, link)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [str(KCAT_LIB_DIR)] + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    return env


def kcat_version(librdkafka: str = "system", timeout: float = 10.0) -> str:
    """First line of ``kcat -V`` that names librdkafka, e.g. 'Version 1.7.1 (... librdkafka 2.0.2 ...)'."""
    env = kcat_bundled_librdkafka_env() if librdkafka == "bundled" else None
    out = subprocess.run([kcat_path(), "-V"], capture_output=True, timeout=timeout, env=env)
    text = (out.stdout + out.stderr).decode(errors="replace")
    return next((line for line in text.splitlines() if "librdkafka" in line), text.strip())


def _pick_delim(tag: bytes, taken: Iterable[bytes]) -> bytes:
    taken = list(taken)
    for _ in range(100):
        delim = b"\x01" + tag + secrets.token_hex(6).encode() + b"\x02"
        if not any(delim in t for t in taken):
            return delim
    raise RuntimeError("could not find a delimiter absent from the records")


def produce_kcat(bootstrap: str, topic: str, records: Sequence[Record], compression: str = "none",
                 *, partition: int | None = 0, timeout: float = 15.0,
                 librdkafka: str = "system", extra_args: Sequence[str] = ()) -> list[Record]:
    """Produce with the ``kcat`` command-line tool (``kcat -P``).

    Keys travel through a ``-K`` delimiter and messages through a ``-D``
    delimiter chosen so that neither occurs in the data; headers are passed
    with ``-H`` (one kcat run per run of consecutive records with the same
    headers), None values with ``-Z``.  kcat cannot set timestamps (a record
    asking for one raises UnsupportedByClient), drops messages whose key is
    None and whose value is empty, and with ``-Z`` also sends an empty key as
    null (so key b"" with value None is refused).

    ``librdkafka="bundled"`` runs kcat against the librdkafka inside the
    confluent-kafka wheel (see :func:`kcat_bundled_librdkafka_env`).
    """
    codec = _check_codec(compression)
    sent = [_norm(r) for r in records]
    for i, rec in enumerate(sent):
        if rec["timestamp_ms"] is not None:
            raise UnsupportedByClient(f"kcat cannot set a record timestamp (record {i})")
        if rec["key"] is None and not rec["value"]:
            raise UnsupportedByClient(f"kcat drops a record with no key and an empty value (record {i})")
        if rec["key"] == b"" and rec["value"] is None:
            raise UnsupportedByClient(f"kcat -Z turns an empty key into a null key (record {i})")
        for name, value in rec["headers"]:
            if "=" in name or "\0" in name or (value is not None and b"\0" in value):
                raise UnsupportedByClient(f"kcat -H cannot carry header {name!r}={value!r} (record {i})")
    if librdkafka not in ("system", "bundled"):
        raise ValueError("librdkafka must be 'system' or 'bundled'")
    env = kcat_bundled_librdkafka_env() if librdkafka == "bundled" else None
    exe = kcat_path()
    data_parts = [p for r in sent for p in (r["key"] or b"", r["value"] or b"")]
    key_delim = _pick_delim(b"K", data_parts)
    msg_delim = _pick_delim(b"D", data_parts + [key_delim])

    # Group consecutive records that share headers and null-value handling.
    groups: list[list[Record]] = []
    for rec in sent:
        sig = (tuple(rec["headers"]), rec["value"] is None)
        if groups and (tuple(groups[-1][0]["headers"]), groups[-1][0]["value"] is None) == sig:
            groups[-1].append(rec)
        else:
            groups.append([rec])

    deadline = time.monotonic() + timeout
    for group in groups:
        remaining = _remaining(deadline)
        if remaining <= 0:
            raise TimeoutError(f"kcat: produce to {bootstrap} not done within {timeout}s")
        argv: list[bytes] = [exe.encode(), b"-P", b"-q", b"-b", bootstrap.encode(), b"-t", topic.encode(),
                             b"-D", msg_delim, b"-K", key_delim,
                             b"-m", str(max(1, int(remaining))).encode(),
                             b"-X", f"message.timeout.ms={max(1000, int(remaining * 1000))}".encode(),
                             b"-c", str(len(group)).encode()]
        if partition is not None:
            argv += [b"-p", str(partition).encode()]
        if codec != "none":
            argv += [b"-z", codec.encode()]
        if group[0]["value"] is None:
            argv.append(b"-Z")
        for name, value in group[0]["headers"]:
            argv += [b"-H", name.encode() if value is None else name.encode() + b"=" + value]
        argv += [a.encode() for a in extra_args]
        payload = msg_delim.join(
            (b"" if r["key"] is None else r["key"] + key_delim) + (r["value"] or b"") for r in group)
        try:
            proc = subprocess.run(argv, input=payload, capture_output=True, env=env,
                                  timeout=remaining + 5)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"kcat did not finish within {remaining + 5:.0f}s") from exc
        err = proc.stderr.decode(errors="replace")
        if proc.returncode != 0 or "ERROR" in err:
            raise ClientError(f"kcat exited {proc.returncode}: {err.strip()[-1500:]}")
    for rec in sent:
        rec["partition"], rec["offset"] = partition, None
    return sent


def produce(client: str, bootstrap: str, topic: str, records: Sequence[Record],
            compression: str = "none", **kwargs) -> list[Record]:
    """Dispatch to ``produce_<client>`` (client in :data:`PRODUCERS`)."""
    funcs = {"confluent": produce_confluent, "kafka_python": produce_kafka_python,
             "aiokafka": produce_aiokafka, "kcat": produce_kcat}
    return funcs[client](bootstrap, topic, records, compression, **kwargs)


# --------------------------------------------------------------------------
# consumers
# --------------------------------------------------------------------------


def consume_confluent(bootstrap: str, topic: str, n: int, timeout: float = 15.0, *,
                      partitions: Sequence[int] | None = None,
                      config: dict[str, Any] | None = None) -> list[Record]:
    """Read the first ``n`` records of ``topic`` (all partitions unless
    ``partitions`` is given, from the beginning, no consumer group) with
    confluent-kafka.  Raises TimeoutError if fewer than ``n`` arrive."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    deadline = time.monotonic() + timeout
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"peers-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "enable.partition.eof": False,
        "socket.timeout.ms": int(timeout * 1000),
        "fetch.wait.max.ms": 100,
        **(config or {}),
    })
    out: list[Record] = []
    try:
        if partitions is None:
            md = consumer.list_topics(topic=topic, timeout=max(0.5, min(10.0, _remaining(deadline))))
            tmd = md.topics.get(topic)
            if tmd is None or tmd.error is not None or not tmd.partitions:
                raise ClientError(f"confluent-kafka: topic {topic!r} unknown on {bootstrap}: "
                                  f"{tmd.error if tmd else 'missing'}")
            partitions = sorted(tmd.partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        while len(out) < n:
            remaining = _remaining(deadline)
            if remaining <= 0:
                raise TimeoutError(f"confluent-kafka: got {len(out)} of {n} records from {topic!r} "
                                   f"within {timeout}s: {out!r}")
            msg = consumer.poll(min(0.5, remaining))
            if msg is None:
                continue
            if msg.error():
                raise ClientError(f"confluent-kafka consume error: {msg.error()}")
            ts_type, ts = msg.timestamp()
            out.append({
                "key": msg.key(), "value": msg.value(),
                "headers": [(k, v) for k, v in (msg.headers() or [])],
                "timestamp_ms": ts, "timestamp_type": 0 if ts_type == 1 else 1 if ts_type == 2 else None,
                "partition": msg.partition(), "offset": msg.offset(),
            })
    finally:
        consumer.close()
    return _sorted(out)


def consume_kafka_python(bootstrap: str, topic: str, n: int, timeout: float = 15.0, *,
                         partitions: Sequence[int] | None = None,
                         config: dict[str, Any] | None = None) -> list[Record]:
    """Like :func:`consume_confluent`, with kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    deadline = time.monotonic() + timeout
    ms = int(timeout * 1000)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        request_timeout_ms=max(ms, 1000),
        fetch_max_wait_ms=100,
        bootstrap_timeout_ms=ms,
        **(config or {}),
    )
    out: list[Record] = []
    try:
        if partitions is None:
            parts = None
            while parts is None and _remaining(deadline) > 0:
                parts = consumer.partitions_for_topic(topic)
                if not parts:
                    parts = None
                    time.sleep(0.1)
            if not parts:
                raise TimeoutError(f"kafka-python: topic {topic!r} not in metadata of {bootstrap}")
            partitions = sorted(parts)
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        while len(out) < n:
            remaining = _remaining(deadline)
            if remaining <= 0:
                raise TimeoutError(f"kafka-python: got {len(out)} of {n} records from {topic!r} "
                                   f"within {timeout}s: {out!r}")
            batches = consumer.poll(timeout_ms=int(min(0.5, remaining) * 1000), max_records=n - len(out))
            for msgs in batches.values():
                for m in msgs:
                    out.append({
                        "key": m.key, "value": m.value,
                        "headers": [(k, v) for k, v in (m.headers or [])],
                        "timestamp_ms": m.timestamp, "timestamp_type": m.timestamp_type,
                        "partition": m.partition, "offset": m.offset,
                    })
    finally:
        consumer.close()
    return _sorted(out)


def consume_aiokafka(bootstrap: str, topic: str, n: int, timeout: float = 15.0, *,
                     partitions: Sequence[int] | None = None,
                     config: dict[str, Any] | None = None) -> list[Record]:
    """Like :func:`consume_confluent`, with aiokafka (its own event loop)."""
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition

    async def run() -> list[Record]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                                    enable_auto_commit=False, fetch_max_wait_ms=100,
                                    request_timeout_ms=int(timeout * 1000), **(config or {}))
        await consumer.start()
        out: list[Record] = []
        deadline = time.monotonic() + timeout
        try:
            parts = partitions
            while parts is None and _remaining(deadline) > 0:
                if topic in await consumer.topics():  # a metadata request for every topic
                    parts = sorted(consumer.partitions_for_topic(topic) or ()) or None
                if parts is None:
                    await asyncio.sleep(0.1)
            if not parts:
                raise TimeoutError(f"aiokafka: topic {topic!r} not in metadata of {bootstrap}")
            tps = [TopicPartition(topic, p) for p in parts]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            while len(out) < n:
                remaining = _remaining(deadline)
                if remaining <= 0:
                    raise TimeoutError(f"aiokafka: got {len(out)} of {n} records from {topic!r} "
                                       f"within {timeout}s: {out!r}")
                got = await consumer.getmany(timeout_ms=int(min(0.5, remaining) * 1000),
                                             max_records=n - len(out))
                for msgs in got.values():
                    out += [{"key": m.key, "value": m.value, "headers": [(k, v) for k, v in (m.headers or [])],
                             "timestamp_ms": m.timestamp, "timestamp_type": m.timestamp_type,
                             "partition": m.partition, "offset": m.offset} for m in msgs]
        finally:
            await consumer.stop()
        return out

    return _sorted(asyncio.run(run()))


def consume_kcat(bootstrap: str, topic: str, n: int, timeout: float = 15.0, *,
                 partitions: Sequence[int] | None = None, extra_args: Sequence[str] = (),
                 librdkafka: str = "system") -> list[Record]:
    """Like :func:`consume_confluent`, with ``kcat -C -J`` (one partition, or
    all of them).  kcat's JSON output carries keys, values and headers as
    text: fine for the suite's ASCII records, not for arbitrary bytes."""
    import json

    if partitions is not None and len(partitions) != 1:
        raise UnsupportedByClient("kcat -C reads one partition or all of them")
    argv = [kcat_path(), "-C", "-q", "-J", "-b", bootstrap, "-t", topic, "-o", "beginning", "-c", str(n),
            *(["-p", str(partitions[0])] if partitions else []), *extra_args]
    env = kcat_bundled_librdkafka_env() if librdkafka == "bundled" else None
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as exc:
        got = (exc.stdout or b"").decode(errors="replace").count("\n")
        raise TimeoutError(f"kcat: got {got} of {n} records from {topic!r} within {timeout}s") from exc
    if proc.returncode != 0:
        raise ClientError(f"kcat -C exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-1500:]}")
    return _sorted([kcat_record(json.loads(line)) for line in proc.stdout.decode().splitlines()
                    if line.startswith("{")])


def kcat_record(d: dict) -> Record:
    """One line of ``kcat -J`` → a record of this module's shape."""
    hs = d.get("headers") or []

    def raw(v):
        return None if v is None else v.encode()

    return {"key": raw(d.get("key")), "value": raw(d.get("payload")),
            "headers": [(hs[i], raw(hs[i + 1])) for i in range(0, len(hs), 2)],
            "timestamp_ms": d.get("ts"), "timestamp_type": {"create": 0, "logappend": 1}.get(d.get("tstype")),
            "partition": d["partition"], "offset": d["offset"]}


def consume(client: str, bootstrap: str, topic: str, n: int, timeout: float = 15.0, **kwargs) -> list[Record]:
    """Dispatch to ``consume_<client>`` (confluent, kafka_python, aiokafka, kcat)."""
    funcs = {"confluent": consume_confluent, "kafka_python": consume_kafka_python,
             "aiokafka": consume_aiokafka, "kcat": consume_kcat}
    return funcs[client](bootstrap, topic, n, timeout, **kwargs)


# --------------------------------------------------------------------------
# consumer groups: subscribe, read, commit, close


def _group_record(key, value, headers, ts, ts_type, partition, offset) -> Record:
    return {"key": key, "value": value, "headers": list(headers or []), "timestamp_ms": ts,
            "timestamp_type": ts_type, "partition": partition, "offset": offset}


def consume_group_confluent(bootstrap: str, topic: str, group: str, n: int, timeout: float = 20.0, *,
                            config: dict[str, Any] | None = None) -> list[Record]:
    """Read ``n`` records of ``topic`` as a member of ``group`` (from the
    group's committed offsets, else the beginning), commit them, leave."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "fetch.wait.max.ms": 100, **(config or {})})
    consumer.subscribe([topic])
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                raise ClientError(f"confluent-kafka consume error: {msg.error()}")
            ts_type, ts = msg.timestamp()
            out.append(_group_record(msg.key(), msg.value(), msg.headers(), ts, ts_type - 1, msg.partition(),
                                     msg.offset()))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return _sorted(out)


def consume_group_kafka_python(bootstrap: str, topic: str, group: str, n: int, timeout: float = 20.0, *,
                               config: dict[str, Any] | None = None) -> list[Record]:
    """Like :func:`consume_group_confluent`, with kafka-python."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                             enable_auto_commit=False, fetch_max_wait_ms=100, **(config or {}))
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=200).values():
                out += [_group_record(m.key, m.value, m.headers, m.timestamp, m.timestamp_type, m.partition,
                                      m.offset) for m in msgs]
        consumer.commit()
    finally:
        consumer.close()
    return _sorted(out)


def consume_group_aiokafka(bootstrap: str, topic: str, group: str, n: int, timeout: float = 20.0, *,
                           config: dict[str, Any] | None = None) -> list[Record]:
    """Like :func:`consume_group_confluent`, with aiokafka."""
    from aiokafka import AIOKafkaConsumer

    async def run() -> list[Record]:
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                    auto_offset_reset="earliest", enable_auto_commit=False,
                                    fetch_max_wait_ms=100, **(config or {}))
        await consumer.start()
        out: list[Record] = []
        deadline = time.monotonic() + timeout
        try:
            while len(out) < n and time.monotonic() < deadline:
                for msgs in (await consumer.getmany(timeout_ms=200)).values():
                    out += [_group_record(m.key, m.value, m.headers, m.timestamp, m.timestamp_type, m.partition,
                                          m.offset) for m in msgs]
            await consumer.commit()
        finally:
            await consumer.stop()
        return out

    return _sorted(asyncio.run(run()))


GROUP_CONSUMERS = {"confluent": consume_group_confluent, "kafka_python": consume_group_kafka_python,
                   "aiokafka": consume_group_aiokafka}


# --------------------------------------------------------------------------
# transactions: each ``(records, offsets, commit)`` - the records to write to
# ``partition``, the offsets ``{(topic, partition): offset}`` to commit for
# ``group`` with them, and whether the transaction commits or aborts


Transaction = tuple[Sequence[Record], dict[tuple[str, int], int], bool]


def transact_confluent(bootstrap: str, topic: str, group: str, transactions: Sequence[Transaction], *,
                       partition: int = 0, transactional_id: str | None = None, timeout: float = 20.0) -> None:
    """Transactions with confluent-kafka.  librdkafka's abort_transaction drops
    records still queued, so each transaction flushes before it ends."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "transactional.id": transactional_id or f"tx-{uuid.uuid4().hex[:8]}"})
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})  # only for its group metadata
    try:
        producer.init_transactions(timeout)
        for recs, offsets, commit in transactions:
            producer.begin_transaction()
            for r in map(_norm, recs):
                producer.produce(topic, value=r["value"], key=r["key"], headers=r["headers"], partition=partition)
            producer.flush(timeout)
            if offsets:
                producer.send_offsets_to_transaction(
                    [TopicPartition(t, p, o) for (t, p), o in offsets.items()], member.consumer_group_metadata(),
                    timeout)
            producer.commit_transaction(timeout) if commit else producer.abort_transaction(timeout)
    finally:
        member.close()


def transact_kafka_python(bootstrap: str, topic: str, group: str, transactions: Sequence[Transaction], *,
                          partition: int = 0, transactional_id: str | None = None, timeout: float = 20.0) -> None:
    """Transactions with kafka-python."""
    from kafka import KafkaProducer, TopicPartition
    from kafka.structs import OffsetAndMetadata

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, max_block_ms=int(timeout * 1000),
                             transactional_id=transactional_id or f"tx-{uuid.uuid4().hex[:8]}")
    try:
        producer.init_transactions()
        for recs, offsets, commit in transactions:
            producer.begin_transaction()
            for r in map(_norm, recs):
                producer.send(topic, value=r["value"], key=r["key"], headers=r["headers"], partition=partition)
            producer.flush()
            if offsets:
                producer.send_offsets_to_transaction(
                    {TopicPartition(t, p): OffsetAndMetadata(o, "", -1) for (t, p), o in offsets.items()}, group)
            producer.commit_transaction() if commit else producer.abort_transaction()
    finally:
        producer.close(timeout=5)


def transact_aiokafka(bootstrap: str, topic: str, group: str, transactions: Sequence[Transaction], *,
                      partition: int = 0, transactional_id: str | None = None, timeout: float = 20.0) -> None:
    """Transactions with aiokafka."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5,
                                    transactional_id=transactional_id or f"tx-{uuid.uuid4().hex[:8]}")
        await producer.start()
        try:
            for recs, offsets, commit in transactions:
                await producer.begin_transaction()
                for r in map(_norm, recs):
                    await producer.send_and_wait(topic, value=r["value"], key=r["key"], headers=r["headers"],
                                                 partition=partition)
                if offsets:
                    await producer.send_offsets_to_transaction(
                        {TopicPartition(t, p): o for (t, p), o in offsets.items()}, group)
                await (producer.commit_transaction() if commit else producer.abort_transaction())
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(run(), 3 * timeout))


TRANSACTIONAL = {"confluent": transact_confluent, "kafka_python": transact_kafka_python,
                 "aiokafka": transact_aiokafka}

#: each client's setting for a consumer that reads only committed records
READ_COMMITTED = {"confluent": {"isolation.level": "read_committed"},
                  "kafka_python": {"isolation_level": "read_committed"},
                  "aiokafka": {"isolation_level": "read_committed"}}
#: ... and one that reads them all (librdkafka's default is read_committed)
READ_UNCOMMITTED = {"confluent": {"isolation.level": "read_uncommitted"},
                    "kafka_python": {"isolation_level": "read_uncommitted"},
                    "aiokafka": {"isolation_level": "read_uncommitted"}}


# --------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------


def assert_same_records(sent: Sequence[Record], received: Sequence[Record], *,
                        sent_between: tuple[int, int] | None = None,
                        compare_offsets: bool = True) -> None:
    """Assert ``received`` (from a ``consume_*``) carries exactly ``sent`` (from a
    ``produce_*``), in order.  A sent ``timestamp_ms`` of None must have come
    back as a CreateTime within ``sent_between`` (ms, inclusive) when given."""
    assert len(received) == len(sent), f"sent {len(sent)} records, received {len(received)}"
    for i, (s, r) in enumerate(zip(sent, received)):
        for field in ("key", "value", "headers"):
            assert r[field] == s[field], f"record {i} {field}: sent {s[field]!r}, received {r[field]!r}"
        if s["timestamp_ms"] is not None:
            assert r["timestamp_ms"] == s["timestamp_ms"], (
                f"record {i} timestamp: sent {s['timestamp_ms']}, received {r['timestamp_ms']}")
        elif sent_between is not None:
            lo, hi = sent_between
            assert lo <= r["timestamp_ms"] <= hi, (
                f"record {i} client-stamped timestamp {r['timestamp_ms']} not in [{lo}, {hi}]")
        if compare_offsets and s.get("offset") is not None:
            assert (r["partition"], r["offset"]) == (s["partition"], s["offset"]), (
                f"record {i} position: sent to {s['partition']}/{s['offset']}, "
                f"read from {r['partition']}/{r['offset']}")

"""Python client for the Java test oracle (tests/oracle/KafkaOracle.java).

The oracle is one long-running JVM that answers JSON requests, one per line,
using the Apache Kafka client library's own generated message classes and
record builders.  It is the reference the kafkaproto codec is checked against.
It runs on kafka-clients 4.4.0 (``KAFKA``); ``JavaOracle(LEGACY_KAFKA)`` runs
the same oracle on 3.9.1, for the versions Kafka 4.0 removed.

    with JavaOracle() as oracle:
        body = oracle.encode(18, "request", 3, {"clientSoftwareName": "x",
                                                 "clientSoftwareVersion": "1"})
        reply = oracle.decode(18, "request", 3, body)

Message JSON uses Kafka's JSON converter format: camelCase field names as in
the JSON schemas (``clientSoftwareName``), bytes and records fields as base64
text, UUIDs in Kafka's base64 form.  Fields left out of an ``encode`` request
get the schema default (pass ``fill_defaults=False`` for Kafka's strict mode,
where every field of the version must be present).

The builds live in ``build/peers/oracle-<version>/`` (made by
``tools/peers/setup_java_oracle.sh``, which this module runs when needed; the
jars come from Maven Central through ``tools/peers/fetch_kafka.sh``).
"""

from __future__ import annotations

import atexit
import json as _json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "KAFKA",
    "LEGACY_KAFKA",
    "JavaOracle",
    "OracleError",
    "OracleDied",
    "OracleUnavailable",
    "REPO_ROOT",
    "ensure_built",
    "shared_oracle",
    "close_shared_oracle",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_DIR = REPO_ROOT / "build" / "peers"
SETUP_SCRIPT = REPO_ROOT / "tools" / "peers" / "setup_java_oracle.sh"
KAFKA = "4.4.0"  # the release whose schemas the project follows
LEGACY_KAFKA = "3.9.1"  # the last release that still speaks the versions 4.0 removed
KAFKA_VERSIONS = (KAFKA, LEGACY_KAFKA)

DEFAULT_JVM_ARGS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xss8m",
    "-Xmx1g",
)


class OracleError(RuntimeError):
    """The oracle answered a request with an error reply."""

    def __init__(self, message: str, reply: dict | None = None, request: dict | None = None):
        super().__init__(message)
        self.reply = reply or {}
        self.request = request


class OracleDied(RuntimeError):
    """The oracle process exited, or did not answer in time."""


class OracleUnavailable(RuntimeError):
    """The oracle cannot be built or started here (no Java, no network...)."""


def _find_java() -> str | None:
    explicit = os.environ.get("JAVA")
    if explicit:
        return explicit
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.exists():
            return str(candidate)
    return shutil.which("java")


def ensure_built(quiet: bool = True, kafka_version: str = KAFKA) -> list[Path]:
    """Runs the setup script (fast when everything is built) and returns the classpath."""
    if not SETUP_SCRIPT.exists():
        raise OracleUnavailable(f"missing {SETUP_SCRIPT}")
    bash = shutil.which("bash")
    if bash is None:
        raise OracleUnavailable(f"bash is needed to run {SETUP_SCRIPT.name}")
    proc = subprocess.run(
        [bash, str(SETUP_SCRIPT)],
        cwd=str(REPO_ROOT),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        raise OracleUnavailable(f"{SETUP_SCRIPT.name} failed (exit {proc.returncode}):\n{output}")
    if not quiet and output:
        sys.stderr.write(output)
    return _read_classpath(kafka_version)


def _read_classpath(kafka_version: str) -> list[Path]:
    if kafka_version not in KAFKA_VERSIONS:
        raise ValueError(f"the oracle is built for kafka-clients {' and '.join(KAFKA_VERSIONS)}, not {kafka_version}")
    classpath_file = PEERS_DIR / f"oracle-{kafka_version}" / "classpath.txt"
    if not classpath_file.exists():
        raise OracleUnavailable(f"oracle is not built: {classpath_file} is missing")
    entries = [PEERS_DIR / line.strip() for line in classpath_file.read_text().splitlines() if line.strip()]
    missing = [str(p) for p in entries if not p.exists()]
    if missing:
        raise OracleUnavailable("oracle build is incomplete, missing: {}".format(", ".join(missing)))
    return entries


def _hex(data: Any) -> str:
    if isinstance(data, str):
        return data
    return bytes(data).hex()


def _maybe_hex(data: Any) -> str | None:
    return None if data is None else _hex(data)


class JavaOracle:
    """One oracle JVM on kafka-clients ``kafka_version`` (4.4.0 or 3.9.1).
    Use as a context manager, or call close()."""

    def __init__(
        self,
        kafka_version: str = KAFKA,
        *,
        setup: bool = True,
        java: str | None = None,
        jvm_args: Sequence[str] = DEFAULT_JVM_ARGS,
        timeout: float = 120.0,
    ):
        self.timeout = timeout
        self._lock = threading.Lock()
        self._buffer = b""
        self._versions: list[dict] | None = None
        self._proc: subprocess.Popen | None = None
        java = java or _find_java()
        if java is None:
            raise OracleUnavailable("no java executable found (set JAVA or JAVA_HOME, or put java on PATH)")
        classpath = ensure_built(kafka_version=kafka_version) if setup else _read_classpath(kafka_version)
        self._stderr = tempfile.TemporaryFile()
        cmd = [java, *jvm_args, "-cp", os.pathsep.join(str(p) for p in classpath), "KafkaOracle"]
        try:
            self._proc = subprocess.Popen(
                cmd,
                cwd=str(REPO_ROOT),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                bufsize=0,
            )
        except OSError as e:
            self._stderr.close()
            raise OracleUnavailable(f"cannot start {java}: {e}") from e
        try:
            info = self.request({"op": "ping"})
        except (OracleDied, OracleError, ValueError) as e:
            self.close()
            raise OracleUnavailable(f"the oracle JVM did not start properly: {e}") from e
        self.kafka_version: str = info["kafka_version"]
        if self.kafka_version != kafka_version:
            self.close()
            raise OracleUnavailable(f"the oracle built for {kafka_version} runs kafka-clients {self.kafka_version}")

    # ------------------------------------------------------------ plumbing

    def __enter__(self) -> JavaOracle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.poll() is None:
                try:
                    proc.stdin.write(b'{"op":"quit"}\n')
                    proc.stdin.flush()
                except OSError:
                    pass
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()
            self._stderr.close()

    def _stderr_tail(self, limit: int = 4000) -> str:
        try:
            self._stderr.seek(0)
            data = self._stderr.read()
        except (OSError, ValueError):
            return ""
        return data[-limit:].decode("utf-8", "replace")

    def _read_line(self) -> bytes:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        fd = proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], self.timeout)
            if not ready:
                raise OracleDied(f"oracle did not answer within {self.timeout:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise OracleDied(f"oracle exited (code {proc.poll()}); stderr:\n{self._stderr_tail()}")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def request(self, req: dict[str, Any], check: bool = True) -> dict[str, Any]:
        """Sends one request dict and returns the reply dict.

        With check=True an error reply raises OracleError.
        """
        line = _json.dumps(req, separators=(",", ":")).encode("utf-8")
        reply = self.request_raw(line)
        if check and "error" in reply:
            raise OracleError(reply["error"], reply, req)
        return reply

    def request_raw(self, line: bytes) -> dict[str, Any]:
        """Sends one line exactly as given (it must not contain a newline) and returns the reply."""
        if b"\n" in line:
            raise ValueError("a request line must not contain a newline")
        line = line + b"\n"
        with self._lock:
            if not self.alive:
                raise OracleDied("oracle is not running; stderr:\n%s" % (self._stderr_tail() if self._proc else ""))
            try:
                self._proc.stdin.write(line)
                self._proc.stdin.flush()
            except OSError as e:
                raise OracleDied(f"cannot write to oracle: {e}; stderr:\n{self._stderr_tail()}") from e
            return _json.loads(self._read_line().decode("utf-8"))

    def request_many(self, reqs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Sends many requests in one round trip; returns the replies (errors are not raised)."""
        return self.request({"op": "batch", "requests": list(reqs)})["replies"]

    # ---------------------------------------------------------- operations

    def ping(self) -> dict[str, Any]:
        return self.request({"op": "ping"})

    def encode_full(
        self, api_key: int, kind: str, version: int, json: dict[str, Any], *, fill_defaults: bool = True
    ) -> dict[str, Any]:
        """Like encode() but returns the whole reply (hex, unknown_keys)."""
        return self.request(
            {
                "op": "encode",
                "api_key": api_key,
                "kind": kind,
                "version": version,
                "json": json,
                "fill_defaults": fill_defaults,
            }
        )

    def encode(
        self, api_key: int, kind: str, version: int, json: dict[str, Any], *, fill_defaults: bool = True
    ) -> bytes:
        """Message body (no header, no size prefix) as Kafka serializes it."""
        return bytes.fromhex(self.encode_full(api_key, kind, version, json, fill_defaults=fill_defaults)["hex"])

    @staticmethod
    def _decoded(reply: dict[str, Any]) -> dict[str, Any]:
        reply["reencoded"] = bytes.fromhex(reply["hex"])
        reply["trailing_bytes"] = bytes.fromhex(reply["trailing_hex"])
        return reply

    def decode(self, api_key: int, kind: str, version: int, data: Any) -> dict[str, Any]:
        """Reads a message body with Kafka.

        Returns {"json": Kafka's JSON of the message, "hex": re-serialized
        body, "reencoded": the same as bytes, "consumed": bytes read,
        "trailing": count of bytes left unread, "trailing_hex"/"trailing_bytes"}.
        """
        return self._decoded(
            self.request({"op": "decode", "api_key": api_key, "kind": kind, "version": version, "hex": _hex(data)})
        )

    def encode_header(
        self, kind: str, header_version: int, json: dict[str, Any], *, fill_defaults: bool = True
    ) -> bytes:
        reply = self.request(
            {
                "op": "encode_header",
                "kind": kind,
                "header_version": header_version,
                "json": json,
                "fill_defaults": fill_defaults,
            }
        )
        return bytes.fromhex(reply["hex"])

    def decode_header(self, kind: str, header_version: int, data: Any) -> dict[str, Any]:
        return self._decoded(
            self.request({"op": "decode_header", "kind": kind, "header_version": header_version, "hex": _hex(data)})
        )

    def header_versions(self, api_key: int, version: int) -> dict[str, Any]:
        """{"request": request header version, "response": response header version, "supported": bool}."""
        return self.request({"op": "header_versions", "api_key": api_key, "version": version})

    @staticmethod
    def _batch_spec(
        records: Sequence[dict[str, Any]],
        magic: int = 2,
        codec: str = "none",
        base_offset: int = 0,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        timestamp_type: str | None = None,
        control: bool = False,
        partition_leader_epoch: int = -1,
        log_append_time: int | None = None,
        level: int | None = None,
    ) -> dict[str, Any]:
        out_records = []
        for r in records:
            rec: dict[str, Any] = {}
            if r.get("offset_delta") is not None:
                rec["offset_delta"] = r["offset_delta"]
            if r.get("timestamp") is not None:
                rec["timestamp"] = r["timestamp"]
            # accept key/value as bytes or as *_hex strings
            rec["key_hex"] = _maybe_hex(r["key"]) if "key" in r else r.get("key_hex")
            rec["value_hex"] = _maybe_hex(r["value"]) if "value" in r else r.get("value_hex")
            headers = r.get("headers") or []
            rec["headers"] = [[k, _maybe_hex(v)] for k, v in headers]
            out_records.append(rec)
        spec: dict[str, Any] = {
            "magic": magic,
            "codec": codec,
            "base_offset": base_offset,
            "producer_id": producer_id,
            "producer_epoch": producer_epoch,
            "base_sequence": base_sequence,
            "transactional": transactional,
            "control": control,
            "partition_leader_epoch": partition_leader_epoch,
            "records": out_records,
        }
        if timestamp_type is not None:
            spec["timestamp_type"] = timestamp_type
        if log_append_time is not None:
            spec["log_append_time"] = log_append_time
        if level is not None:
            spec["level"] = level
        return spec

    def records_encode(self, records: Sequence[dict[str, Any]] | None = None, *, batches=None, **batch) -> bytes:
        """Builds record bytes with Kafka's MemoryRecordsBuilder.

        Either one batch: ``records_encode(records, magic=2, codec="zstd", ...)``
        (keyword arguments as in the JSON protocol: base_offset, producer_id,
        producer_epoch, base_sequence, transactional, timestamp_type
        ("create"|"log_append"|"none"), control, partition_leader_epoch,
        log_append_time, level), or several concatenated batches:
        ``records_encode(batches=[{"records": [...], "codec": ...}, ...])``.
        A record is a dict with optional offset_delta, timestamp, key/value
        (bytes or None) or key_hex/value_hex, headers [(key, bytes|None), ...].
        """
        if batches is not None:
            if records is not None or batch:
                raise TypeError("pass either batches=[...] or records with batch options, not both")
            req = {"op": "records_encode", "batches": [self._batch_spec(**b) for b in batches]}
        else:
            if records is None:
                raise TypeError("records_encode needs records or batches")
            req = {"op": "records_encode", **self._batch_spec(records, **batch)}
        return bytes.fromhex(self.request(req)["hex"])

    def records_decode_full(self, data: Any) -> dict[str, Any]:
        """The whole reply: {"batches": [...], "size_in_bytes": n, "trailing": bytes after the last whole batch}."""
        return self.request({"op": "records_decode", "hex": _hex(data)})

    def records_decode(self, data: Any) -> list[dict[str, Any]]:
        """Every batch Kafka reads from the bytes, each with its "records" list."""
        return self.records_decode_full(data)["batches"]

    @staticmethod
    def java_class(message_class: type) -> str:
        """The simple name of Kafka's generated class for one of kafkaproto's
        message classes (``ProduceRequest`` -> ``ProduceRequestData``,
        ``RequestHeader`` -> ``RequestHeaderData``, ``AbortedTxn`` -> ``AbortedTxn``);
        decode/encode requests name it as ``"class"`` instead of api_key + kind."""
        return message_class.NAME + ("Data" if message_class.KIND in ("request", "response", "header") else "")

    def message_versions(self, java_classes: Iterable[str]) -> dict[str, tuple[int, int] | None]:
        """{class name: (lowest, highest) supported version, or None if Kafka has no such class}."""
        reply = self.request({"op": "message_versions", "classes": list(java_classes)})["classes"]
        return {k: None if "error" in v else (v["lowest"], v["highest"]) for k, v in reply.items()}

    def versions(self) -> list[dict[str, Any]]:
        """One dict per ApiKeys entry (api_key, name, oldest_version, latest_version,
        latest_version_unstable, versions: [{version, flexible, request_header_version,
        response_header_version, deprecated}])."""
        if self._versions is None:
            self._versions = self.request({"op": "versions"})["apis"]
        return self._versions


# ---------------------------------------------------------------- sharing

# One oracle per kafka-clients release per Python process, even if this
# module is imported under two names (e.g. "tests.oracle.java_oracle" and
# "oracle.java_oracle").
_REGISTRY_NAME = "_kafkaproto_java_oracle_registry"
_registry = sys.modules.get(_REGISTRY_NAME)
if _registry is None:
    _registry = types.ModuleType(_REGISTRY_NAME)
    _registry.oracles = {}
    _registry.lock = threading.Lock()
    sys.modules[_REGISTRY_NAME] = _registry


def shared_oracle(kafka_version: str = KAFKA) -> JavaOracle:
    """The process-wide oracle on that release, started on first use
    (restarted if it died)."""
    with _registry.lock:
        oracle = _registry.oracles.get(kafka_version)
        if oracle is None or not oracle.alive:
            if oracle is not None:
                oracle.close()
            oracle = JavaOracle(kafka_version)
            _registry.oracles[kafka_version] = oracle
            if not getattr(_registry, "atexit_registered", False):
                atexit.register(close_shared_oracle)
                _registry.atexit_registered = True
        return oracle


def close_shared_oracle() -> None:
    with _registry.lock:
        oracles, _registry.oracles = list(_registry.oracles.values()), {}
    for oracle in oracles:
        oracle.close()

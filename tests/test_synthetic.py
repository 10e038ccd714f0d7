"""The synthetic capture generator's small-frame and mixed profiles
(tests/support/synthetic.py): what they write reads back as their manifest
says, in time order, the same for the same seed."""

from __future__ import annotations

import collections
import hashlib

import pytest

from kafkaproto.capture import Accounting, CaptureFile, read_frames
from kafkaproto.capture.dataset import decode_capture
from kafkaproto.error_codes import error_name
from support.synthetic import PROFILES, SMALL_TOPICS, write_capture

MB = 1_000_000


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    folder = tmp_path_factory.mktemp("profiles")
    out = {}
    for profile in ("small", "mixed"):
        path = folder / f"{profile}.pcap"
        out[profile] = (path, write_capture(path, size=int(1.5 * MB), seed=11, profile=profile))
    return out


@pytest.mark.parametrize("profile", ["small", "mixed"])
def test_the_decode_pass_finds_what_the_manifest_says(captures, profile):
    path, m = captures[profile]
    frames, records, errors, status = (collections.Counter() for _ in range(4))
    fetch_topics = collections.Counter()
    for table, batch in decode_capture(path):
        rows = batch.to_pylist()
        if table in ("requests", "responses"):
            for r in rows:
                frames[(r["api_key"], r["api_version"], table[:-1])] += 1
                status[r["status"]] += 1
                if table == "requests" and r["api_key"] == 1:
                    fetch_topics[(r["api_version"], tuple(r["topics"] or ()))] += 1
            if table == "responses":
                for r in rows:
                    for code in r["error_codes"] or ():
                        errors[(r["api_key"], error_name(code))] += 1
        elif table == "record_sets":
            for r in rows:
                records[(r["source"], r["topic"])] += r["records"]
    assert frames == m.frames
    assert set(status) == {"decoded"}
    assert records == m.records
    assert errors == m.errors
    # the KIP-848 consumers fetch by topic id (v17): named from the Metadata v12 on their connection
    # (an incremental fetch that names no partition names no topic)
    assert {t for (v, t) in fetch_topics if v == 17} - {()} == {("sessions",)}


@pytest.mark.parametrize("profile", ["small", "mixed"])
def test_packets_are_in_time_order_and_every_byte_is_framed(captures, profile):
    path, m = captures[profile]
    with open(path, "rb") as fh:
        cap = CaptureFile(fh)
        cap.open()
        stamps = [ts for ts, *_ in cap.iter_records()]
    assert len(stamps) == m.packets and stamps == sorted(stamps)
    acc = Accounting()
    n = sum(1 for _ in read_frames(path, acc=acc))
    acc.check()
    assert n == sum(m.frames.values()) and not acc.problems()
    assert acc.kafka_connections == acc.connections == m.connections


def test_the_small_cast_pipelines_splits_and_speaks_new_and_old_versions(captures):
    _, m = captures["small"]
    assert m.coalesced_packets > 20 and m.split_frames > 20
    keys = {(k, v) for k, v, _ in m.frames}
    # acks=1 and acks=all producers on flexible and older Produce; fetch sessions on v11 and v17
    assert {(0, 7), (0, 8), (0, 11), (1, 11), (1, 17), (3, 12), (68, 1), (10, 4), (11, 9), (14, 5)} <= keys
    assert {t for _, t in m.records} == set(SMALL_TOPICS)
    assert m.errors[(11, "MEMBER_ID_REQUIRED")] >= 1
    assert set(m.cast_frames) == {"small"}


def test_the_mixed_capture_holds_both_casts_in_the_share_asked(captures):
    _, m = captures["mixed"]
    share = m.cast_bytes["small"] / (m.cast_bytes["small"] + m.cast_bytes["bulk"])
    assert 0.15 < share < 0.25
    # frames: the small cast has most of them, for a fifth of the bytes
    assert m.cast_frames["small"] > m.cast_frames["bulk"] > 0
    assert {"orders", "events"} <= {t for _, t in m.records}


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    def digest(name, seed, profile):
        path = tmp_path / name
        write_capture(path, size=300_000, seed=seed, profile=profile)
        return hashlib.sha256(path.read_bytes()).hexdigest()

    assert digest("a", 5, "mixed") == digest("b", 5, "mixed") != digest("c", 6, "mixed")
    with pytest.raises(ValueError, match="profile"):
        write_capture(tmp_path / "x", profile="huge")
    assert PROFILES == ("bulk", "small", "mixed")

"""Agreement with Wireshark's Kafka dissector (Debian's tshark) on the shipped
pcap sample: for every Kafka PDU tshark decodes, our api key, version,
correlation id, client id and topic names are the same.

tshark 4.0 knows only older API versions; PDUs it does not decode (an
unknown api key, a response whose request it lost) are left out, and topic
names are compared where tshark lists any.  tools/peers/install_peers.sh
installs tshark; the test fails (never skips) without it.
"""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kafkaproto.capture import Accounting, read_frames
from kafkaproto.capture.tools.dissect import dissect

SAMPLE = Path(__file__).resolve().parent.parent / "samples" / "capture"

pytestmark = pytest.mark.peers  # tshark, a real program


def tshark_pdus(pcap: Path, ports):
    """One dict per Kafka PDU tshark finds (PDML output, streamed)."""
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.fail("tshark is not installed: run tools/peers/install_peers.sh", pytrace=False)
    args = [tshark, "-n", "-r", str(pcap), "-T", "pdml"]
    for p in ports:
        args += ["-d", f"tcp.port=={p},kafka"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = []
    try:
        for _, el in ET.iterparse(proc.stdout):
            if el.tag != "packet":
                continue
            net = {}
            for proto in el.findall("proto"):
                name = proto.get("name")
                if name in ("ip", "ipv6", "tcp"):
                    for fld in proto.iter("field"):
                        net.setdefault(fld.get("name"), fld.get("show"))
                elif name == "kafka":
                    fields = collections.defaultdict(list)
                    for fld in proto.iter("field"):
                        fields[fld.get("name")].append(fld.get("show"))
                    src = f"{net.get('ip.src')}:{net.get('tcp.srcport')}"
                    dst = f"{net.get('ip.dst')}:{net.get('tcp.dstport')}"
                    out.append((src, dst, fields))
            el.clear()
    finally:
        proc.stdout.close()
        proc.wait(timeout=60)
    return out


def topic_names(msg) -> set:
    """Names of the topics a message lists (any nesting level)."""
    names = set()
    stack = [msg]
    while stack:
        obj = stack.pop()
        attrs = getattr(obj, "_ATTRS", ())
        if "Topic" in type(obj).__name__:
            for a in ("name", "topic"):
                v = getattr(obj, a, None)
                if isinstance(v, str) and v:
                    names.add(v)
        for a in attrs:
            v = getattr(obj, a)
            if a == "topic_names" and isinstance(v, list):  # DeleteTopics v0-5: names, no structs
                names.update(x for x in v if isinstance(x, str) and x)
            elif isinstance(v, list) and v and hasattr(v[0], "_ATTRS"):
                stack.extend(v)
            elif hasattr(v, "_ATTRS"):
                stack.append(v)
    return names


#: each committed pcap sample (its manifest) and how much of it tshark 4.0 at least
#: dissects: (PDUs compared, with topic names, Produce PDUs, Fetch PDUs).  Kafka
#: 4.4's clients speak versions newer than tshark knows: mostly headers there.
SAMPLES = {"produced.json": (500, 100, 10, 10), "kafka44.json": (500, 40, 2, 2)}


@pytest.mark.parametrize("manifest_name", sorted(SAMPLES))
def test_tshark_agrees_on_the_pcap_sample(manifest_name):
    least, least_topics, least_produce, least_fetch = SAMPLES[manifest_name]
    manifest = json.loads((SAMPLE / manifest_name).read_text())
    ports = sorted(p for ps in manifest["brokers"].values() for p in ps)
    pcap = SAMPLE / manifest["pcap"]

    acc = Accounting()
    ours = collections.defaultdict(list)  # (client, server, direction, correlation id) -> frames
    for d in dissect(read_frames(pcap, ports=ports, acc=acc), acc):
        f = d.frame
        ours[(f.conn.client, f.conn.server, f.direction, f.correlation_id)].append(d)
    acc.check()
    assert acc.gaps == 0 and acc.frames_total > 500

    used = collections.Counter()
    compared = topics_compared = 0
    by_api = collections.Counter()
    skipped = collections.Counter()
    for src, dst, fl in tshark_pdus(pcap, ports):
        is_request = int(dst.rsplit(":", 1)[1]) in ports
        if "kafka.request_missing" in fl or not fl.get("kafka.api_key"):
            skipped["tshark: no request or api key"] += 1
            continue
        version = fl.get("kafka.api_version") or fl.get("kafka.response.version")
        if not version:
            skipped["tshark: no version"] += 1
            continue
        client, server = (src, dst) if is_request else (dst, src)
        corr = int(fl["kafka.correlation_id"][0])
        key = (client, server, "request" if is_request else "response", corr)
        candidates = ours.get(key, [])
        assert used[key] < len(candidates), f"tshark PDU {key} not among our frames"
        d = candidates[used[key]]
        used[key] += 1
        assert (d.frame.api_key, d.frame.api_version) == (int(fl["kafka.api_key"][0]), int(version[0])), key
        assert d.error is None, (key, d.error)
        if is_request:
            tshark_client = fl.get("kafka.client_id", [None])[0]
            assert d.header.client_id == tshark_client, key
        tshark_topics = set(fl.get("kafka.topic_name", []))
        # a body in a version tshark does not know is not dissected (it may
        # still print a garbled "[ Null ]" topic): compare headers only
        unsupported = any(m.startswith(("Unsupported", "Unknown")) for m in fl.get("_ws.expert.message", []))
        if unsupported and not (d.frame.api_key == 18 and not is_request):
            skipped["tshark: body version unknown to tshark (header compared)"] += 1
        elif tshark_topics:
            assert topic_names(d.message) == tshark_topics, (key, d.frame.api_key, d.frame.api_version)
            topics_compared += 1
        compared += 1
        by_api[d.frame.api_key] += 1
    print(f"tshark agreement: {compared} PDUs compared ({topics_compared} with topic names), "
          f"by api key {dict(sorted(by_api.items()))}; skipped {dict(skipped)}; "
          f"our frames {acc.frames_total}")
    assert compared > least and topics_compared > least_topics
    # Produce and Fetch (with topics) are among what was compared
    assert by_api[0] > least_produce and by_api[1] > least_fetch

import io
import pathlib

from kafkaproto import encode_request, frame
from kafkaproto.__main__ import inspect, main
from kafkaproto.messages import MetadataRequest

SAMPLE = pathlib.Path(__file__).resolve().parent.parent / "samples" / "requests.bin"


def test_inspect_the_shipped_sample():
    out = io.StringIO()
    assert inspect(str(SAMPLE), out) == 0
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:3] == ["#1", "ApiVersions", "v3"]
    assert "software=apache-kafka-java/3.9.1" in lines[0]
    assert "[removed in Kafka 4.0]" in lines[4] and "Produce" in lines[4]
    assert lines[-1].startswith("7 frames, 0 undecodable, 2 using versions Kafka 4.0 removed, 0 trailing bytes")


def test_inspect_reports_bad_frames_and_tails(tmp_path):
    path = tmp_path / "s.bin"
    good = encode_request(MetadataRequest(topics=[]), 4, 1, "c")
    path.write_bytes(good + frame(b"\x00\x5f\x00\x00\x00\x00\x00\x01") + b"\x00\x00")
    out = io.StringIO()
    assert inspect(str(path), out) == 1
    text = out.getvalue()
    assert "undecodable: request header at byte 0: api key 95 is not known" in text
    assert "2 frames, 1 undecodable" in text and "2 trailing bytes" in text


def test_main_entry(capsys):
    assert main(["inspect", str(SAMPLE)]) == 0
    assert "7 frames" in capsys.readouterr().out

"""The captured sample traffic (samples/capture/: real clients against
librdkafka's mock cluster and tansu, recorded by the tap as Arrow streams)
through the Arrow decoders: every request and response frame, by API key,
agrees with the object decoders, and the record batches of every Produce
request and Fetch response agree with kafkaproto.records."""

import pathlib

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from kafkaproto import arrow, decode_request, decode_response
from kafkaproto import records as R
from kafkaproto.messages import request_class, response_class
from support.arrow_expected import expected_request, expected_request_header, expected_response

SAMPLES = pathlib.Path(__file__).resolve().parent.parent / "samples" / "capture"
CAPTURES = sorted(SAMPLES.glob("tap-*/*.arrows"))


def read(path):
    with pa.ipc.open_stream(path) as r:
        return r.read_all()


def test_there_are_captures():
    assert len(CAPTURES) >= 2


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.parent.name)
def test_captured_frames_decode_as_objects_do(path):
    table = read(path)
    requests = table.filter(pc.equal(table.column("direction"), "request"))
    responses = table.filter(pc.equal(table.column("direction"), "response"))
    frames = requests.column("frame")
    headers = arrow.request_headers(frames).combine_chunks()
    assert headers.to_pylist() == [expected_request_header(f) for f in frames.to_pylist()]
    assert headers.field("api_key").to_pylist() == requests.column("api_key").to_pylist()
    assert headers.field("correlation_id").to_pylist() == requests.column("correlation_id").to_pylist()
    keys = set(requests.column("api_key").to_pylist())
    assert {0, 3, 18} <= keys
    for key in sorted(keys):
        cls = request_class(key)
        group = requests.filter(pc.equal(requests.column("api_key"), key)).column("frame")
        got = arrow.messages(group, key).combine_chunks().to_pylist()
        assert got == [expected_request(cls, f) for f in group.to_pylist()], cls.NAME
    for key in sorted(set(responses.column("api_key").to_pylist())):
        cls = response_class(key)
        group = responses.filter(pc.equal(responses.column("api_key"), key))
        got = arrow.messages(group.column("frame"), key, "response", group.column("api_version"))
        want = [expected_response(cls, f, v) for f, v in zip(group.column("frame").to_pylist(),
                                                             group.column("api_version").to_pylist())]
        assert got.combine_chunks().to_pylist() == want, cls.NAME


@pytest.mark.parametrize("path", CAPTURES, ids=lambda p: p.parent.name)
def test_captured_record_batches(path):
    table = read(path)
    blobs, topics, parts = [], [], []
    for row in table.to_pylist():
        if row["api_key"] == 0 and row["direction"] == "request":
            _, msg = decode_request(row["frame"])
            for td in msg.topic_data:
                for pd in td.partition_data:
                    if pd.records is not None:
                        blobs.append(bytes(pd.records))
                        topics.append(td.name)
                        parts.append(pd.index)
        elif row["api_key"] == 1 and row["direction"] == "response":
            _, msg = decode_response(row["frame"], 1, row["api_version"])
            for tr in msg.responses:
                for pr in tr.partitions:
                    if pr.records:
                        blobs.append(bytes(pr.records))
                        topics.append(tr.topic)
                        parts.append(pr.partition_index)
    assert blobs
    out = arrow.records(pa.array(blobs), topic=topics, partition=parts)
    assert out.column("error").null_count == out.num_rows
    want = [(i, r.offset, r.key, r.value, [(k, v) for k, v in r.headers])
            for i, blob in enumerate(blobs) for batch in R.decode(blob) for r in batch.records if r.control is None]
    got = [(r["row"], r["offset"], r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"] or []])
           for r in out.to_pylist()]
    assert got == want

"""Writes samples/requests.bin: a small stream of size-prefixed request frames
built with kafkaproto's own encoder (the input of `make demo` until the
traffic report lands).  Run: python tools/make_sample.py"""

import pathlib

from kafkaproto import RequestHeader, Writer, encode_request_header, frame

OUT = pathlib.Path(__file__).resolve().parent.parent / "samples" / "requests.bin"


def api_versions_v3(software, version):
    w = Writer()
    w.write_compact_string(software)
    w.write_compact_string(version)
    w.write_tagged_fields([])
    return w.getvalue()


def metadata_v1(topics):
    w = Writer()
    w.write_array_length(len(topics))
    for t in topics:
        w.write_string(t)
    return w.getvalue()


def main():
    frames = [
        (RequestHeader(18, 3, 1, "billing-app"), 2, api_versions_v3("apache-kafka-java", "3.9.1")),
        (RequestHeader(18, 0, 1, "rdkafka"), 1, b""),
        (RequestHeader(3, 1, 2, "rdkafka"), 1, metadata_v1(["orders", "payments"])),
        (RequestHeader(3, 1, 2, "billing-app"), 1, metadata_v1([])),
        (RequestHeader(18, 3, 3, None), 2, api_versions_v3("kafkaproto", "0.1.0")),
    ]
    data = b"".join(frame(encode_request_header(h, v) + body) for h, v, body in frames)
    OUT.write_bytes(data)
    print(f"wrote {len(frames)} frames, {len(data)} bytes")


if __name__ == "__main__":
    main()

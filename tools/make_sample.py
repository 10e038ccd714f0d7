"""Writes samples/requests.bin: a small stream of size-prefixed request frames
built with kafkaproto's own encoder (the input of `make demo` until the
traffic report lands).  Run: python tools/make_sample.py"""

import pathlib

from kafkaproto import encode_request
from kafkaproto.messages import (
    ApiVersionsRequest,
    FetchRequest,
    FindCoordinatorRequest,
    MetadataRequest,
    ProduceRequest,
)

OUT = pathlib.Path(__file__).resolve().parent.parent / "samples" / "requests.bin"


def main():
    topic = MetadataRequest.MetadataRequestTopic
    produce_topic = ProduceRequest.TopicProduceData
    produce_part = ProduceRequest.PartitionProduceData
    fetch_topic = FetchRequest.FetchTopic
    fetch_part = FetchRequest.FetchPartition
    frames = [
        (ApiVersionsRequest(client_software_name="apache-kafka-java", client_software_version="3.9.1"), 3, "billing"),
        (MetadataRequest(topics=[topic(name="orders"), topic(name="payments")]), 12, "billing"),
        (ApiVersionsRequest(), 0, "legacy-app"),
        (MetadataRequest(topics=[topic(name="orders")]), 1, "legacy-app"),
        (ProduceRequest(acks=-1, timeout_ms=30000, topic_data=[produce_topic(name="orders", partition_data=[
            produce_part(index=0, records=b"")])]), 2, "legacy-app"),
        (FetchRequest(max_wait_ms=500, min_bytes=1, topics=[fetch_topic(topic="orders", partitions=[
            fetch_part(partition=0, fetch_offset=42, partition_max_bytes=1 << 20)])]), 3, "legacy-app"),
        (FindCoordinatorRequest(coordinator_keys=["billing-group"]), 4, "billing"),
    ]
    data = b"".join(encode_request(msg, v, i + 1, client) for i, (msg, v, client) in enumerate(frames))
    OUT.write_bytes(data)
    print(f"wrote {len(frames)} frames, {len(data)} bytes")


if __name__ == "__main__":
    main()

"""Deliberate misuse of kafkaproto's API: mypy must report each line marked
``# E: <text>`` with an error containing that text, and nothing else
(tests/test_source.py).  Never run."""

from __future__ import annotations

from kafkaproto import Reader, Writer, encode_request
from kafkaproto.messages import MetadataRequest, MetadataResponse

MetadataRequest(topic=[])  # E: Unexpected keyword argument "topic" for "MetadataRequest"
MetadataRequest(allow_auto_topic_creation="yes")  # E: incompatible type "str"; expected "bool"
MetadataRequest(None)  # E: Too many positional arguments for "MetadataRequest"
MetadataResponse.MetadataResponseBroker(node_id="1")  # E: "node_id" to "MetadataResponseBroker" has incompatible type

response = MetadataResponse.decode(b"", 12)
count = response.topics[0].partition_count  # E: "MetadataResponseTopic" has no attribute "partition_count"
port: str = response.brokers[0].port  # E: (expression has type "int", variable has type "str")
response.topics = [MetadataRequest.MetadataRequestTopic()]  # E: expected "MetadataResponseTopic"
response.cluster_id.upper()  # E: Item "None" of "str | None" has no attribute "upper"
response.encode("12")  # E: Argument 1 to "encode" of "MetadataResponse" has incompatible type "str"

Reader(b"").read_string(True).upper()  # E: Item "None" of "str | None" has no attribute "upper"
Writer().write_int32("7")  # E: Argument 1 to "write_int32" of "Writer" has incompatible type "str"
encode_request(b"frame", 3, 1)  # E: Argument 1 to "encode_request" has incompatible type "bytes"; expected "Message"

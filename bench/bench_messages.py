"""Messages to objects and back, against kio and kafka-python in the same run."""

import io
import uuid

import pytest

from kafkaproto.messages import ApiVersionsResponse, MetadataResponse


def metadata_v12():
    M = MetadataResponse
    return M(
        brokers=[M.MetadataResponseBroker(node_id=i, host=f"broker-{i}.kafka.internal", port=9092, rack=f"rack-{i}")
                 for i in range(3)],
        cluster_id="bench-cluster", controller_id=1,
        topics=[M.MetadataResponseTopic(
            name=f"topic-{t:03d}", topic_id=uuid.UUID(int=t + 1),
            partitions=[M.MetadataResponsePartition(partition_index=p, leader_id=p % 3, leader_epoch=12,
                                                    replica_nodes=[0, 1, 2], isr_nodes=[0, 1, 2], offline_replicas=[])
                        for p in range(50)],
            topic_authorized_operations=-2147483648) for t in range(100)])


def api_versions_v3():
    R = ApiVersionsResponse
    return R(api_keys=[R.ApiVersion(api_key=k, min_version=0, max_version=k % 13) for k in range(90)])


@pytest.fixture(scope="module")
def metadata_bytes():
    data = metadata_v12().encode(12)
    assert 200_000 < len(data) < 230_000
    return data


@pytest.fixture(scope="module")
def api_versions_bytes():
    return api_versions_v3().encode(3)


def _kio(module, name):
    mod = pytest.importorskip(module)
    from kio.serial import entity_reader, entity_writer

    cls = getattr(mod, name)
    return entity_reader(cls), entity_writer(cls)


# MetadataResponse v12: 100 topics x 50 partitions x 3 replicas -------------------

def test_metadata_decode_kafkaproto(benchmark, metadata_bytes):
    benchmark.group = "MetadataResponse v12 decode (100x50x3, 213 kB)"
    benchmark.extra_info["impl"] = "kafkaproto"
    msg = benchmark(MetadataResponse.decode, metadata_bytes, 12)
    assert len(msg.topics) == 100


def test_metadata_decode_floor(benchmark, metadata_bytes, floor_mod):
    # the same tree built from values already parsed: what any decoder to these objects pays
    tree = MetadataResponse.decode(metadata_bytes, 12)
    prog = floor_mod.Program(tree)
    benchmark.group = "MetadataResponse v12 decode (100x50x3, 213 kB)"
    benchmark.extra_info["impl"] = "floor"
    benchmark.extra_info["objects"] = prog.objects
    assert benchmark(prog.build) == tree


def test_metadata_decode_kio(benchmark, metadata_bytes):
    read, _ = _kio("kio.schema.metadata.v12.response", "MetadataResponse")
    mv = memoryview(metadata_bytes)
    benchmark.group = "MetadataResponse v12 decode (100x50x3, 213 kB)"
    benchmark.extra_info["impl"] = "kio 0.6.5"
    msg, _ = benchmark(read, mv, 0)
    assert len(msg.topics) == 100


def test_metadata_decode_kafka_python(benchmark, metadata_bytes):
    from kafka.protocol.metadata import MetadataResponse as KP

    benchmark.group = "MetadataResponse v12 decode (100x50x3, 213 kB)"
    benchmark.extra_info["impl"] = "kafka-python"
    msg = benchmark(lambda: KP[12].decode(io.BytesIO(metadata_bytes)))
    assert len(msg.topics) == 100


def test_metadata_encode_kafkaproto(benchmark, metadata_bytes):
    msg = MetadataResponse.decode(metadata_bytes, 12)
    benchmark.group = "MetadataResponse v12 encode"
    benchmark.extra_info["impl"] = "kafkaproto"
    assert benchmark(msg.encode, 12) == metadata_bytes


def test_metadata_encode_kio(benchmark, metadata_bytes):
    read, write = _kio("kio.schema.metadata.v12.response", "MetadataResponse")
    obj, _ = read(memoryview(metadata_bytes), 0)

    def run():
        buf = io.BytesIO()
        write(buf, obj)
        return buf.getvalue()

    benchmark.group = "MetadataResponse v12 encode"
    benchmark.extra_info["impl"] = "kio 0.6.5"
    assert benchmark(run) == metadata_bytes


# ApiVersionsResponse v3, 90 keys ----------------------------------------------

def test_api_versions_decode_kafkaproto(benchmark, api_versions_bytes):
    benchmark.group = "ApiVersionsResponse v3 decode (90 keys)"
    benchmark.extra_info["impl"] = "kafkaproto"
    assert len(benchmark(ApiVersionsResponse.decode, api_versions_bytes, 3).api_keys) == 90


def test_api_versions_decode_floor(benchmark, api_versions_bytes, floor_mod):
    tree = ApiVersionsResponse.decode(api_versions_bytes, 3)
    prog = floor_mod.Program(tree)
    benchmark.group = "ApiVersionsResponse v3 decode (90 keys)"
    benchmark.extra_info["impl"] = "floor"
    benchmark.extra_info["objects"] = prog.objects
    assert benchmark(prog.build) == tree


def test_api_versions_decode_kio(benchmark, api_versions_bytes):
    read, _ = _kio("kio.schema.api_versions.v3.response", "ApiVersionsResponse")
    mv = memoryview(api_versions_bytes)
    benchmark.group = "ApiVersionsResponse v3 decode (90 keys)"
    benchmark.extra_info["impl"] = "kio 0.6.5"
    assert len(benchmark(read, mv, 0)[0].api_keys) == 90

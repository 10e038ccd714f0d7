"""Several threads decoding at once get what one thread gets (issue 7).

The threads start together (a barrier) and interleave the compiled core, the
pure twin and the public API on messages, frames, varints and record batches
(every codec); plans are built concurrently too (fresh plan
caches), and the garbage collector, which Message.decode pauses, is back on
when they are done.
"""

import gc
import random
import threading
from concurrent.futures import ThreadPoolExecutor

from kafkaproto import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    frame_offsets,
    records,
    split_frames,
)
from kafkaproto.messages import APIS, request_class, response_class
from support.fuzz_targets import IMPLS, Impl, outcome
from support.message_values import random_message
from support.outcomes import canon
from support.records_util import batch_tuple

THREADS = 6


def _frames():
    rng = random.Random(7)
    requests, responses = [], []
    for key in sorted(APIS):
        for cls, out, encode in ((request_class(key), requests, encode_request),
                                 (response_class(key), responses, encode_response)):
            v = cls.HIGHEST_VERSION
            msg = random_message(cls, v, rng)
            frame = encode(msg, v, 7, "t") if encode is encode_request else encode(msg, v, 7)
            out.append((key, v, frame[4:]))
    # damaged copies: errors must come out the same too
    damaged = [(k, v, f[: len(f) // 2]) for k, v, f in requests[::3]]
    return requests + damaged, responses + [(k, v, f[:-3]) for k, v, f in responses[::3]]


REQUESTS, RESPONSES = _frames()
_RECORDS = [(b"k%d" % i, b"v" * i, [("h", b"x")], 1_700_000_000_000 + i) for i in range(50)]
BATCHES = [records.encode(_RECORDS, codec=c) for c in records.CODEC_NAMES]
BATCHES += [b[: len(b) // 2] for b in BATCHES] + [records.encode([r[:2] for r in _RECORDS], magic=1, codec="gzip")]
STREAM = b"".join(len(f).to_bytes(4, "big") + f for _, _, f in REQUESTS * 20)


def work(impls):
    out = []
    for _, _, frame in REQUESTS:
        out.append(outcome(lambda: decode_request(frame)))
    for key, v, frame in RESPONSES:
        out.append(outcome(lambda: decode_response(frame, key, v)))
        for impl in impls:
            cls = response_class(key)
            out.append(outcome(lambda: impl.decode(cls, frame, v, 4 if len(frame) >= 4 else 0)))
    for impl in impls:
        starts, sizes, consumed = impl.codec.frame_offsets(STREAM)
        out.append((canon(starts), canon(sizes), consumed))
        out.append(outcome(lambda: impl.codec.decode_varlongs(STREAM[:20000])))
        out.append(outcome(lambda: impl.codec.decode_uvarints(bytes(range(128)) * 200)))
    out.append(canon(split_frames(STREAM)))
    for impl in impls:
        for blob in BATCHES:
            out.append(outcome(lambda: [batch_tuple(b) for b in impl.records.decode_record_batches(
                blob, True, 1 << 20, True)]))
    return out


def test_threads_decode_like_one_thread():
    single = work(IMPLS)
    assert gc.isenabled()
    barrier = threading.Barrier(THREADS)

    def run(i):
        # each thread builds its own plans while the others decode
        impls = [Impl(f"{impl.name}-{i}", impl.mods) for impl in IMPLS]
        barrier.wait()
        return work(impls)

    with ThreadPoolExecutor(THREADS) as pool:
        results = list(pool.map(run, range(THREADS)))
    for i, result in enumerate(results):
        assert result == single, i
    assert gc.isenabled(), "a thread left the collector paused"


def test_frame_offsets_in_threads_on_one_buffer():
    # the GIL-free scan of one shared buffer from every thread at once
    expected = frame_offsets(STREAM)
    barrier = threading.Barrier(THREADS)

    def run(_):
        barrier.wait()
        return [frame_offsets(STREAM) for _ in range(20)]

    with ThreadPoolExecutor(THREADS) as pool:
        for batch in pool.map(run, range(THREADS)):
            for starts, sizes, consumed in batch:
                assert consumed == expected[2] == len(STREAM)
                assert (starts == expected[0]).all() and (sizes == expected[1]).all()

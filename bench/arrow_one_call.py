"""arrow.request_headers / arrow.messages as one compiled call against the per-column
path they replaced (the loop's column tree, then one pyarrow array per column built in
Python: still what the twins do), paired in one process, on small batches (real
traffic: a capture's frame batch gives a few to a few hundred frames per api key).

    .venv/bin/python bench/arrow_one_call.py
"""

import time

import numpy as np
import pyarrow as pa

from kafkaproto import arrow, encode_request, encode_response
from kafkaproto.arrow import _HEADERS, _MESSAGES, _build
from kafkaproto.messages import request_class, response_class

MR = request_class(3)
HB = response_class(12)


def cases(n):
    req = pa.array([encode_request(MR(topics=None), 12, i, "client-1")[4:] for i in range(n)], pa.large_binary())
    resp = pa.array([encode_response(HB(), 4, i)[4:] for i in range(n)], pa.large_binary())
    vers = _build._int_column(4, n, "api_version")
    return {
        "request_headers": (lambda: arrow.request_headers(req), lambda: _build._request_headers(_HEADERS, req, 1)),
        "messages (Metadata requests)": (lambda: arrow.messages(req, 3),
                                         lambda: _build._message_column(_MESSAGES, req, 1, MR)),
        "messages (Heartbeat responses v4)": (lambda: arrow.messages(resp, 12, "response", 4),
                                              lambda: _build._message_column(_MESSAGES, resp, 1, HB, *vers)),
    }


def main():
    for n in (8, 64, 1000):
        for name, (new, old) in cases(n).items():
            assert new().equals(old())
            rat, tn, to = [], [], []
            reps = max(20, 20000 // n)
            for _ in range(15):
                t0 = time.process_time()
                for _ in range(reps):
                    new()
                t1 = time.process_time()
                for _ in range(reps):
                    old()
                t2 = time.process_time()
                tn.append((t1 - t0) / reps)
                to.append((t2 - t1) / reps)
                rat.append((t1 - t0) / (t2 - t1))
            print(f"{name:36s} n={n:5d}: one call {np.median(tn) * 1e6:7.1f} us, "
                  f"per-column path {np.median(to) * 1e6:7.1f} us, ratio {np.median(rat):.2f}")


if __name__ == "__main__":
    main()

"""Keep a librdkafka mock cluster alive for other processes.

librdkafka's mock cluster exists only as long as the client handle that
created it, so this script creates one (a Producer configured with
``test.mock.num.brokers``), prints one line

    BOOTSTRAP 127.0.0.1:PORT[,127.0.0.1:PORT...]

on stdout and then waits until its stdin is closed (or ``--max-seconds``
pass), which is how ``brokers.MockCluster`` stops it.  If confluent_kafka is
missing it prints ``UNAVAILABLE ...`` instead and exits with code 3.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brokers", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=3600.0,
                    help="exit after this long even if stdin stays open")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="extra librdkafka property for the handle owning the cluster")
    args = ap.parse_args(argv)

    try:
        import confluent_kafka
    except ImportError as exc:
        print(f"UNAVAILABLE confluent_kafka cannot be imported: {exc}", flush=True)
        return 3

    conf = {"test.mock.num.brokers": args.brokers, "client.id": "kafkaproto-mock-owner"}
    for item in args.conf:
        key, sep, value = item.partition("=")
        if not sep:
            ap.error(f"--conf needs KEY=VALUE, got {item!r}")
        conf[key] = value
    owner = confluent_kafka.Producer(conf)

    deadline = time.monotonic() + 30.0
    brokers = {}
    while time.monotonic() < deadline:
        md = owner.list_topics(timeout=5.0)
        brokers = md.brokers
        if len(brokers) >= args.brokers:
            break
        time.sleep(0.1)
    if len(brokers) < args.brokers:
        print(f"ERROR mock cluster reported {len(brokers)} of {args.brokers} brokers", flush=True)
        return 2
    addrs = ",".join(f"{b.host}:{b.port}" for _, b in sorted(brokers.items()))
    print(f"BOOTSTRAP {addrs}", flush=True)
    print(f"mock cluster {md.cluster_id} up at {addrs} (librdkafka {confluent_kafka.libversion()[0]})",
          file=sys.stderr, flush=True)

    stdin_closed = threading.Event()

    def drain_stdin() -> None:
        try:
            while sys.stdin.buffer.read1(4096):
                pass
        except (OSError, ValueError):
            pass
        stdin_closed.set()

    threading.Thread(target=drain_stdin, daemon=True).start()
    end = time.monotonic() + args.max_seconds
    while not stdin_closed.is_set() and time.monotonic() < end:
        owner.poll(0)
        stdin_closed.wait(0.5)
    print("mock cluster shutting down", file=sys.stderr, flush=True)
    owner.flush(1.0)
    del owner
    return 0


if __name__ == "__main__":
    sys.exit(main())

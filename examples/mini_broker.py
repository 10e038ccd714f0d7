"""A single-node Kafka broker in memory: kafkaproto's mock cluster with one broker.

    python examples/mini_broker.py --listen 127.0.0.1:9092 --partitions 3 [--log-append-time]

It prints ``listening on HOST:PORT`` and serves until interrupted.  The
broker is :class:`kafkaproto.mock.MockCluster` (``kafkaproto mock`` on the
command line runs several); its source shows kafkaproto's server API at
work: one :class:`~kafkaproto.server.ServerConnection` per client
connection turns bytes into decoded requests, each is handled in a task of
its own and answered in request order (``respond()``), produced batches are
stored as the producer wrote them (``records.assign_offsets``) and served
back by reference (``fetch_partition``).
"""

from __future__ import annotations

import argparse
import signal
import threading

from kafkaproto.mock import MockCluster


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:9092", help="HOST:PORT (port 0: any free port)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of auto-created topics")
    parser.add_argument("--log-append-time", action="store_true", help="stamp batches with the broker's clock")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    configs = {"log.message.timestamp.type": "LogAppendTime"} if args.log_append_time else None
    cluster = MockCluster(brokers=1, first_node_id=0, partitions=args.partitions, host=host,
                          first_port=int(port) or None, broker_configs=configs, record=False).start()
    print(f"listening on {cluster.bootstrap}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()

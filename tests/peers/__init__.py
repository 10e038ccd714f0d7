"""Real Kafka peers on loopback for the kafkaproto test suite.

Nothing in this package imports kafkaproto: it only starts brokers
(tansu, librdkafka's mock cluster), a byte-recording TCP proxy, and drives
real third-party clients (confluent-kafka, kafka-python, aiokafka, kcat).

Set-up on a fresh machine: ``PYTHON=path/to/python tools/peers/install_peers.sh``.
"""

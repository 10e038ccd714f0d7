"""What a test asks the mock to do wrong, and what it records."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..messages import APIS, api_name

_KEYS = {request[:-len("Request")]: key for key, (request, _) in APIS.items()}


def api_key_of(api) -> int | None:
    """"Produce", "ProduceRequest", 0 → 0; None → None."""
    if api is None or isinstance(api, int):
        return api
    name = api[:-len("Request")] if api.endswith("Request") else api
    try:
        return _KEYS[name]
    except KeyError:
        raise ValueError(f"no Kafka api named {api!r}") from None


@dataclass
class Exchange:
    """One request a broker of the mock received, and its answer.

    ``request`` and ``response`` are message objects (``response`` None
    while unanswered, for Produce with acks=0, or when the mock dropped the
    connection instead); ``error`` says why a request was not answered.
    """

    broker: int
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    request: object
    response: object = None
    error: str | None = None
    time: float = field(default_factory=time.time)

    @property
    def api(self) -> str:
        return api_name(self.api_key)

    def __repr__(self) -> str:
        answered = "answered" if self.response is not None else self.error or "unanswered"
        return (f"<Exchange broker {self.broker} {self.api} v{self.api_version} #{self.correlation_id} "
                f"client {self.client_id!r}: {answered}>")


@dataclass
class Injection:
    """An error code for the next ``count`` matching requests (None: every one)."""

    api_key: int | None
    error_code: int
    count: int | None = 1
    broker: int | None = None
    topic: str | None = None
    partition: int | None = None

    def matches(self, api_key: int, broker: int) -> bool:
        return ((self.api_key is None or self.api_key == api_key) and (self.broker is None or self.broker == broker)
                and (self.count is None or self.count > 0))

    @property
    def scoped(self) -> bool:
        return self.topic is not None or self.partition is not None

    def covers(self, topic: str, partition: int | None) -> bool:
        return ((self.topic is None or self.topic == topic)
                and (self.partition is None or partition is None or self.partition == partition))

    def spend(self) -> None:
        if self.count is not None:
            self.count -= 1


@dataclass
class Latency:
    api_key: int | None
    broker: int | None
    ms: float

    def matches(self, api_key: int, broker: int) -> bool:
        return (self.api_key is None or self.api_key == api_key) and (self.broker is None or self.broker == broker)


@dataclass
class Disconnect:
    """Instead of answering the next ``count`` matching requests: "close" the
    connection, "half_close" it (the client reads end of stream, its writes
    still go through), or "drop" the request (no answer: the client times
    out)."""

    api_key: int | None
    mode: str
    count: int | None = 1
    broker: int | None = None

    def matches(self, api_key: int, broker: int) -> bool:
        return ((self.api_key is None or self.api_key == api_key) and (self.broker is None or self.broker == broker)
                and (self.count is None or self.count > 0))


class Faults:
    """The mock's fault plan: injected errors, latencies and disconnections."""

    def __init__(self):
        self.injections: list[Injection] = []
        self.latencies: list[Latency] = []
        self.disconnects: list[Disconnect] = []

    def clear(self) -> None:
        self.injections.clear()
        self.latencies.clear()
        self.disconnects.clear()

    def latency(self, api_key: int, broker: int) -> float:
        return sum(x.ms for x in self.latencies if x.matches(api_key, broker)) / 1000

    def disconnect(self, api_key: int, broker: int) -> str | None:
        for d in self.disconnects:
            if d.matches(api_key, broker):
                if d.count is not None:
                    d.count -= 1
                return d.mode
        return None

    def take(self, api_key: int, broker: int) -> tuple[int, list[Injection]]:
        """The injections for one request: (an error code for the whole of it,
        0 for none; those scoped to topics or partitions, which the handler
        applies where they match and spends once)."""
        whole, scoped = 0, []
        for inj in self.injections:
            if not inj.matches(api_key, broker):
                continue
            if inj.scoped:
                scoped.append(inj)
            elif not whole:
                whole = inj.error_code
                inj.spend()
        self.injections = [i for i in self.injections if i.count is None or i.count > 0]
        return whole, scoped

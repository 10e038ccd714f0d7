"""A Kafka proxy that logs one line per request/response pair.

    python examples/logging_proxy.py --upstream 127.0.0.1:9092 [--listen 127.0.0.1:19092]

Point a client at the address it prints (``listening on HOST:PORT``) and
every exchange shows up as it completes::

    Produce(0) v9 correlation_id=7 client_id='rdkafka' broker=10.0.0.7:9092 latency_ms=1.84 errors=-
    Fetch(1) v12 correlation_id=9 client_id='rdkafka' broker=10.0.0.8:9092 latency_ms=101.02 errors=-

What it shows of kafkaproto's public API:

- :class:`kafkaproto.proxy.ProxyConnection` does the protocol work of the
  middle of a connection without any I/O: it cuts both byte streams into
  frames, pairs each response with its request by correlation id and decodes
  both.  The proxy only reads sockets, feeds it, and writes what it hands back.
- Frames are forwarded whole and unchanged (``ev.parts()`` with
  :func:`kafkaproto.net.write_parts`), except the three responses that name
  brokers (Metadata, FindCoordinator, DescribeCluster): each broker address
  in them is replaced with a listener of this proxy
  (:func:`kafkaproto.proxy.rewrite_addresses`), opened the first time that
  broker is named, and the response is re-encoded (``ev.encode(msg)``).  The
  re-encoding is faithful: only the addresses differ from the broker's bytes.
  Clients therefore stay behind the proxy for every broker of a cluster.
- Bytes that stop framing (TLS, not Kafka) come back as ``Unframed`` events
  and are forwarded as they are.

The listen host is also the host written into rewritten responses, so
listen on an address clients can reach (not 0.0.0.0).  SIGINT or SIGTERM
stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time

from kafkaproto import UnknownApiError
from kafkaproto.error_codes import error_name
from kafkaproto.messages import api_name
from kafkaproto.net import write_parts
from kafkaproto.proxy import ProxyConnection, Unframed, rewrite_addresses

ADDRESS_APIS = (3, 10, 60)  # Metadata, FindCoordinator, DescribeCluster: their responses name brokers


def say(text: str) -> None:
    print(text, flush=True)


def error_names(message) -> str:
    """Every non-zero ``*error_code`` of a decoded response, by name ("-": none)."""
    found, todo = set(), [message.to_dict()]
    while todo:
        item = todo.pop()
        if isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, dict):
            for name, value in item.items():
                if name.endswith("error_code") and value:
                    found.add(error_name(value))
                elif isinstance(value, (list, dict)):
                    todo.append(value)
    return ",".join(sorted(found)) or "-"


def describe(req) -> str:
    try:
        name = api_name(req.api_key)
    except UnknownApiError:  # a key without a schema, or a frame too short to hold one
        name = "?"
    return f"{name}({req.api_key}) v{req.api_version} correlation_id={req.correlation_id} client_id={req.client_id!r}"


class LoggingProxy:
    def __init__(self, host: str) -> None:
        self.host = host  # listened on, and written into rewritten responses
        self.routes: dict[tuple[str, int], asyncio.Future] = {}  # upstream broker -> our port (once listening)
        self.servers: list[asyncio.Server] = []
        self.connections: set[asyncio.Task] = set()

    def route(self, upstream: tuple[str, int], port: int = 0) -> asyncio.Future:
        """Our port for ``upstream``; the first call opens its listener."""
        if upstream not in self.routes:
            self.routes[upstream] = asyncio.ensure_future(self._listen(upstream, port))
        return self.routes[upstream]

    async def _listen(self, upstream: tuple[str, int], port: int) -> int:
        async def accept(reader, writer):
            task = asyncio.current_task()
            self.connections.add(task)
            try:
                await self.connection(reader, writer, upstream)
            except asyncio.CancelledError:
                pass  # stopping; asyncio before 3.13 reports a cancelled handler as an error
            finally:
                writer.close()
                self.connections.discard(task)

        server = await asyncio.start_server(accept, self.host, port)
        self.servers.append(server)
        port = server.sockets[0].getsockname()[1]
        say(f"listening on {self.host}:{port} for {upstream[0]}:{upstream[1]}")
        return port

    async def connection(self, creader, cwriter, upstream) -> None:
        try:
            sreader, swriter = await asyncio.open_connection(*upstream)
        except OSError as exc:
            say(f"cannot reach {upstream[0]}:{upstream[1]}: {exc}")
            return
        middle = ProxyConnection()  # decodes every request and response: the log names their errors
        answered = asyncio.Event()  # set as responses come: room for the requests held back
        pumps = [asyncio.ensure_future(self.requests(creader, swriter, middle, answered)),
                 asyncio.ensure_future(self.responses(sreader, cwriter, middle, upstream, answered))]
        try:
            # either side closing ends the connection: nobody is left to read the other
            done, _ = await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
            for pump in done:
                failure = pump.exception()
                if failure is not None and not isinstance(failure, ConnectionError):  # a reset is a way to close
                    say(f"connection to {upstream[0]}:{upstream[1]} failed: {failure!r}")
        finally:
            for pump in pumps:
                pump.cancel()
            swriter.close()
            if len(middle.pending):  # a consumer leaving mid long-poll Fetch, typically
                oldest = describe(middle.pending.oldest()[1])
                say(f"connection to {upstream[0]}:{upstream[1]} closed, {len(middle.pending)} unanswered: {oldest}")

    async def requests(self, reader, writer, middle: ProxyConnection, answered: asyncio.Event) -> None:
        while True:
            if middle.paused():  # max_outstanding requests wait for responses: read no more until some come
                events = middle.from_client(b"")
                if not events:
                    answered.clear()
                    await answered.wait()
                    continue
            elif chunk := await reader.read(1 << 16):
                events = middle.from_client(chunk)
            else:
                break
            parts = []
            for ev in events:
                if isinstance(ev, Unframed):
                    if ev.error is not None:
                        say(f"client bytes stopped framing ({ev.error}): forwarding them raw")
                else:
                    ev.user = time.perf_counter()
                    if not ev.expects_response:
                        say(f"{describe(ev)} no response (acks=0)")
                    if ev.error is not None:
                        say(f"{describe(ev)} request decode_error={ev.error}")
                parts += ev.parts()
            await write_parts(writer, parts)

    async def responses(self, reader, writer, middle: ProxyConnection, upstream: tuple[str, int],
                        answered: asyncio.Event) -> None:
        while chunk := await reader.read(1 << 16):
            parts = []
            for ev in middle.from_broker(chunk):
                if isinstance(ev, Unframed):
                    if ev.error is not None:
                        say(f"broker bytes stopped framing ({ev.error}): forwarding them raw")
                elif ev.request is None:
                    say(f"unpaired response correlation_id={ev.correlation_id}")
                else:
                    ms = (time.perf_counter() - ev.request.user) * 1000
                    errors = f"decode_error={ev.error}" if ev.message is None else f"errors={error_names(ev.message)}"
                    say(f"{describe(ev.request)} broker={upstream[0]}:{upstream[1]} latency_ms={ms:.2f} {errors}")
                    if ev.api_key in ADDRESS_APIS and ev.message is not None:
                        parts += await self.rewritten(ev)
                        continue
                parts += ev.parts()
            await write_parts(writer, parts)
            answered.set()

    async def rewritten(self, ev) -> list:
        named: list[tuple[str, int]] = []
        rewrite_addresses(ev.message, ev.api_key, lambda host, port: named.append((host, port)))  # only looks
        ours = {broker: await self.route(broker) for broker in named}
        if rewrite_addresses(ev.message, ev.api_key, lambda host, port: (self.host, ours[host, port])):
            return ev.encode(ev.message)
        return ev.parts()

    async def close(self) -> None:
        for server in self.servers:
            server.close()
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)
        for server in self.servers:
            await server.wait_closed()


def host_port(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]") or "127.0.0.1", int(port)


async def main(upstream: tuple[str, int], listen: tuple[str, int]) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):  # Windows: Ctrl-C raises KeyboardInterrupt instead
            loop.add_signal_handler(sig, stop.set)
    proxy = LoggingProxy(listen[0])
    await proxy.route(upstream, listen[1])  # the bootstrap listener first: its line comes first
    await stop.wait()
    await proxy.close()
    say("stopped")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--upstream", required=True, type=host_port, help="the bootstrap broker, HOST:PORT")
    parser.add_argument("--listen", default="127.0.0.1:0", type=host_port, help="HOST:PORT (port 0: any free one)")
    args = parser.parse_args()
    asyncio.run(main(args.upstream, args.listen))

"""The tap's command-line arguments and defaults, apart from the tap itself
(kafkaproto.capture.tools.tap) so that the command line starts without importing
it (asyncio, the proxy, the frame tables) for the other commands."""

from __future__ import annotations

#: memory the frames of all of a tap's connections may hold
DEFAULT_MEMORY_BUDGET = 256 << 20
#: listeners the tap opens at most, the bootstrap's included (each takes a
#: file descriptor; a process has 1,024 by default, and each connection takes two)
DEFAULT_MAX_LISTENERS = 256


def _hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def add_tap_arguments(p) -> None:
    """The ``kafkaproto tap`` arguments, added to the argparse parser ``p``."""
    p.add_argument("--listen", required=True, type=_hostport, help="HOST:PORT for clients (PORT 0: any)")
    p.add_argument("--upstream", required=True, type=_hostport, help="the bootstrap broker, HOST:PORT")
    p.add_argument("--out", required=True, help="folder for the recorded frames")
    p.add_argument("--format", choices=("arrow", "parquet"), default="arrow",
                   help="Arrow IPC stream files (default) or Parquet")
    p.add_argument("--roll-mb", type=float, default=64.0, help="start a new file past this size (MB)")
    p.add_argument("--advertise-host", default=None, help="host written into rewritten broker addresses")
    p.add_argument("--no-rewrite", action="store_true", help="forward Metadata/FindCoordinator/DescribeCluster "
                   "responses unchanged (single broker advertising the tap itself)")
    p.add_argument("--memory-mb", type=float, default=DEFAULT_MEMORY_BUDGET / (1 << 20),
                   help="memory the frames of all connections may hold (MB, default 256); a frame over a quarter "
                        "of it, or arriving when it is used up, is forwarded in pieces and recorded by its head")
    p.add_argument("--max-listeners", type=int, default=DEFAULT_MAX_LISTENERS,
                   help="listeners opened at most, the bootstrap's included (default 256); a broker named past them "
                        "keeps its own address in the responses forwarded")
    p.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    p.add_argument("--report", default=None, metavar="OUT",
                   help="keep the live report of the frames recorded in OUT while the tap runs (as report --follow: "
                        "the page, report.json and the connections table, and the terminal view)")
    p.add_argument("--refresh", type=float, default=2.0, help="--report: seconds between refreshes (default 2)")
    p.add_argument("--window", type=float, default=300.0,
                   help="--report: seconds of traffic the figures cover (default 300; 0: all since the start)")

"""Writing encoded frames to the network without joining them first.

:func:`kafkaproto.protocol.encode_request_parts` (and the sans-IO
connections) give a frame as a short list of buffers, records blobs among
them as the caller's own objects.  These helpers write such a list with one
gathering call where the platform has one, so the records are never copied
into a frame in user space.
"""

from __future__ import annotations

import os

__all__ = ["send_parts", "write_parts"]

try:
    _IOV_MAX = min(os.sysconf("SC_IOV_MAX"), 1024)
except (AttributeError, ValueError, OSError):  # not POSIX
    _IOV_MAX = 1024


def _views(parts) -> list:
    out = []
    for p in parts:
        mv = memoryview(p)
        if mv.ndim != 1 or mv.itemsize != 1:
            mv = mv.cast("B")
        if len(mv):
            out.append(mv)
    return out


def send_parts(sock, parts) -> int:
    """Send every byte of ``parts`` (buffers, in order) on a blocking socket → bytes sent.

    Uses ``sock.sendmsg`` (one system call for up to IOV_MAX buffers) and
    carries on after a partial write from where it stopped; where
    ``sendmsg`` does not exist (Windows) each part goes with ``sendall``.
    A socket timeout applies to each call, as with ``sendall``.
    """
    views = _views(parts)
    total = sum(len(v) for v in views)
    if not hasattr(sock, "sendmsg"):
        for v in views:
            sock.sendall(v)
        return total
    i = 0
    while i < len(views):
        n = sock.sendmsg(views[i:i + _IOV_MAX])
        while n:
            head = views[i]
            if n >= len(head):
                n -= len(head)
                i += 1
            else:
                views[i] = head[n:]
                n = 0
    return total


async def write_parts(writer, parts) -> None:
    """Write ``parts`` to an asyncio ``StreamWriter`` (or anything with
    ``writelines`` and ``drain``) and wait until it has room again.

    ``writelines`` hands the buffers to the transport as they are; since
    Python 3.12 the selector transports send them with ``sendmsg``, and keep
    a reference to each until it is sent: do not change a buffer passed
    here, even after this returns.
    """
    writer.writelines(_views(parts))
    transport = getattr(writer, "transport", None)
    if transport is not None:
        _pause_if_full(transport)
    await writer.drain()


def _pause_if_full(transport) -> None:
    # The selector transport's writelines of Python 3.12 and 3.13 never paused
    # the protocol (CPython gh-127655, fixed in later patch releases), so
    # drain() did not wait however much was buffered.  Setting the same
    # limits again runs the transport's own pause check.
    try:
        low, high = transport.get_write_buffer_limits()
        if transport.get_write_buffer_size() > high:
            transport.set_write_buffer_limits(high, low)
    except (AttributeError, NotImplementedError):  # a transport without flow control
        pass

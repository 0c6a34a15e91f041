"""The spout host's wire, both ends of it: msgpack frames with a 4-byte length, and a connection.

Shared by the workers (``read/host_client.py``, which finds or starts a host and
asks it for chunks) and the host process (``spouthost/spout_host.py``, which
answers): each sends whole frames (``encode_frame``) and reads whole frames
(``decode_frames``) through a ``Conn``.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Any

import msgpack

__all__ = ["Conn", "decode_frames", "encode_frame"]

_HEADER = struct.Struct(">I")


def encode_frame(obj: Any) -> bytes:
    """One message: its msgpack length (4 bytes, big-endian), then the msgpack."""
    body = msgpack.packb(obj, use_bin_type=True, default=repr)
    return _HEADER.pack(len(body)) + body


def decode_frames(buf: bytes) -> tuple[list[Any], bytes]:
    """The whole messages at the start of ``buf``, and the bytes after them."""
    out, at = [], 0
    while len(buf) - at >= _HEADER.size:
        (size,) = _HEADER.unpack_from(buf, at)
        if len(buf) - at - _HEADER.size < size:
            break
        out.append(msgpack.unpackb(buf[at + _HEADER.size:at + _HEADER.size + size], raw=False,
                                   strict_map_key=False))
        at += _HEADER.size + size
    return out, buf[at:]


class Conn:
    """One end of a host connection: whole frames out, whole frames in."""

    def __init__(self, sock: socket.socket):
        self.sock, self.buf, self.queue = sock, b"", []  # type: ignore[var-annotated]

    def send(self, obj: Any) -> None:
        self.sock.sendall(encode_frame(obj))

    def recv(self, timeout: float | None = None) -> Any:
        """The next message; None at end of stream or after ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        while not self.queue:
            try:
                data = self.sock.recv(1 << 20)
            except (TimeoutError, ConnectionError, OSError):
                return None
            if not data:
                return None
            got, self.buf = decode_frames(self.buf + data)
            self.queue += got
        return self.queue.pop(0)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

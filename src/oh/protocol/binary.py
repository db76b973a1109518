"""Binary observation frames: file content as raw bytes instead of JSON-escaped text (opt-in).

An agent that sends ``read`` with ``args.encoding: "binary"`` gets the observation as ONE binary
WebSocket frame (docs/protocol.md, "Binary read"):

    uint32 big-endian N | N bytes: the observation as UTF-8 JSON, without "content" | the file's bytes

Everything else stays JSON text frames. One self-contained frame (rather than a JSON frame followed
by a binary one) because several observations may be in flight on one connection: nothing can slip
between a header and its bytes, and a receiver never has to remember a half-read observation.
"""

from __future__ import annotations

import struct
from typing import Any, TypeGuard

from .errors import ErrorId, ProtocolError
from .events import decode, encode

MAX_HEADER = 64 * 1024  # the JSON part: an observation's metadata, never the content
_LEN = struct.Struct(">I")


def is_binary(obs: dict[str, Any]) -> bool:
    """True when ``obs["content"]`` holds bytes (a binary read): it must go out with ``pack``."""
    return isinstance(obs.get("content"), (bytes, bytearray, memoryview))


def is_binary_frame(message: str | bytes) -> TypeGuard[bytes]:
    """A binary observation frame, as opposed to JSON (which peers may also send as binary
    frames): its header length is below 2**24, so its first byte is always 0, never ``{``."""
    return isinstance(message, (bytes, bytearray)) and message[:1] == b"\x00"


def pack(obs: dict[str, Any]) -> bytes:
    """The binary frame for an observation whose ``content`` is bytes (``obs`` is not modified)."""
    content = obs["content"]
    header = encode({k: v for k, v in obs.items() if k != "content"})
    if len(header) > MAX_HEADER:
        raise ValueError(f"binary frame header of {len(header)} bytes (limit {MAX_HEADER})")
    # One copy of the content: websockets would join fragments on the receiving side anyway.
    return b"".join((_LEN.pack(len(header)), header, content))


def parts(obs: dict[str, Any]) -> list[bytes | bytearray | memoryview]:
    """The same message as ``pack``, as two fragments to send as one fragmented message
    (``send([prefix, content])``): the 4-byte length + header, then the content untouched. Neither
    the sender nor a receiver that takes the fragments as they come (the Python client,
    oh.transport.messages) copies the content to join them; a receiver that joins gets exactly
    ``pack``'s bytes."""
    header = encode({k: v for k, v in obs.items() if k != "content"})
    if len(header) > MAX_HEADER:
        raise ValueError(f"binary frame header of {len(header)} bytes (limit {MAX_HEADER})")
    return [_LEN.pack(len(header)) + header, obs["content"]]


def unpack(data: bytes | bytearray | memoryview) -> dict[str, Any]:
    """The observation of a binary frame, with ``content`` as a zero-copy memoryview of ``data``.

    Raises ProtocolError (BAD_REQUEST) for a frame that is not one: too short, a header length
    past the end or over MAX_HEADER, a header that is not a JSON object or that has ``content``.
    """
    view = memoryview(data)
    if len(view) < _LEN.size:
        raise ProtocolError(ErrorId.BAD_REQUEST, "Binary frame shorter than its 4-byte header length.")
    (n,) = _LEN.unpack_from(view)
    if n > MAX_HEADER or _LEN.size + n > len(view):
        raise ProtocolError(
            ErrorId.BAD_REQUEST, f"Binary frame header length {n} is over {MAX_HEADER} or past the frame's end."
        )
    try:
        obs = decode(bytes(view[_LEN.size : _LEN.size + n]))  # small; the stdlib json needs bytes
    except ValueError:
        raise ProtocolError(ErrorId.BAD_REQUEST, "Binary frame header is not valid JSON.") from None
    if not isinstance(obs, dict) or "content" in obs:
        raise ProtocolError(ErrorId.BAD_REQUEST, 'Binary frame header must be a JSON object without "content".')
    obs["content"] = view[_LEN.size + n :]
    return obs

"""``read`` and ``write``: text files (UTF-8 or a detected encoding), line ranges, base64 for binary
files, atomic writes that keep the mode and the file's encoding."""

from __future__ import annotations

import base64
import binascii
import codecs
import mimetypes
import os
import stat
from typing import Any, Callable

from ... import beneath
from ...protocol.errors import ErrorId, ToolError
from . import encoding as encodings
from .paths import ResolvedPath, not_found, open_rp, refuse_hard_link, require_regular, stat_rp

MAX_READ_BYTES = 256 * 1024 * 1024  # bigger files are refused (TOOL_ERROR), never half-read
MAX_BASE64_BYTES = 64 * 1024 * 1024  # 85 MiB once base64-encoded: fits the 128 MiB frame limit
MAX_BINARY_BYTES = 120 * 1024 * 1024  # a binary read's frame (header + bytes) fits the 128 MiB frame limit
BINARY_SNIFF = 8192


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    old = os.umask(0o022)  # only at import, before any thread exists
    os.umask(old)
    return old


UMASK = _umask()


def read_bytes(rp: ResolvedPath, max_bytes: int = MAX_READ_BYTES) -> bytes:
    """The bytes of a regular file, refusing anything else without blocking on it."""
    st = stat_rp(rp)
    if st is None:
        raise not_found(rp.shown)
    require_regular(rp.shown, st, "read")
    if st.st_size > max_bytes:
        raise ToolError(
            f"The file {rp.shown} is too large to read ({st.st_size:,} bytes; the limit is {max_bytes:,}). "
            "Read a part of it with a shell command such as `head`, `tail` or `sed -n`."
        )
    # O_NONBLOCK: if the path was swapped for a FIFO since the stat, open must not hang.
    fd = open_rp(rp, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        require_regular(rp.shown, st, "read")
        refuse_hard_link(rp.shown, st)
        with os.fdopen(fd, "rb", buffering=0, closefd=False) as f:
            data = f.readall()  # sized from fstat: one allocation, one copy
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise ToolError(f"The file {rp.shown} is too large to read (over {max_bytes:,} bytes).")
    return data


BINARY_HINT = 'read it with args.encoding "base64" to get its bytes'


def decode_text(rp: ResolvedPath, data: bytes) -> tuple[str, str]:
    """(text, encoding): UTF-8, else a detected text encoding; ToolError for binary data."""
    decoded = encodings.decode(data)
    if decoded is None:
        raise ToolError(
            f"The file {rp.shown} is a binary file (not text in UTF-8 or a detectable encoding); {BINARY_HINT}."
        )
    return decoded


def read_text(rp: ResolvedPath, max_bytes: int = MAX_READ_BYTES) -> str:
    return decode_text(rp, read_bytes(rp, max_bytes))[0]


def read_text_enc(rp: ResolvedPath, max_bytes: int = MAX_READ_BYTES) -> tuple[str, str]:
    return decode_text(rp, read_bytes(rp, max_bytes))


def existing_encoding(rp: ResolvedPath) -> str | None:
    """The detected encoding of an existing text file (so a rewrite keeps it), else None."""
    st = stat_rp(rp)
    if st is None or not stat.S_ISREG(st.st_mode) or st.st_size > MAX_READ_BYTES:
        return None
    try:
        return read_text_enc(rp)[1]
    except ToolError:
        return None


def encode_text(rp: ResolvedPath, text: str, enc: str) -> bytes:
    """``text`` in ``enc``; a detected legacy encoding that cannot hold new characters falls back to
    UTF-8 (as the OpenHands editor does) rather than failing the edit."""
    try:
        return text.encode(enc)
    except UnicodeEncodeError:
        return _encode_as(text, "utf-8")


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a final line without newline counts, a trailing newline adds none."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def advance_lines(text: str, pos: int, lines: int) -> int:
    """Offset just after ``lines`` more newlines from ``pos`` (or the end of ``text``)."""
    for _ in range(lines):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    return pos


def slice_lines(text: str, start: int = 0, end: int = -1) -> str:
    """Lines ``start`` (0-based, inclusive) to ``end`` (exclusive; -1 = end of file), line ends kept.

    Lines are split on "\n" only. No list of lines is built: a range near the top of a 64 MiB file
    costs a few ``find`` calls."""
    if start <= 0 and end == -1:
        return text
    start = max(start, 0)
    begin = advance_lines(text, 0, start)
    if end == -1:
        return text[begin:]
    return text[begin : advance_lines(text, begin, max(end - start, 0))]


def view_range_lines(rp: ResolvedPath, text: str, view_range: list[int]) -> tuple[int, int]:
    """Validate a 1-based ``[first, last]`` (last -1 = EOF) the OHEditor way; returns 0-based [begin, stop)."""
    n = count_lines(text)
    first, last = view_range
    if first < 1 or first > max(n, 1):
        raise ToolError(
            f"Invalid `view_range` parameter: {view_range}. Its first element `{first}` should be within the "
            f"range of lines of the file: {[1, n]}."
        )
    if last > n:
        raise ToolError(
            f"Invalid `view_range` parameter: {view_range}. Its second element `{last}` should be smaller "
            f"than the number of lines in the file: `{n}`."
        )
    if last != -1 and last < first:
        raise ToolError(
            f"Invalid `view_range` parameter: {view_range}. Its second element `{last}` should be larger or "
            f"equal than its first element `{first}`."
        )
    return first - 1, (n if last == -1 else last)


def read_file(
    rp: ResolvedPath,
    start: int | None = 0,
    end: int | None = -1,
    view_range: list[int] | None = None,
    encoding: str = "auto",
) -> tuple[str, dict[str, str] | None]:
    """The ``read`` action: (content, extra extras). Raw text (no line numbers); ``view_range`` wins
    over ``start``/``end``. ``encoding: base64``: the whole file's bytes (ranges ignored), with
    ``encoding`` and ``mime_type`` extras -- only then, OpenHands refuses unknown extras."""
    if encoding == "binary":
        # The raw bytes, sent as a binary frame (oh.protocol.binary): no base64, no JSON escaping.
        mime = mimetypes.guess_type(rp.shown)[0] or "application/octet-stream"
        return read_bytes(rp, MAX_BINARY_BYTES), {"encoding": "binary", "mime_type": mime}  # type: ignore[return-value]
    if encoding == "base64":
        data = read_bytes(rp, MAX_BASE64_BYTES)
        mime = mimetypes.guess_type(rp.shown)[0] or "application/octet-stream"
        return base64.b64encode(data).decode("ascii"), {"encoding": "base64", "mime_type": mime}
    text = read_text(rp)
    if view_range:
        begin, stop = view_range_lines(rp, text, view_range)
        return slice_lines(text, begin, stop), None
    return slice_lines(text, start or 0, -1 if end is None else end), None


# --------------------------------------------------------------------------- writing


def _anonymous_temp(pfd: int) -> int | None:
    """An unnamed file in the directory ``pfd`` (Linux ``O_TMPFILE``), or None where that is not supported.

    If the writer is killed while writing, the kernel frees it: no half-written ``.oh-*.tmp`` is
    left in the user's workspace (with a named temp file, each SIGKILL mid-write left one behind).
    """
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(".", flag | os.O_WRONLY | os.O_CLOEXEC, 0o600, dir_fd=pfd)
    except OSError:  # a filesystem without O_TMPFILE (EOPNOTSUPP, EISDIR on old kernels)
        return None


def _write_all(fd: int, data: bytes, mode: int) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
    os.fchmod(fd, mode)
    os.fsync(fd)


def open_parent(rp: ResolvedPath) -> tuple[int, str]:
    """(descriptor of the file's directory, made if missing, beneath the root; the file's name)."""
    try:
        return beneath.open_parent(rp.base, rp.rel, create=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"Cannot create {rp.shown}: a parent path exists and is not a directory.") from None


def _named_temp(pfd: int, data: bytes, mode: int) -> str:
    """A ``.oh-*.tmp`` file in the directory ``pfd`` holding ``data`` (where O_TMPFILE is not available)."""
    while True:
        base = f".oh-{os.urandom(6).hex()}.tmp"
        try:
            fd = os.open(base, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=pfd)
        except FileExistsError:
            continue
        try:
            _write_all(fd, data, mode)
        except BaseException:
            os.unlink(base, dir_fd=pfd)
            raise
        finally:
            os.close(fd)
        return base


def _temp_in(pfd: int, data: bytes, mode: int) -> str:
    """The name of a complete temporary file in the directory ``pfd``: unnamed until complete where the
    platform allows it (``O_TMPFILE``, then ``linkat``), else a named one."""
    anon = _anonymous_temp(pfd)
    if anon is not None:
        try:
            _write_all(anon, data, mode)
            base = f".oh-{os.urandom(6).hex()}.tmp"
            # linkat(AT_SYMLINK_FOLLOW) names the complete file. (A dir fd is passed so that CPython calls
            # linkat; plain link(2) would try to link the /proc symlink: EXDEV.)
            os.link(f"/proc/self/fd/{anon}", base, dst_dir_fd=pfd, follow_symlinks=True)
            return base
        except OSError:
            pass  # e.g. /proc hidden: fall back to a named temp file
        finally:
            os.close(anon)
    return _named_temp(pfd, data, mode)


def atomic_write(rp: ResolvedPath, data: bytes, *, replace: bool = True) -> bool:
    """Write ``data`` to ``rp.real`` atomically; returns whether the file existed before.

    A temporary file in the same directory is written, fsynced, given the old file's mode (or the
    umask default for a new file) and renamed over the target: a reader sees the old or the new
    content, never a torn file, even if this process is killed half-way. Where the platform allows
    it the temporary file is unnamed until it is complete (``O_TMPFILE``, then linked and renamed),
    so a killed writer leaves nothing behind either. Parent directories are created. (A hard-linked
    target is replaced by a new inode; ownership is the writer's.) Everything happens relative to a
    descriptor of the file's directory opened beneath the allowed root (``oh.beneath``): a directory
    swapped for a symlink out of the root is refused, never written through.

    ``replace=False`` (write mode ``create``): the complete file is linked to its name only if that
    name is still free (``link`` fails with EEXIST otherwise): never a torn or overwritten file.
    """
    st = stat_rp(rp)
    if st is not None and not replace:
        return True
    if st is not None:
        require_regular(rp.shown, st, "write")
        mode = stat.S_IMODE(st.st_mode)
    else:
        mode = 0o666 & ~UMASK
    pfd, name = open_parent(rp)
    try:
        tmp = _temp_in(pfd, data, mode)
        try:
            if replace:
                os.replace(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
                tmp = ""
            else:
                try:
                    os.link(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd, follow_symlinks=False)
                except FileExistsError:
                    return True  # someone created it meanwhile: no change (the temp file goes below)
        finally:
            if tmp:
                try:
                    os.unlink(tmp, dir_fd=pfd)
                except OSError:
                    pass
        try:  # make the rename itself durable
            os.fsync(pfd)
        except OSError:
            pass
    finally:
        os.close(pfd)
    return st is not None


def _base64_bytes(content: str) -> bytes:
    try:
        return base64.b64decode(content.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise ToolError(
            'args.content is not valid base64 (encoding "base64"); nothing was written.', ErrorId.BAD_REQUEST
        ) from None


def write_file(
    rp: ResolvedPath,
    content: str,
    start: int | None = 0,
    end: int | None = -1,
    encoding: str | None = None,
    mode: str = "overwrite",
    sink: Callable[..., bool] | None = None,
) -> str | None:
    """The ``write`` action: the whole file is ``content`` (default), or lines [start, end) replaced.

    ``encoding``: None = UTF-8 for a new file, the detected encoding for an existing non-UTF-8 text
    file; ``base64`` = ``content`` is the file's bytes (whole file, ranges ignored); else a codec.
    ``mode``: ``overwrite`` | ``create`` (only if absent) | ``append``. Returns a note for the agent
    (the observation's content) or None.

    ``sink(rp, data, replace=True) -> bool``: where the file's complete new bytes go (default
    ``atomic_write``). Review mode passes one that records them instead (runtimes/local/review.py):
    the same computation, applied only when the user accepts."""
    put = sink or atomic_write
    if mode == "create":
        st = stat_rp(rp)
        if st is not None:
            require_regular(rp.shown, st, "write")
        else:
            data = _base64_bytes(content) if encoding == "base64" else _encode_as(content, encoding or "utf-8")
            if not put(rp, data, replace=False):
                return None
        return f"The file {rp.shown} already exists; it was not changed (mode create)."
    if mode == "append":
        if sink is not None:  # a proposal: the whole file after the append
            st = stat_rp(rp)
            if st is not None:
                require_regular(rp.shown, st, "write")
            current = read_bytes(rp) if st is not None else b""
            put(rp, current + _append_bytes(rp, content, encoding))
            return None
        append_file(rp, content, encoding)
        return None
    if encoding == "base64":
        put(rp, _base64_bytes(content))
        return None
    start = start or 0
    end = -1 if end is None else end
    if start <= 0 and end == -1:
        if encoding is None:
            enc = existing_encoding(rp) or "utf-8"
            put(rp, encode_text(rp, content, enc))
        else:
            put(rp, _encode_as(content, encoding))
        return None
    st = stat_rp(rp)
    if st is None:
        put(rp, _encode_as(content, encoding or "utf-8"))
        return None
    old, old_enc = read_text_enc(rp)
    start = max(start, 0)
    a = advance_lines(old, 0, start)
    b = len(old) if end == -1 else advance_lines(old, a, max(end - start, 0))
    before, after = old[:a], old[b:]
    if before and not before.endswith("\n"):
        before += "\n"
    middle = content
    if after and middle and not middle.endswith("\n"):
        middle += "\n"
    whole = before + middle + after
    put(rp, encode_text(rp, whole, old_enc) if encoding is None else _encode_as(whole, encoding))
    return None


def _encode_as(text: str, enc: str) -> bytes:
    """``text`` in the codec the agent named (strict: an unrepresentable character is an error)."""
    try:
        return text.encode(enc)
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"The content cannot be written in {enc}: character {exc.object[exc.start : exc.start + 1]!r} at offset "
            f"{exc.start} has no representation there. Write it as utf-8, or use another encoding."
        ) from None
    except LookupError:
        raise ToolError(f"Unknown encoding {enc!r}.", ErrorId.BAD_REQUEST) from None


def _append_bytes(rp: ResolvedPath, content: str, encoding: str | None) -> bytes:
    if encoding == "base64":
        return _base64_bytes(content)
    enc = encoding or existing_encoding(rp) or "utf-8"
    # Codecs that write a byte-order mark (utf-8-sig, utf-16, utf-32) would put one in the middle of a
    # file that already has text: continue it with the BOM-less codec of the file's byte order.
    plain = _without_bom(rp, enc)
    if plain is not None:
        return _encode_as(content, plain) if encoding else encode_text(rp, content, plain)
    return _encode_as(content, enc) if encoding else encode_text(rp, content, enc)


_BOM_CODECS = {
    "utf-8-sig": "utf-8",
    "utf_8_sig": "utf-8",
    "utf-16": "utf-16",
    "utf_16": "utf-16",
    "utf16": "utf-16",
    "utf-32": "utf-32",
    "utf_32": "utf-32",
    "utf32": "utf-32",
}


def _without_bom(rp: ResolvedPath, enc: str) -> str | None:
    """The BOM-less codec to append with when ``enc`` writes a BOM and the file is not empty, else None."""
    family = _BOM_CODECS.get(enc.lower())
    st = stat_rp(rp)
    if family is None or st is None or not stat.S_ISREG(st.st_mode) or st.st_size == 0:
        return None
    if family == "utf-8":
        return "utf-8"
    try:
        fd = open_rp(rp, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO swapped in must not hang us
        try:
            head = os.read(fd, 4)
        finally:
            os.close(fd)
    except OSError:
        return None
    if family == "utf-32":
        return "utf-32-be" if head.startswith(codecs.BOM_UTF32_BE) else "utf-32-le"
    return "utf-16-be" if head.startswith(codecs.BOM_UTF16_BE) else "utf-16-le"


def append_file(rp: ResolvedPath, content: str, encoding: str | None) -> None:
    """Write mode ``append``: ``content`` added at the end (in the file's own encoding unless one is
    given). One ``O_APPEND`` write: not atomic like ``overwrite``, but never a lost or torn earlier part."""
    data = _append_bytes(rp, content, encoding)
    st = stat_rp(rp)
    if st is not None:
        require_regular(rp.shown, st, "write")
    pfd, name = open_parent(rp)
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat must not hang us; O_NOFOLLOW: nor a symlink. The name is
        # opened in its directory's descriptor (beneath the root): a parent swapped for a symlink is not followed.
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(name, flags, 0o666 & ~UMASK, dir_fd=pfd)
    finally:
        os.close(pfd)
    try:
        st = os.fstat(fd)
        require_regular(rp.shown, st, "write")
        refuse_hard_link(rp.shown, st)  # appending would change the other names' file too
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


STAT_SAMPLE = 64 * 1024  # bytes read to detect a text file's encoding


def stat_path(rp: ResolvedPath) -> tuple[str, dict]:
    """The ``stat`` action: (summary line, extras). A missing path is an answer, not an error."""
    try:
        link = os.path.islink(rp.shown)
    except OSError:
        link = False
    st = stat_rp(rp)
    info: dict[str, Any]
    if st is None:
        info = {
            "exists": False,
            "type": None,
            "size": None,
            "mtime": None,
            "mode": None,
            "encoding": None,
            "mime_type": None,
            "link": link,
        }
        return f"{rp.shown} does not exist.", info
    kind = "file" if stat.S_ISREG(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else "other"
    enc = mime = None
    if kind == "file":
        mime = mimetypes.guess_type(rp.shown)[0]
        if st.st_nlink <= 1:  # a hard-linked file's content is not read (docs/security.md)
            enc = _sample_encoding(rp)
    info = {
        "exists": True,
        "type": kind,
        "size": st.st_size,
        "mtime": st.st_mtime,
        "mode": f"{stat.S_IMODE(st.st_mode):04o}",
        "encoding": enc,
        "mime_type": mime,
        "link": link,
    }
    what = f"{kind}, {st.st_size} bytes, mode {info['mode']}" + (f", {enc}" if enc else "")
    return f"{rp.shown}: {what}.", info


def _sample_encoding(rp: ResolvedPath) -> str | None:
    """The text encoding of the file's first 64 KiB (``binary`` when not text), None if unreadable."""
    try:
        fd = open_rp(rp, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, STAT_SAMPLE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not data:
        return "utf-8"
    if len(data) > STAT_SAMPLE:
        data = data[:STAT_SAMPLE]
        for back in range(1, 4):  # do not judge a UTF-8 character cut by the sample's end
            if len(data) > back and (data[-back] & 0xC0) == 0xC0:
                data = data[:-back]
                break
    decoded = encodings.decode(data)
    return decoded[1] if decoded else "binary"

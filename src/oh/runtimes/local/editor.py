"""The ``edit`` action with the OpenHands file editor's semantics and messages.

Matches openhands-tools 1.58 ``file_editor`` (its texts, snippet windows, 16,000-character clipping,
``str_replace`` retry with a stripped ``old_str``, whole-file ``old_content``/``new_content``): agents
trained on it read oh's answers the same way. Commands: ``view`` (a file ``cat -n`` style, or a
directory two levels deep), ``create``, ``str_replace`` (``old_str`` must occur exactly once),
``insert`` (after ``insert_line``, 0 = top) and ``undo_edit`` (per-file history, bounded, in memory).
Non-UTF-8 text files are read and written back in their detected encoding.

Deliberate differences: relative paths are accepted (against the agent's working directory);
``insert`` of ``new_str`` ending in a newline does not add an empty line; a last line without a
newline is not glued to inserted text; ``create`` records no undo entry; files up to 16 MiB (the
SDK: 10 MB); ``view`` of an image is refused (read it with ``encoding: base64``); a directory listing
leaves out entries that resolve outside the allowed roots.
"""

from __future__ import annotations

import os
import stat
import threading
from collections import OrderedDict, deque
from typing import Any

from ... import beneath
from ...protocol.errors import ToolError
from ...protocol.udiff import unified_diff  # the one diff rule, mirrored by the extension
from .encoding import decode as decode_any
from .files import advance_lines, atomic_write, count_lines, encode_text, read_bytes, slice_lines
from .paths import PathPolicy, ResolvedPath, not_found, require_regular, stat_rp

SNIPPET_CONTEXT = 4
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_RESPONSE_CHARS = 16000  # the SDK editor's MAX_RESPONSE_LEN_CHAR
MAX_LISTING = 20000  # entries scanned at most (the answer is clipped to MAX_RESPONSE_CHARS anyway)
FILE_CLIPPED = (
    "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order to find the "
    "line numbers of what you are looking for.</NOTE>"
)
DIR_CLIPPED = (
    "<response clipped><NOTE>Due to the max output limit, only part of this directory has been shown to you. "
    "You should use `ls -la` instead to view large directories incrementally.</NOTE>"
)
CLIPPED_NOTE = FILE_CLIPPED
IMAGE_EXTENSIONS = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp"}  # the SDK's list


def clip(text: str, limit: int, notice: str) -> str:
    """Head + notice + tail within ``limit`` characters (the SDK's ``maybe_truncate``; the head gets
    the odd character)."""
    if not limit or len(text) <= limit:
        return text
    if len(notice) >= limit:
        return notice[:limit]
    room = limit - len(notice)
    head = room // 2 + room % 2
    tail = room - head
    return text[:head] + notice + (text[-tail:] if tail else "")


def invalid_path(shown: str, hint: str) -> ToolError:
    return ToolError(f"Invalid `path` parameter: {shown}. {hint}")


def numbered(text: str, first_line: int = 1) -> str:
    """``cat -n`` style: ``f"{n:6}\\t{line}"``; a trailing newline adds no empty line."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, first_line))


def cat_n_output(snippet: str, description: str, first_line: int = 1, limit: int | None = MAX_RESPONSE_CHARS) -> str:
    """The SDK's ``_make_output``: clip the raw text first, then number it."""
    body = numbered(clip(snippet, limit or 0, FILE_CLIPPED), first_line)
    return f"Here's the result of running `cat -n` on {description}:\n" + (body + "\n" if body else "")


class EditHistory:
    """Previous contents per file, newest last; bounded per file and in total bytes. Thread-safe: edits
    run in worker threads (issue 18)."""

    def __init__(self, per_file: int = 10, max_chars: int = 64 * 1024 * 1024) -> None:
        self.lock = threading.Lock()
        self.per_file = per_file
        self.max_chars = max_chars
        self._by_path: OrderedDict[str, deque[str]] = OrderedDict()
        self._chars = 0

    def push(self, path: str, content: str) -> None:
        with self.lock:
            self._push(path, content)

    def _push(self, path: str, content: str) -> None:
        if len(content) > self.max_chars:
            return
        q = self._by_path.setdefault(path, deque())
        self._by_path.move_to_end(path)
        q.append(content)
        self._chars += len(content)
        if len(q) > self.per_file:
            self._chars -= len(q.popleft())
        while self._chars > self.max_chars and self._by_path:
            oldest_path, oldest = next(iter(self._by_path.items()))
            self._chars -= len(oldest.popleft())
            if not oldest:
                del self._by_path[oldest_path]

    def pop(self, path: str) -> str | None:
        with self.lock:
            return self._pop(path)

    def _pop(self, path: str) -> str | None:
        q = self._by_path.get(path)
        if not q:
            return None
        content = q.pop()
        self._chars -= len(content)
        if not q:
            del self._by_path[path]
        return content


class FileEditor:
    def __init__(self, max_output_chars: int = MAX_RESPONSE_CHARS) -> None:
        self.history = EditHistory()
        # The SDK editor clips at 16,000 characters whatever the terminal's limit is.
        self.max_output_chars = MAX_RESPONSE_CHARS

    # ------------------------------------------------------------------ helpers
    def _read(self, rp: ResolvedPath) -> tuple[str, str]:
        """(text, encoding) of a file to view or edit, with the SDK's validation messages."""
        st = stat_rp(rp)
        if st is not None and st.st_size > MAX_EDIT_BYTES:
            raise ToolError(
                f"File validation failed for {rp.shown}: File is too large ({st.st_size / 1024 / 1024:.1f}MB). "
                f"Maximum allowed size is {MAX_EDIT_BYTES // (1024 * 1024)}MB."
            )
        decoded = decode_any(read_bytes(rp, MAX_EDIT_BYTES))
        if decoded is None:
            raise ToolError(
                f"File validation failed for {rp.shown}: File appears to be binary and this file type cannot be read "
                "or edited by this tool."
            )
        return decoded

    def _existing_file(self, rp: ResolvedPath) -> None:
        st = stat_rp(rp)
        if st is None:
            raise not_found(rp.shown)
        if stat.S_ISDIR(st.st_mode):
            raise invalid_path(
                rp.shown, f"The path {rp.shown} is a directory and only the `view` command can be used on directories."
            )
        require_regular(rp.shown, st, "edit")

    def _write(self, rp: ResolvedPath, text: str, encoding: str) -> None:
        atomic_write(rp, encode_text(rp, text, encoding))

    # ------------------------------------------------------------------ commands
    def execute(self, rp: ResolvedPath, args: dict[str, Any], policy: PathPolicy | None = None) -> dict[str, Any]:
        """Returns the edit observation's fields: content, prev_exist, old_content, new_content, diff."""
        command = args.get("command")
        if command == "view":
            return self.view(rp, args.get("view_range"), policy)
        if command == "create":
            return self.create(rp, args.get("file_text"))
        if command == "str_replace":
            return self.str_replace(rp, args.get("old_str"), args.get("new_str"))
        if command == "insert":
            return self.insert(rp, args.get("insert_line"), args.get("new_str"))
        if command == "undo_edit":
            return self.undo(rp)
        raise ToolError(
            f"Unrecognized command {command}. The allowed commands for the FileEditor tool are: view, create, "
            "str_replace, insert, undo_edit"
        )

    def _result(
        self,
        content: str,
        *,
        prev_exist: bool = True,
        old: str | None = None,
        new: str | None = None,
        diff: str | None = None,
    ) -> dict[str, Any]:
        return {"content": content, "prev_exist": prev_exist, "old_content": old, "new_content": new, "diff": diff}

    def view(self, rp: ResolvedPath, view_range: list[int] | None, policy: PathPolicy | None = None) -> dict[str, Any]:
        st = stat_rp(rp)
        if st is None:
            raise not_found(rp.shown)
        if stat.S_ISDIR(st.st_mode):
            if view_range:
                raise ToolError(
                    f"Invalid `view_range` parameter: {view_range}. The `view_range` parameter is not allowed "
                    "when `path` points to a directory."
                )
            return self._result(self._list_dir(rp, policy))
        require_regular(rp.shown, st, "view")
        if os.path.splitext(rp.shown)[1].lower() in IMAGE_EXTENSIONS:
            # The SDK answers with image content, which an edit observation cannot carry: say how to get it.
            raise ToolError(
                f'The file {rp.shown} is an image; get its bytes with the read action and args.encoding "base64" '
                "(the observation then names its mime_type)."
            )
        text, _ = self._read(rp)
        if not view_range:
            return self._result(cat_n_output(text, rp.shown, 1))
        n = count_lines(text)
        first, last = view_range
        if first < 1 or first > n:
            raise ToolError(
                f"Invalid `view_range` parameter: {view_range}. Its first element `{first}` should be within "
                f"the range of lines of the file: {[1, n]}."
            )
        note = ""
        if last == -1:
            last = n
        elif last > n:
            note = f"NOTE: We only show up to {n} since there're only {n} lines in this file.\n"
            last = n
        if last < first:
            raise ToolError(
                f"Invalid `view_range` parameter: {view_range}. Its second element `{last}` should be greater "
                f"than or equal to the first element `{first}`."
            )
        snippet = slice_lines(text, first - 1, last)
        return self._result(note + cat_n_output(snippet, rp.shown, first))

    def _list_dir(self, rp: ResolvedPath, policy: PathPolicy | None) -> str:
        root = rp.shown.rstrip(os.sep) or os.sep
        entries: list[str] = [root + "/" if root != os.sep else root]
        hidden = 0

        def visible(path: str) -> bool:
            # A symlink (or anything) resolving outside the allowed roots is not listed: its name
            # and its children's names would leak what is outside.
            return policy is None or policy.allowed(os.path.realpath(path))

        def entries_of(real_dir: str) -> list[tuple[str, bool]]:
            # Opened beneath its allowed root: a directory swapped for a symlink out of it after
            # `visible` said yes is not listed (oh.beneath).
            base = (policy.root_of(real_dir) if policy is not None else "") or rp.base
            try:
                return beneath.listdir_at(base, os.path.relpath(real_dir, base))
            except OSError:
                return []

        def scan(real_dir: str, shown_dir: str, depth: int) -> None:
            nonlocal hidden
            for name, is_dir in entries_of(real_dir):  # is_dir follows symlinks, like the SDK's Path.is_dir
                if name.startswith("."):
                    if depth == 1:
                        hidden += 1
                    continue
                path = os.path.join(real_dir, name)
                if len(entries) > MAX_LISTING or not visible(path):
                    continue
                shown = root + name if shown_dir == os.sep else shown_dir + "/" + name
                entries.append(shown + "/" if is_dir else shown)
                if is_dir and depth < 2:
                    scan(os.path.realpath(path), shown, depth + 1)

        scan(rp.real, root, 1)
        msg = f"Here's the files and directories up to 2 levels deep in {root}, excluding hidden items:\n" + "\n".join(
            entries
        )
        if hidden:
            msg += (
                f"\n\n{hidden} hidden files/directories in this directory are excluded. You can use 'ls -la "
                f"{root}' to see them."
            )
        return clip(msg, MAX_RESPONSE_CHARS, DIR_CLIPPED)

    def create(self, rp: ResolvedPath, file_text: str | None) -> dict[str, Any]:
        if file_text is None:
            raise ToolError("Parameter `file_text` is required for command: create.")
        if os.path.lexists(rp.real) or os.path.lexists(rp.shown):
            raise invalid_path(
                rp.shown, f"File already exists at: {rp.shown}. Cannot overwrite files using command `create`."
            )
        self._write(rp, file_text, "utf-8")
        return self._result(
            f"File created successfully at: {rp.shown}",
            prev_exist=False,
            old=None,
            new=file_text,
            diff=unified_diff(rp.shown, "", file_text),
        )

    @staticmethod
    def _occurrences(text: str, needle: str) -> list[int]:
        found = []
        pos = text.find(needle)
        while pos >= 0:
            found.append(pos)
            pos = text.find(needle, pos + len(needle))
        return found

    def str_replace(self, rp: ResolvedPath, old_str: str | None, new_str: str | None) -> dict[str, Any]:
        if not old_str:
            raise ToolError("Parameter `old_str` is required for command: str_replace.")
        new_str = new_str or ""
        self._existing_file(rp)
        if new_str == old_str:
            raise ToolError(
                f"Invalid `new_str` parameter: {new_str}. No replacement was performed. `new_str` and "
                "`old_str` must be different."
            )
        text, enc = self._read(rp)
        positions = self._occurrences(text, old_str)
        if not positions:
            # As the SDK: retry the match with old_str stripped (models add stray blank lines/spaces);
            # new_str is kept as given.
            stripped = old_str.strip()
            positions = self._occurrences(text, stripped) if stripped else []
            if not positions:
                raise ToolError(
                    f"No replacement was performed, old_str `{stripped}` did not appear verbatim in {rp.shown}."
                )
            old_str = stripped
        if len(positions) > 1:
            lines = _line_numbers(text, positions)
            shown = str(lines) if len(lines) <= MAX_LINES_SHOWN else f"{lines[:MAX_LINES_SHOWN]} ({len(lines)} in all)"
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines {shown}. "
                "Please ensure it is unique."
            )
        first = positions[0]
        new_text = text[:first] + new_str + text[first + len(old_str) :]
        self._write(rp, new_text, enc)
        self.history.push(rp.real, text)
        line = text.count("\n", 0, first) + 1
        # The SDK's window: lines max(1, line-3) .. line+4+(newlines in new_str).
        start = max(0, line - SNIPPET_CONTEXT)
        stop = line + SNIPPET_CONTEXT + new_str.count("\n")
        snippet = slice_lines(new_text, start, stop)
        content = (
            f"The file {rp.shown} has been edited. "
            + cat_n_output(snippet, f"a snippet of {rp.shown}", start + 1)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )
        return self._result(content, old=text, new=new_text, diff=unified_diff(rp.shown, text, new_text))

    def insert(self, rp: ResolvedPath, insert_line: int | None, new_str: str | None) -> dict[str, Any]:
        if insert_line is None:
            raise ToolError("Parameter `insert_line` is required for command: insert.")
        if new_str is None:
            raise ToolError("Parameter `new_str` is required for command: insert.")
        self._existing_file(rp)
        text, enc = self._read(rp)
        n = count_lines(text)
        if insert_line < 0 or insert_line > n:
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of allowed "
                f"values: {[0, n]}"
            )
        block = new_str if new_str.endswith("\n") else new_str + "\n"
        pos = advance_lines(text, 0, insert_line)
        before = text[:pos]
        if before and not before.endswith("\n"):
            before += "\n"
        new_text = before + block + text[pos:]
        self._write(rp, new_text, enc)
        self.history.push(rp.real, text)
        added = block.count("\n")
        # The SDK's window: lines max(1, insert_line-3) .. insert_line+4+(inserted lines).
        start = max(0, insert_line - SNIPPET_CONTEXT)
        stop = min(n + added, insert_line + SNIPPET_CONTEXT + added)
        snippet = slice_lines(new_text, start, stop)
        content = (
            f"The file {rp.shown} has been edited. "
            + cat_n_output(snippet, "a snippet of the edited file", max(1, insert_line - SNIPPET_CONTEXT + 1))
            + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
            "Edit the file again if necessary."
        )
        return self._result(content, old=text, new=new_text, diff=unified_diff(rp.shown, text, new_text))

    def undo(self, rp: ResolvedPath) -> dict[str, Any]:
        if stat_rp(rp) is None:
            raise not_found(rp.shown)
        current, enc = self._read(rp)
        previous = self.history.pop(rp.real)
        if previous is None:
            raise ToolError(f"No edit history found for {rp.shown}.")
        self._write(rp, previous, enc)
        content = f"Last edit to {rp.shown} undone successfully. " + cat_n_output(previous, rp.shown)
        return self._result(content, old=current, new=previous, diff=unified_diff(rp.shown, current, previous))


MAX_LINES_SHOWN = 1000  # line numbers listed for a non-unique old_str (100,000 of them made a 700 KB message)


def _line_numbers(text: str, positions: list[int]) -> list[int]:
    """The distinct 1-based lines of ``positions``, in one pass over ``text``: counting from the start for each
    position was quadratic (100,000 occurrences in a 300 KB file: 4.8 s)."""
    lines: list[int] = []
    line, at = 1, 0
    for p in sorted(positions):
        line += text.count("\n", at, p)
        at = p
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines

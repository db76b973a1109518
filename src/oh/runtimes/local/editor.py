"""The ``edit`` action with OpenHands' OHEditor semantics (openhands-aci) and comparable messages.

Commands: ``view`` (a file ``cat -n`` style, or a directory two levels deep), ``create``,
``str_replace`` (``old_str`` must occur exactly once), ``insert`` (after ``insert_line``, 0 = top) and
``undo_edit`` (per-file history of previous contents kept in memory, bounded).

Deliberate differences from OHEditor: relative paths are accepted (against the workspace); tabs are
not expanded in ``view`` (so a snippet copied into ``old_str`` matches); a file's trailing newline does
not produce an extra empty numbered line; ``str_replace`` does not retry with stripped whitespace;
``create`` records no undo entry (undoing a create is not a thing OHEditor does meaningfully either).
"""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from typing import Any

from ...protocol.errors import ToolError
from ...protocol.udiff import unified_diff  # the one diff rule, mirrored by the extension
from .files import advance_lines, atomic_write, count_lines, read_text, slice_lines, view_range_lines
from .output import truncate_middle
from .paths import ResolvedPath, not_found, require_regular, stat_or_none

SNIPPET_CONTEXT = 4
MAX_EDIT_BYTES = 16 * 1024 * 1024
MAX_LISTING = 1000
CLIPPED_NOTE = (
    "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order to find the "
    "line numbers of what you are looking for.</NOTE>"
)


def numbered(text: str, first_line: int = 1) -> str:
    """``cat -n`` style: ``f"{n:6}\\t{line}"``; a trailing newline adds no empty line."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()
    return "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, first_line))


def cat_n_output(snippet: str, description: str, first_line: int = 1, limit: int | None = None) -> str:
    body = numbered(snippet, first_line)
    if limit is not None and len(body) > limit:
        body = body[:limit] + CLIPPED_NOTE
    return f"Here's the result of running `cat -n` on {description}:\n{body}\n"


class EditHistory:
    """Previous contents per file, newest last; bounded per file and in total bytes."""

    def __init__(self, per_file: int = 10, max_chars: int = 64 * 1024 * 1024) -> None:
        self.per_file = per_file
        self.max_chars = max_chars
        self._by_path: OrderedDict[str, deque[str]] = OrderedDict()
        self._chars = 0

    def push(self, path: str, content: str) -> None:
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
        q = self._by_path.get(path)
        if not q:
            return None
        content = q.pop()
        self._chars -= len(content)
        if not q:
            del self._by_path[path]
        return content


class FileEditor:
    def __init__(self, max_output_chars: int = 30000) -> None:
        self.history = EditHistory()
        self.max_output_chars = max_output_chars

    # ------------------------------------------------------------------ helpers
    def _read(self, rp: ResolvedPath) -> str:
        return read_text(rp, MAX_EDIT_BYTES)

    def _existing_file(self, rp: ResolvedPath, command: str) -> None:
        st = stat_or_none(rp.real)
        if st is None:
            raise not_found(rp.shown)
        if os.path.isdir(rp.real):
            raise ToolError(f"The path {rp.shown} is a directory and only the `view` command can be used on directories.")
        require_regular(rp.shown, st, "edit")

    # ------------------------------------------------------------------ commands
    def execute(self, rp: ResolvedPath, args: dict[str, Any]) -> dict[str, Any]:
        """Returns the edit observation's fields: content, prev_exist, old_content, new_content, diff."""
        command = args.get("command")
        if command == "view":
            return self.view(rp, args.get("view_range"))
        if command == "create":
            return self.create(rp, args.get("file_text"))
        if command == "str_replace":
            return self.str_replace(rp, args.get("old_str"), args.get("new_str"))
        if command == "insert":
            return self.insert(rp, args.get("insert_line"), args.get("new_str"))
        if command == "undo_edit":
            return self.undo(rp)
        raise ToolError(
            f"Unrecognized command {command!r}. The allowed commands for the edit tool are: view, create, str_replace, insert, undo_edit."
        )

    def _result(self, content: str, *, prev_exist: bool = True, old: str | None = None, new: str | None = None, diff: str | None = None) -> dict[str, Any]:
        return {"content": content, "prev_exist": prev_exist, "old_content": old, "new_content": new, "diff": diff}

    def view(self, rp: ResolvedPath, view_range: list[int] | None) -> dict[str, Any]:
        st = stat_or_none(rp.real)
        if st is None:
            raise not_found(rp.shown)
        if os.path.isdir(rp.real):
            if view_range:
                raise ToolError(
                    f"Invalid `view_range` parameter: {view_range}. The `view_range` parameter is not allowed when `path` points to a directory."
                )
            return self._result(self._list_dir(rp))
        require_regular(rp.shown, st, "view")
        text = self._read(rp)
        if view_range:
            begin, stop = view_range_lines(rp, text, view_range)
            snippet = slice_lines(text, begin, stop)
            return self._result(cat_n_output(snippet, rp.shown, begin + 1, self.max_output_chars))
        return self._result(cat_n_output(text, rp.shown, 1, self.max_output_chars))

    def _list_dir(self, rp: ResolvedPath) -> str:
        root = rp.shown.rstrip(os.sep) or os.sep
        entries: list[str] = [root + "/"]
        hidden = 0
        truncated = False

        def scan(real_dir: str, shown_dir: str, depth: int) -> None:
            nonlocal hidden, truncated
            try:
                items = sorted(os.scandir(real_dir), key=lambda e: e.name)
            except OSError:
                return
            for e in items:
                if e.name.startswith("."):
                    if depth == 1:
                        hidden += 1
                    continue
                if len(entries) > MAX_LISTING:
                    truncated = True
                    return
                shown = os.path.join(shown_dir, e.name)
                try:
                    is_dir = e.is_dir()  # follows symlinks, like `find -L`
                except OSError:
                    is_dir = False
                entries.append(shown + "/" if is_dir else shown)
                if is_dir and depth < 2:
                    scan(e.path, shown, depth + 1)

        scan(rp.real, root, 1)
        out = f"Here's the files and directories up to 2 levels deep in {root}, excluding hidden items:\n" + "\n".join(entries)
        if truncated:
            out += f"\n[... listing truncated after {MAX_LISTING} entries; use `ls` or `find` in the shell to see more ...]"
        if hidden:
            out += f"\n\n{hidden} hidden files/directories in this directory are excluded. You can use 'ls -la {root}' to see them."
        return out

    def create(self, rp: ResolvedPath, file_text: str | None) -> dict[str, Any]:
        if file_text is None:
            raise ToolError("Parameter `file_text` is required for command: create.")
        if os.path.lexists(rp.real) or os.path.lexists(rp.shown):
            if os.path.isdir(rp.real):
                raise ToolError(f"File already exists at: {rp.shown}. Cannot overwrite files using command `create`. (It is a directory.)")
            raise ToolError(f"File already exists at: {rp.shown}. Cannot overwrite files using command `create`.")
        atomic_write(rp, file_text.encode("utf-8"))
        return self._result(
            f"File created successfully at: {rp.shown}",
            prev_exist=False,
            old=None,
            new=file_text,
            diff=unified_diff(rp.shown, "", file_text),
        )

    def str_replace(self, rp: ResolvedPath, old_str: str | None, new_str: str | None) -> dict[str, Any]:
        if not old_str:
            raise ToolError("Parameter `old_str` is required for command: str_replace.")
        new_str = new_str or ""
        self._existing_file(rp, "str_replace")
        if new_str == old_str:
            raise ToolError(
                f"Invalid `new_str` parameter: {new_str}. No replacement was performed. `new_str` and `old_str` must be different."
            )
        text = self._read(rp)
        first = text.find(old_str)
        if first < 0:
            raise ToolError(f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {rp.shown}.")
        positions = [first]
        pos = text.find(old_str, first + len(old_str))
        while pos >= 0:
            positions.append(pos)
            pos = text.find(old_str, pos + len(old_str))
        if len(positions) > 1:
            lines = sorted({text.count("\n", 0, p) + 1 for p in positions})
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old_str}` in lines {lines}. Please ensure it is unique."
            )
        new_text = text[:first] + new_str + text[first + len(old_str) :]
        atomic_write(rp, new_text.encode("utf-8"))
        self.history.push(rp.real, text)
        line = text.count("\n", 0, first) + 1
        start = max(1, line - SNIPPET_CONTEXT)
        stop = line + SNIPPET_CONTEXT + new_str.count("\n")
        snippet = slice_lines(new_text, start - 1, stop)
        content = (
            f"The file {rp.shown} has been edited. "
            + cat_n_output(snippet, f"a snippet of {rp.shown}", start)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary."
        )
        return self._result(content, old=old_str, new=new_str, diff=unified_diff(rp.shown, text, new_text))

    def insert(self, rp: ResolvedPath, insert_line: int | None, new_str: str | None) -> dict[str, Any]:
        if insert_line is None:
            raise ToolError("Parameter `insert_line` is required for command: insert.")
        if new_str is None:
            raise ToolError("Parameter `new_str` is required for command: insert.")
        self._existing_file(rp, "insert")
        text = self._read(rp)
        n = count_lines(text)
        if insert_line < 0 or insert_line > n:
            raise ToolError(
                f"Invalid `insert_line` parameter: {insert_line}. It should be within the range of allowed values: {[0, n]}"
            )
        block = new_str if new_str.endswith("\n") else new_str + "\n"
        pos = advance_lines(text, 0, insert_line)
        before = text[:pos]
        if before and not before.endswith("\n"):
            before += "\n"
        new_text = before + block + text[pos:]
        atomic_write(rp, new_text.encode("utf-8"))
        self.history.push(rp.real, text)
        start = max(1, insert_line - SNIPPET_CONTEXT + 1)
        stop = insert_line + block.count("\n") + SNIPPET_CONTEXT
        snippet = slice_lines(new_text, start - 1, stop)
        content = (
            f"The file {rp.shown} has been edited. "
            + cat_n_output(snippet, "a snippet of the edited file", start)
            + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
            "Edit the file again if necessary."
        )
        return self._result(content, old=None, new=new_str, diff=unified_diff(rp.shown, text, new_text))

    def undo(self, rp: ResolvedPath) -> dict[str, Any]:
        previous = self.history.pop(rp.real)
        if previous is None:
            raise ToolError(f"No edit history found for {rp.shown}.")
        try:
            current = self._read(rp) if stat_or_none(rp.real) is not None else ""
        except ToolError:
            current = ""
        atomic_write(rp, previous.encode("utf-8"))
        content = f"Last edit to {rp.shown} undone successfully. " + cat_n_output(
            truncate_middle(previous, self.max_output_chars), rp.shown
        )
        return self._result(content, old=None, new=None, diff=unified_diff(rp.shown, current, previous))

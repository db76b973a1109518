"""The local runtime's `edit`: OHEditor commands, their messages, undo, observation extras."""

from __future__ import annotations

from oh.runtimes.local.editor import EditHistory, numbered, unified_diff

from .conftest import Harness, error_id

SRC = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


async def edit(h: Harness, path: str, command: str, **args):
    return await h.do("edit", path=path, command=command, **args)


async def test_view_file_cat_n(h: Harness, workspace):
    (workspace / "m.py").write_text(SRC)
    p = workspace / "m.py"
    obs = await edit(h, "m.py", "view")
    assert obs["observation"] == "edit"
    lines = SRC.split("\n")[:-1]
    expected = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, 1))
    assert obs["content"] == f"Here's the result of running `cat -n` on {p}:\n{expected}\n"
    assert obs["extras"]["prev_exist"] is True and obs["extras"]["diff"] is None
    obs = await edit(h, "m.py", "view", view_range=[5, -1])
    assert obs["content"] == f"Here's the result of running `cat -n` on {p}:\n     5\tdef g():\n     6\t    return 2\n"
    obs = await edit(h, "m.py", "view", view_range=[0, 2])
    assert error_id(obs) == "TOOL_ERROR"
    assert obs["content"] == (
        "Invalid `view_range` parameter: [0, 2]. Its first element `0` should be within the range of lines of "
        "the file: [1, 6]."
    )
    # Beyond the end: the SDK shows up to the last line with a note (not an error).
    obs = await edit(h, "m.py", "view", view_range=[5, 9])
    assert obs["content"] == (
        "NOTE: We only show up to 6 since there're only 6 lines in this file.\n"
        f"Here's the result of running `cat -n` on {p}:\n     5\tdef g():\n     6\t    return 2\n"
    )
    obs = await edit(h, "m.py", "view", view_range=[4, 2])
    assert obs["content"] == (
        "Invalid `view_range` parameter: [4, 2]. Its second element `2` should be greater than or equal to "
        "the first element `4`."
    )


async def test_view_directory_two_levels_no_hidden(h: Harness, workspace):
    (workspace / "a" / "b" / "c").mkdir(parents=True)
    (workspace / "a" / "b" / "c" / "too_deep.txt").write_text("")
    (workspace / "a" / "x.txt").write_text("")
    (workspace / "top.txt").write_text("")
    (workspace / ".git").mkdir()
    (workspace / "a" / ".hidden").write_text("")
    obs = await edit(h, ".", "view")
    ws = str(workspace)
    assert obs["content"] == (
        f"Here's the files and directories up to 2 levels deep in {ws}, excluding hidden items:\n"
        f"{ws}/\n{ws}/a/\n{ws}/a/b/\n{ws}/a/x.txt\n{ws}/top.txt\n\n"
        f"1 hidden files/directories in this directory are excluded. You can use 'ls -la {ws}' to see them."
    )
    obs = await edit(h, ".", "view", view_range=[1, 2])
    assert error_id(obs) == "TOOL_ERROR" and "not allowed when `path` points to a directory" in obs["content"]


async def test_create(h: Harness, workspace):
    obs = await edit(h, "pkg/new.py", "create", file_text="x = 1\n")
    p = workspace / "pkg" / "new.py"
    assert obs["content"] == f"File created successfully at: {p}"
    assert p.read_text() == "x = 1\n"
    ex = obs["extras"]
    assert ex["prev_exist"] is False and ex["old_content"] is None and ex["new_content"] == "x = 1\n"
    assert "+x = 1" in ex["diff"]
    obs = await edit(h, "pkg/new.py", "create", file_text="other")
    assert error_id(obs) == "TOOL_ERROR"
    assert (
        obs["content"]
        == f"Invalid `path` parameter: {p}. File already exists at: {p}. Cannot overwrite files using command `create`."
    )
    assert p.read_text() == "x = 1\n"


async def test_str_replace_success_snippet_and_diff(h: Harness, workspace):
    p = workspace / "m.py"
    p.write_text(SRC)
    obs = await edit(h, "m.py", "str_replace", old_str="return 2", new_str="return 3")
    assert p.read_text() == SRC.replace("return 2", "return 3")
    # The SDK's window: from line max(1, 6 - 3) = 3 (one line less above than before wave 2).
    assert obs["content"] == (
        f"The file {p} has been edited. Here's the result of running `cat -n` on a snippet of {p}:\n"
        "     3\t\n     4\t\n     5\tdef g():\n     6\t    return 3\n"
        "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )
    ex = obs["extras"]
    # Whole files before/after, as the SDK's FileEditorObservation wants them (its diff view).
    assert (
        ex["prev_exist"] is True
        and ex["old_content"] == SRC
        and ex["new_content"] == SRC.replace("return 2", "return 3")
    )
    assert "-    return 2\n+    return 3\n" in ex["diff"] and ex["diff"].startswith("---")


async def test_str_replace_errors(h: Harness, workspace):
    p = workspace / "m.py"
    p.write_text(SRC)
    obs = await edit(h, "m.py", "str_replace", old_str="return 9", new_str="x")
    assert error_id(obs) == "TOOL_ERROR"
    assert obs["content"] == f"No replacement was performed, old_str `return 9` did not appear verbatim in {p}."
    obs = await edit(h, "m.py", "str_replace", old_str="return", new_str="yield")
    assert obs["content"] == (
        "No replacement was performed. Multiple occurrences of old_str `return` in lines [2, 6]. Please "
        "ensure it is unique."
    )
    obs = await edit(h, "m.py", "str_replace", old_str="def f", new_str="def f")
    assert error_id(obs) == "TOOL_ERROR" and "must be different" in obs["content"]
    obs = await edit(h, "missing.py", "str_replace", old_str="a", new_str="b")
    missing = workspace / "missing.py"
    assert (
        obs["content"]
        == f"Invalid `path` parameter: {missing}. The path {missing} does not exist. Please provide a valid path."
    )
    (workspace / "d").mkdir()
    obs = await edit(h, "d", "str_replace", old_str="a", new_str="b")
    d = workspace / "d"
    assert obs["content"] == (
        f"Invalid `path` parameter: {d}. The path {d} is a directory and only the `view` command can be used "
        "on directories."
    )
    assert p.read_text() == SRC  # nothing changed by any failure


async def test_str_replace_delete_with_default_new_str(h: Harness, workspace):
    p = workspace / "m.py"
    p.write_text(SRC)
    await edit(h, "m.py", "str_replace", old_str="\n\ndef g():\n    return 2\n")
    assert p.read_text() == "def f():\n    return 1\n"


async def test_insert(h: Harness, workspace):
    p = workspace / "m.py"
    p.write_text("a\nb\nc\n")
    obs = await edit(h, "m.py", "insert", insert_line=0, new_str="top")
    assert p.read_text() == "top\na\nb\nc\n"
    assert "The file" in obs["content"] and "     1\ttop\n" in obs["content"]
    assert obs["content"].endswith("(correct indentation, no duplicate lines, etc). Edit the file again if necessary.")
    await edit(h, "m.py", "insert", insert_line=4, new_str="end1\nend2\n")
    assert p.read_text() == "top\na\nb\nc\nend1\nend2\n"
    await edit(h, "m.py", "insert", insert_line=2, new_str="mid")
    assert p.read_text() == "top\na\nmid\nb\nc\nend1\nend2\n"
    obs = await edit(h, "m.py", "insert", insert_line=99, new_str="x")
    assert error_id(obs) == "TOOL_ERROR"
    assert (
        obs["content"] == "Invalid `insert_line` parameter: 99. It should be within the range of allowed values: [0, 7]"
    )
    nonl = workspace / "nonl.txt"
    nonl.write_text("x")
    await edit(h, "nonl.txt", "insert", insert_line=1, new_str="y")
    assert nonl.read_text() == "x\ny\n"


async def test_undo_edit(h: Harness, workspace):
    p = workspace / "m.py"
    p.write_text(SRC)
    obs = await edit(h, "m.py", "undo_edit")
    assert error_id(obs) == "TOOL_ERROR" and obs["content"] == f"No edit history found for {p}."
    await edit(h, "m.py", "str_replace", old_str="return 1", new_str="return 10")
    await edit(h, "m.py", "insert", insert_line=0, new_str="# header")
    obs = await edit(h, "m.py", "undo_edit")
    assert obs["content"].startswith(
        f"Last edit to {p} undone successfully. Here's the result of running `cat -n` on {p}:\n"
    )
    assert p.read_text() == SRC.replace("return 1", "return 10")
    await edit(h, "m.py", "undo_edit")
    assert p.read_text() == SRC
    assert error_id(await edit(h, "m.py", "undo_edit")) == "TOOL_ERROR"


async def test_edit_keeps_mode_and_refuses_binary(h: Harness, workspace):
    p = workspace / "x.sh"
    p.write_text("echo a\n")
    p.chmod(0o700)
    await edit(h, "x.sh", "str_replace", old_str="a", new_str="b")
    assert p.stat().st_mode & 0o777 == 0o700
    (workspace / "b.bin").write_bytes(b"\x00\x01binary")
    for cmd, args in (
        ("view", {}),
        ("str_replace", {"old_str": "b", "new_str": "c"}),
        ("insert", {"insert_line": 0, "new_str": "x"}),
    ):
        obs = await edit(h, "b.bin", cmd, **args)
        assert error_id(obs) == "TOOL_ERROR"
        assert obs["content"] == (
            f"File validation failed for {workspace / 'b.bin'}: File appears to be binary and this file type cannot be "
            "read or edited by this tool."
        )


def test_numbered_and_diff_helpers():
    assert numbered("a\nb\n") == "     1\ta\n     2\tb"
    assert numbered("a\nb", 10) == "    10\ta\n    11\tb"
    old = "".join(f"line {i}\n" for i in range(1, 2001))
    new = old.replace("line 1000\n", "LINE 1000\n")
    diff = unified_diff("/w/f", old, new)
    assert "@@ -997,7 +997,7 @@" in diff and "-line 1000\n+LINE 1000\n" in diff
    assert unified_diff("/w/f", "a", "b").endswith("+b\n\\ No newline at end of file\n")


def test_history_is_bounded():
    hist = EditHistory(per_file=2, max_chars=10)
    for s in ("aaaa", "bbbb", "cccc"):
        hist.push("/f", s)
    assert hist.pop("/f") == "cccc" and hist.pop("/f") == "bbbb" and hist.pop("/f") is None
    hist.push("/a", "123456")
    hist.push("/b", "123456")  # over the byte bound: the oldest file's entry goes
    assert hist.pop("/a") is None and hist.pop("/b") == "123456"

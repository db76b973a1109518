"""Issue 39 item 2: a command's change set kept or reverted hunk by hunk. Real backend (`oh start --review
--history`), a real agent running real bash (sed -i, chmod, a binary file, a new file), the real `oh review`
commands (in-process); the files' bytes are checked after each decision."""

from __future__ import annotations

import json
from pathlib import Path

from cli.inprocess import here, invoke  # noqa: F401 - `here` is a fixture
from oh.client.sync import SyncClient
from oh.commands.review import run_accept, run_reject, run_show

from .test_review_after import WAIT, _review, _run_approved, _start

LINES = [f"line {i}\n" for i in range(1, 41)]


def _text(changed: dict[int, str]) -> str:
    return "".join(changed.get(i, line) for i, line in enumerate(LINES, start=1))


def _show(cid: str) -> dict:
    res = invoke(run_show, proposal_id=cid, json_=True)
    assert res.code == 0, res
    return json.loads(res.out)["changeset"]


def test_hunks_of_a_change_set_are_kept_or_reverted_one_decision_at_a_time(here):
    oh = here
    ws: Path = oh.workspace
    (ws / "f.txt").write_text(_text({}))
    (ws / "b.bin").write_bytes(b"\0\1\2")
    (ws / "m.sh").write_text("echo hi\n")
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="alice") as alice:
        cmd = "sed -i 's/^line 2$/X2/; s/^line 12$/X12/; s/^line 22$/X22/' f.txt && printf '\\0\\7' > b.bin "
        cmd += "&& chmod +x m.sh && printf 'n\\n' > new.txt"
        assert _run_approved(alice, cmd).exit_code == 0
    [row] = _review()["changesets"]
    cid = row["id"]
    shown = _show(cid)
    kinds = [(h["n"], h["path"], h["kind"], h["decided"]) for h in shown["hunks"]]
    assert kinds == [
        (1, "b.bin", "binary", None),
        (2, "f.txt", "text", None),
        (3, "f.txt", "text", None),
        (4, "f.txt", "text", None),
        (5, "m.sh", "mode", None),
        (6, "new.txt", "create", None),
    ]
    plain = invoke(run_show, proposal_id=cid)
    assert "[hunk 3/6]" in plain.out and "-line 12" in plain.out and "+X12" in plain.out
    # The user edits the file far from the hunks; reverting hunks 3 and 6 keeps that edit.
    (ws / "f.txt").write_text(_text({2: "X2\n", 12: "X12\n", 22: "X22\n", 40: "USER\n"}))
    res = invoke(run_reject, proposal_id=cid, select={"hunks": [3, 6]})
    assert res.code == 0 and "reverted hunks 3, 6" in res.out, res
    assert (ws / "f.txt").read_text() == _text({2: "X2\n", 22: "X22\n", 40: "USER\n"})
    assert not (ws / "new.txt").exists() and (ws / "b.bin").read_bytes() == b"\0\7"
    [row] = _review()["changesets"]  # still pending: hunks 1, 2, 4, 5 undecided
    assert [h["decided"] for h in _show(cid)["hunks"]] == [None, None, "reverted", None, None, "reverted"]
    again = invoke(run_reject, proposal_id=cid, select={"hunks": [3]})
    assert again.code == 2 and "decided already: the undecided ones are 1-2, 4-5" in again.err
    bad = invoke(run_accept, proposal_id=cid, select={"hunks": [9]})
    assert bad.code == 2 and "its hunks are 1-6" in bad.err
    # An overlap with the user's edit: nothing changes, the conflict names the file.
    (ws / "f.txt").write_text(_text({2: "X2\n", 22: "USER22\n", 40: "USER\n"}))
    clash = invoke(run_reject, proposal_id=cid, select={"hunks": [4]})
    assert clash.code == 1 and "f.txt" in clash.out and "conflict" in clash.out
    assert (ws / "f.txt").read_text() == _text({2: "X2\n", 22: "USER22\n", 40: "USER\n"})
    # Files: m.sh's mode change and b.bin's content reverted by naming the files.
    assert invoke(run_reject, proposal_id=cid, select={"files": ["m.sh", "b.bin"]}).code == 0
    assert (ws / "b.bin").read_bytes() == b"\0\1\2" and not (ws / "m.sh").stat().st_mode & 0o111
    # Keeping the rest decides the change set: kept (not every hunk was reverted).
    assert invoke(run_accept, proposal_id=cid).code == 0
    assert _review()["changesets"] == []
    entries = {e["id"]: e for e in oh.json("history", "--json")["entries"]}
    assert entries[int(cid[1:])]["review"] == "kept"
    # Each revert was a history entry of its own: undoing the first brings hunks 3 and 6 back.
    first = min(i for i, e in entries.items() if e["kind"] == "undo")
    oh("undo", str(first), check=0)
    assert (ws / "f.txt").read_text() == _text({2: "X2\n", 12: "X12\n", 22: "USER22\n", 40: "USER\n"})
    assert (ws / "new.txt").read_text() == "n\n"


def test_rejecting_every_hunk_one_by_one_restores_the_original_and_marks_it_reverted(here):
    oh = here
    ws: Path = oh.workspace
    (ws / "f.txt").write_text(_text({}))
    info = _start(oh)
    token = oh.session(info["instance_id"])["token"]
    with SyncClient.connect(info["url"], token, name="alice") as alice:
        ran = alice.run("sed -i 's/^line 5$/X5/; s/^line 30$/X30/' f.txt", timeout=WAIT)
        assert ran.exit_code == 0
    [row] = _review()["changesets"]
    assert invoke(run_reject, proposal_id=row["id"], select={"hunks": [2]}).code == 0
    assert (ws / "f.txt").read_text() == _text({5: "X5\n"})
    # The decision is journaled: a restarted backend still knows hunk 2 was reverted.
    assert oh("stop").returncode == 0
    _start(oh)
    assert [h["decided"] for h in _show(row["id"])["hunks"]] == [None, "reverted"]
    assert invoke(run_reject, proposal_id=row["id"]).code == 0  # the rest: hunk 1
    assert (ws / "f.txt").read_text() == _text({}) and _review()["changesets"] == []
    entries = {e["id"]: e for e in oh.json("history", "--json")["entries"]}
    assert entries[int(row["id"][1:])]["review"] == "reverted"

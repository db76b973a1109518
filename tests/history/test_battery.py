"""The change-shape battery (issue 29): each row is a real bash command run in a real workspace while
the timeline records; the entry must name the right files with the right kind of change, and undoing it
must give back the tree exactly as it was (contents, permission bits, symlinks)."""

from __future__ import annotations

import os

import pytest

from oh.history import tree as T
from oh.history import undo as U
from oh.protocol.errors import ProtocolError

from .conftest import bash, tree

FIVE_MB = "head -c 5242880 /dev/urandom > big.bin"

# (id, setup before the snapshot, the action, {path: change kind})
SHAPES = [
    ("create", "", "echo hi > new.txt", {"new.txt": "created"}),
    ("modify", "printf 'a\\nb\\n' > f.txt", "sed -i 's/a/A/' f.txt", {"f.txt": "changed"}),
    ("delete", "echo x > gone.txt", "rm gone.txt", {"gone.txt": "deleted"}),
    ("rename", "echo r > r1.txt", "mv r1.txt r2.txt", {"r1.txt": "renamed", "r2.txt": "renamed"}),
    ("chmod", "echo '#!/bin/sh' > s.sh", "chmod +x s.sh", {"s.sh": "mode"}),
    ("symlink-create", "echo t > target", "ln -s target link", {"link": "created"}),
    ("symlink-retarget", "echo 1 > t1; echo 2 > t2; ln -s t1 link", "ln -sfn t2 link", {"link": "changed"}),
    ("file-to-symlink", "echo a > f; echo t > target", "rm f && ln -s target f", {"f": "changed"}),
    ("binary", "printf '\\0\\1\\2' > b.bin", "printf '\\0\\3' > b.bin", {"b.bin": "changed"}),
    ("large", "", FIVE_MB, {"big.bin": "created"}),
    (
        "unicode",
        "echo a > 'é ü 名前.txt'",
        "echo b >> 'é ü 名前.txt'; echo c > 'ñ\tx.txt'",
        {"é ü 名前.txt": "changed", "ñ\tx.txt": "created"},
    ),
    ("deep-tree", "", "mkdir -p a/b/c && echo 1 > a/b/c/f && echo 2 > a/g", {"a/b/c/f": "created", "a/g": "created"}),
    (
        "rm-rf-tree",
        "mkdir -p t/u && echo 1 > t/u/f && echo 2 > t/g",
        "rm -rf t",
        {"t/u/f": "deleted", "t/g": "deleted"},
    ),
    ("dir-rename", "mkdir -p d && echo 1 > d/f", "mv d e", {"d/f": "renamed", "e/f": "renamed"}),
    (
        "nested-git",
        (
            "mkdir inner && cd inner && git init -q && echo v1 > code.py && git add . && git -c user.name=t -c "
            "user.email=t@t commit -qm i"
        ),
        "cd inner && echo v2 > code.py && git -c user.name=t -c user.email=t@t commit -qam two",
        {"inner/code.py": "changed"},
    ),
    (
        "many-files",
        "",
        "mkdir m && for i in $(seq 1 300); do echo $i > m/$i; done",
        {f"m/{i}": "created" for i in range(1, 301)},
    ),
]


@pytest.mark.parametrize("setup,action,expected", [s[1:] for s in SHAPES], ids=[s[0] for s in SHAPES])
def test_shape_recorded_and_undone(timeline, setup, action, expected):
    ws = timeline.ws
    if setup:
        bash(ws, setup)
    tl = timeline()
    before = tree(ws)
    entry = tl.begin("agent-1", "run", action)
    bash(ws, action)
    tl.end(entry)
    e = tl.entries[entry]
    assert {c.path: c.kind for c in e.changes} == expected
    assert all(not c.ambiguous for c in e.changes)
    after = tree(ws)
    assert after != before
    result = U.undo(tl, entry)
    assert result["ok"], result
    assert tree(ws) == before
    # The undo is an entry too: undoing it redoes the action.
    redo = U.undo(tl, result["entry"])
    assert redo["ok"], redo
    assert tree(ws) == after


def test_the_users_edit_between_action_and_undo_is_merged_three_ways(timeline):
    ws = timeline.ws
    (ws / "f.py").write_text("one\ntwo\nthree\nfour\nfive\n")
    tl = timeline()
    entry = tl.begin("agent-1", "run", "sed")
    bash(ws, "sed -i 's/two/TWO/' f.py")
    tl.end(entry)
    (ws / "f.py").write_text("one\nTWO\nthree\nfour\nFIVE (the user's)\n")  # the user, between action and undo
    result = U.undo(tl, entry)
    assert result["ok"], result
    assert (ws / "f.py").read_text() == "one\ntwo\nthree\nfour\nFIVE (the user's)\n"
    kinds = [tl.entries[i].kind for i in sorted(tl.entries)]
    assert kinds == ["run", "user", "undo"]  # the user's change is an entry of its own


def test_a_conflict_changes_nothing_and_names_the_file(timeline):
    ws = timeline.ws
    (ws / "f.py").write_text("one\ntwo\n")
    (ws / "g.py").write_text("g\n")
    tl = timeline()
    entry = tl.begin("agent-1", "run", "sed")
    bash(ws, "sed -i 's/two/TWO/' f.py && echo G >> g.py")
    tl.end(entry)
    (ws / "f.py").write_text("one\nTwO by the user\n")  # the same line: no merge possible
    before = tree(ws)
    result = U.undo(tl, entry)
    assert not result["ok"] and result["error"] == "CONFLICT"
    assert [c["path"] for c in result["conflicts"]] == ["f.py"] and "f.py" in result["message"]
    assert tree(ws) == before  # g.py was not reverted either: all or nothing


def test_undo_to_goes_back_before_an_entry_keeping_the_users_later_edit(timeline):
    ws = timeline.ws
    (ws / "a").write_text("1\n2\n3\n4\n5\n6\n")
    tl = timeline()
    first = tl.begin("agent-1", "run", "one")
    bash(ws, "sed -i 's/^1$/one/' a && echo x > x")
    tl.end(first)
    (ws / "a").write_text("one\n2\n3\n4\n5\nsix (user)\n")
    second = tl.begin("agent-2", "run", "two")
    bash(ws, "rm x && echo y > y")
    tl.end(second)
    result = U.undo(tl, first, to=True)
    assert result["ok"], result
    assert sorted(result["undoes"]) == [first, second]
    assert tree(ws) == {"a": ("f", "0o644", b"1\n2\n3\n4\n5\nsix (user)\n")}


def test_ignored_trees_are_changed_not_stored(timeline):
    ws = timeline.ws
    bash(
        ws,
        (
            "git init -q && printf 'node_modules/\\nbuild/\\n*.log\\n' > .gitignore && mkdir -p node_modules/pkg "
            "&& echo 1 > node_modules/pkg/i.js"
        ),
    )
    tl = timeline()
    entry = tl.begin("agent-1", "run", "npm install")
    bash(
        ws,
        (
            "mkdir node_modules/left-pad && echo 2 > node_modules/left-pad/i.js && mkdir -p build && echo o > "
            "build/out && echo l > x.log && echo s > src.txt"
        ),
    )
    tl.end(entry)
    e = tl.entries[entry]
    assert {c.path for c in e.changes} == {"src.txt"}  # only the tracked-tree file is stored
    assert {"node_modules/left-pad", "build", "x.log"} <= set(e.ignored)
    assert not any(h for h in tl.store.index if tl.store.get(h) == b"2\n")  # no copy of the ignored tree
    assert U.undo(tl, entry)["ok"]
    assert not (ws / "src.txt").exists() and (ws / "build" / "out").exists()  # not stored: not reverted


def test_a_file_above_the_size_limit_is_shown_not_undone(timeline):
    ws = timeline.ws
    (ws / "big").write_bytes(b"x" * 4096)
    tl = timeline(max_file=1024)
    entry = tl.begin("agent-1", "run", "grow")
    bash(ws, "echo more >> big")
    tl.end(entry)
    [c] = tl.entries[entry].changes
    assert c.kind == "changed" and not c.after.stored and c.after.hash
    result = U.undo(tl, entry)
    assert not result["ok"] and "not stored" in result["message"]


def test_changes_outside_the_workspace_are_not_recorded(timeline, tmp_path):
    ws = timeline.ws
    outside = tmp_path / "outside.txt"
    tl = timeline()
    entry = tl.begin("agent-1", "run", "out")
    bash(ws, f"echo x > {outside} && echo y > inside")
    tl.end(entry)
    assert [c.path for c in tl.entries[entry].changes] == ["inside"]
    assert U.undo(tl, entry)["ok"] and outside.read_text() == "x\n"


def test_overlapping_actions_mark_the_shared_stretch_ambiguous(timeline):
    ws = timeline.ws
    tl = timeline()
    a = tl.begin("alice", "run", "a")
    bash(ws, "echo 1 > only-a")
    b = tl.begin("bob", "run", "b")
    bash(ws, "echo 2 > during-both")
    tl.end(b)
    bash(ws, "echo 3 > a-again")
    tl.end(a)
    ea, eb = tl.entries[a], tl.entries[b]
    assert {c.path: c.ambiguous for c in ea.changes} == {"only-a": (), "during-both": (b,), "a-again": ()}
    assert {c.path: c.ambiguous for c in eb.changes} == {"during-both": (a,)}
    with pytest.raises(ProtocolError, match="another action"):  # an agent never undoes what may be another's
        U.undo(tl, b, only_agent="bob")
    # The user may, but never silently: the ambiguous change is named and kept unless included (issue 36).
    kept = U.undo(tl, b)
    assert kept["ok"] and kept["entry"] is None and kept["kept_ambiguous"] == ["during-both"]
    assert (ws / "during-both").exists()
    assert U.undo(tl, b, include_ambiguous=True)["ok"] and not (ws / "during-both").exists()
    # An undo that takes both entries (--to from alice's) reverts it: nobody outside the undo may have made it.
    done = U.undo(tl, a, to=True)
    assert done["ok"] and done["kept_ambiguous"] == []


@pytest.mark.slow
def test_a_100_mb_file_is_recorded_and_undone(timeline):
    ws = timeline.ws
    tl = timeline(max_file=128 * 1024 * 1024)
    entry = tl.begin("agent-1", "run", "dd")
    bash(ws, "head -c 104857600 /dev/urandom > huge.bin")
    tl.end(entry)
    [c] = tl.entries[entry].changes
    assert (c.kind, c.after.size, c.after.stored) == ("created", 104857600, True)
    digest = c.after.hash
    assert U.undo(tl, entry)["ok"] and not (ws / "huge.bin").exists()
    redo = U.undo(tl, max(tl.entries))
    assert redo["ok"] and (ws / "huge.bin").stat().st_size == 104857600
    import hashlib

    assert hashlib.sha256((ws / "huge.bin").read_bytes()).hexdigest() == digest


def test_clean_tracked_files_come_from_git_and_are_copied_on_first_change(timeline):
    ws = timeline.ws
    bash(
        ws,
        "git init -q && printf 'a\\nb\\n' > tracked.txt && echo s > same.txt && git add . && "
        "git -c user.name=t -c user.email=t@t commit -qm one && echo dirty > same.txt",
    )
    tl = timeline()
    assert tl.index["tracked.txt"][1].hash.startswith("git:")  # not read at the first snapshot
    assert not tl.index["same.txt"][1].hash.startswith("git:")  # changed since the commit: read
    entry = tl.begin("agent-1", "run", "sed")
    bash(ws, "sed -i 's/a/A/' tracked.txt && git -c user.name=t -c user.email=t@t commit -qam two")
    tl.end(entry)
    [c] = tl.entries[entry].changes
    assert c.path == "tracked.txt" and tl.store.get(c.before.hash) == b"a\nb\n"
    assert U.undo(tl, entry)["ok"] and (ws / "tracked.txt").read_text() == "a\nb\n"


@pytest.mark.parametrize("git", [True, False], ids=["git", "plain"])
def test_the_snapshot_walk_knows_each_file_as_a_probe_of_it_would(timeline, git):
    # The first snapshot (a walk, git's clean list, then each file's state): its index must be what
    # a probe of each file, one by one, says (stat key and state), for every kind of file.
    ws = timeline.ws
    setup = (
        "mkdir -p a/b && echo 1 > a/one && printf '#!/bin/sh\\n' > a/b/x.sh && chmod +x a/b/x.sh && "
        "ln -s a/one link && ln -s nowhere dangling && printf '\\0\\1' > bin && echo ig > a/skip.log"
    )
    bash(
        ws,
        setup
        + (
            " && echo '*.log' > .gitignore && git init -q && git add . && git -c user.name=t "
            "-c user.email=t@t commit -qm one && echo 2 > a/one"
            if git
            else ""
        ),
    )
    tl = timeline()
    want = {"a/one", "a/b/x.sh", "link", "dangling", "bin"} | ({".gitignore"} if git else {"a/skip.log"})
    assert set(tl.index) == want
    clean = T.git_clean(tl.root) if git else {}
    for rel, got in tl.index.items():
        assert T.probe(tl.root, rel, None, tl.store, tl.max_file, clean.get(rel)) == got, rel
    assert tl.index["a/b/x.sh"][1].mode == 0o755 and tl.index["link"][1].kind == "l"
    if git:
        assert tl.index["a/b/x.sh"][1].hash.startswith("git:") and not tl.index["a/one"][1].hash.startswith("git:")
    assert set(tl.watcher.wds) >= {"", "a", "a/b"}


def test_a_gitattributes_file_turns_the_git_shortcut_off(timeline):
    ws = timeline.ws
    bash(
        ws,
        (
            "git init -q && echo '* text eol=crlf' > .gitattributes && echo x > f && git add . && git -c "
            "user.name=t -c user.email=t@t commit -qm one"
        ),
    )
    tl = timeline()
    assert not any(st.hash.startswith("git:") for _k, st in tl.index.values())


def test_an_entry_from_before_a_restart_is_undone_against_a_file_known_by_its_blob(timeline):
    ws = timeline.ws
    bash(ws, "git init -q && echo v1 > f && git add . && git -c user.name=t -c user.email=t@t commit -qm one")
    tl = timeline()
    entry = tl.begin("agent-1", "run", "commit v2")
    bash(ws, "echo v2 > f && git -c user.name=t -c user.email=t@t commit -qam two")
    tl.end(entry)
    tl.close()
    again = timeline()  # the backend started again: f is clean in git, known by its blob
    assert again.index["f"][1].hash.startswith("git:") and again.entries[entry].status == "done"
    result = U.undo(again, entry)
    assert result["ok"], result
    assert (ws / "f").read_text() == "v1\n"


def _dirs(root) -> set[str]:
    """Every directory under ``root`` (no .git): what an undo of a creation must leave as it was."""
    import os

    out = set()
    for d, sub, _files in os.walk(root):
        sub[:] = [x for x in sub if x != ".git"]
        out |= {os.path.relpath(os.path.join(d, x), root) for x in sub}
    return out


@pytest.mark.parametrize(
    "setup,action",
    [
        ("", "mkdir -p a/b/c && echo 1 > a/b/c/f && echo 2 > a/g"),
        ("mkdir -p d && echo 1 > d/f", "mv d e"),
        ("mkdir keep", "mkdir -p keep/sub/deeper && echo 1 > keep/sub/deeper/f && mkdir only-empty"),
    ],
    ids=["deep-tree", "dir-rename", "users-empty-dir-stays"],
)
def test_undoing_a_creation_removes_the_directories_it_made(timeline, setup, action):
    ws = timeline.ws
    if setup:
        bash(ws, setup)
    tl = timeline()
    before, dirs_before = tree(ws), _dirs(ws)
    entry = tl.begin("agent-1", "run", action)
    bash(ws, action)
    tl.end(entry)
    assert _dirs(ws) != dirs_before
    tl.close()
    tl = timeline()  # a restart: the directories an entry made come back from the journal
    result = U.undo(tl, entry)
    assert result["ok"], result
    assert tree(ws) == before and _dirs(ws) == dirs_before


def test_a_directory_made_by_an_action_stays_while_someone_elses_file_is_in_it(timeline):
    ws = timeline.ws
    tl = timeline()
    entry = tl.begin("agent-1", "run", "mkdir -p gen && echo 1 > gen/out")
    bash(ws, "mkdir -p gen && echo 1 > gen/out")
    tl.end(entry)
    bash(ws, "echo mine > gen/users.txt")  # the user's file, after the action
    assert U.undo(tl, entry)["ok"]
    assert not (ws / "gen" / "out").exists() and (ws / "gen" / "users.txt").read_text() == "mine\n"


def test_retention_never_drops_a_pending_change_set(timeline):
    # Entries past the last `keep` go at the next start, but a change set still awaiting the user's keep or
    # revert stays, however old, with the contents its revert needs (the pack is compacted around it).
    ws = timeline.ws
    (ws / "f.txt").write_text("before\n")
    tl = timeline(review=True, keep=2)

    def run(script: str) -> int:
        entry = tl.begin("alice", "run", script)
        bash(ws, script)
        opened = tl.end(entry)
        assert opened is not None and opened.review == "pending"
        return entry

    held = run("echo after > f.txt")
    decided = [run(f"echo {i} > g{i}.txt") for i in range(3)]
    for entry in decided:
        assert U.decide(tl, entry, keep=True)["outcome"] == "accepted"
    tl.close()
    again = timeline(review=True, keep=2)
    assert sorted(again.entries) == [held, *decided[-2:]]  # the oldest kept set went, the pending one stayed
    assert [e.id for e in again.pending()] == [held]
    again.close()
    third = timeline(review=True, keep=2)  # and at every later start
    assert [e.id for e in third.pending()] == [held]
    res = U.decide(third, held, keep=False)
    assert res is not None and res["outcome"] == "rejected", res
    assert (ws / "f.txt").read_text() == "before\n" and (ws / "g0.txt").read_text() == "0\n"


def test_the_store_stays_under_history_max_mb_and_the_newest_entries_still_undo(timeline):
    # Issue 39: a small bound, many entries each writing 16 KiB that does not compress. The store never passes the
    # bound after an entry ends; the oldest entries are collected (listed, not undoable, and they say so), the
    # newest undo; what the workspace's files are now is always kept (it is the "before" of every next change).
    ws = timeline.ws
    limit = 256 * 1024
    (ws / "old.bin").write_bytes(os.urandom(16 * 1024))
    tl = timeline(max_bytes=limit)
    first = tl.begin("alice", "run", "rewrite old.bin")
    (ws / "old.bin").write_bytes(os.urandom(16 * 1024))
    tl.end(first)
    ids = [first]
    for i in range(40):
        entry = tl.begin("alice", "run", f"write f{i % 4}")
        (ws / f"f{i % 4}.bin").write_bytes(os.urandom(16 * 1024))
        tl.end(entry)
        ids.append(entry)
        assert tl.store.size <= limit, (i, tl.store.size)
    collected = [e for e in ids if tl.entries[e].collected]
    assert collected and collected == ids[: len(collected)]  # the oldest ones
    assert tl.entries[ids[0]].row(with_changes=False)["collected"] is True
    refused = U.undo(tl, first, merge=True)  # its before went; its after is old.bin now, so it is still kept
    assert not refused["ok"] and "history_max_mb" in refused["message"], refused
    newest = ws / "f3.bin"
    current = newest.read_bytes()
    done = U.undo(tl, ids[-1])
    assert done["ok"], done
    assert newest.read_bytes() != current and len(newest.read_bytes()) == 16 * 1024  # f3 as the entry before left it
    tl.close()
    again = timeline(max_bytes=limit)  # collected stays said after a restart (journal rewritten, then replayed)
    assert again.entries[ids[0]].collected and not again.entries[ids[-1]].collected

"""A file made in a new directory while a drain lists it is never lost (the race the CI run found in
tests/mcp/test_mcp_history.py: `mkdir -p gen && echo x > gen/o` recorded app.py but not gen/o once drains run while a
command still writes). The file is made exactly in the window between the drain's listing of the new directory and
its watch: before the fix, no event and no listing ever saw it."""

from __future__ import annotations

from oh.history import timeline as timeline_mod


def test_a_file_made_between_the_listing_and_the_watch_is_recorded(timeline, monkeypatch):
    tl = timeline()
    ws = timeline.ws  # type: ignore[attr-defined]
    entry = tl.begin("agent", "run", "mkdir -p gen && echo x > gen/o")
    (ws / "gen").mkdir()
    real_walk = timeline_mod.tree.walk
    made = []

    def walk_then_write(root, rel, ignores):
        listed = real_walk(root, rel, ignores)
        if rel == "gen" and not made:  # right after the first listing: the command writes its file
            (ws / "gen" / "o").write_text("x\n")
            made.append(True)
        return listed

    monkeypatch.setattr(timeline_mod.tree, "walk", walk_then_write)
    with tl.lock:
        tl._drain()  # the history thread's drain, while the command runs
    monkeypatch.setattr(timeline_mod.tree, "walk", real_walk)
    tl.end(entry)
    done = tl.entries[entry]
    assert made
    assert sorted(c.path for c in done.changes) == ["gen/o"], done.changes

"""oh.protocol.paths.within: the one containment rule, on the table the extension's tests run too."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from oh.protocol.paths import within, within_any

TABLE = json.loads((Path(__file__).resolve().parents[1] / "contract" / "path_within.json").read_text())["cases"]


@pytest.mark.parametrize("case", TABLE, ids=lambda c: f"{c['root']}|{c['path']}")
def test_table(case):
    assert within(case["path"], case["root"]) is case["within"]


def test_the_table_has_both_answers_and_the_edges():
    assert {c["within"] for c in TABLE} == {True, False}
    paths = " ".join(c["path"] + " " + c["root"] for c in TABLE)
    for edge in ("/.", "/..", "a/ ", "//"):
        assert edge in paths + " ", edge


def test_symlinks_are_resolved_by_the_caller(tmp_path):
    """Lexically a link inside the root is inside; what it points to is decided on realpath."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (outside / "back").symlink_to(root)
    assert within(str(root / "escape" / "f"), str(root))  # the string is inside ...
    assert not within(os.path.realpath(root / "escape" / "f"), os.path.realpath(root))  # ... the file is not
    assert not within(str(outside / "back"), str(root))
    assert within(os.path.realpath(outside / "back" / "f"), os.path.realpath(root))
    # A root that is itself a link: compare real with real.
    (tmp_path / "link-to-root").symlink_to(root)
    assert within(os.path.realpath(root / "x"), os.path.realpath(tmp_path / "link-to-root"))


@pytest.mark.parametrize("case", TABLE, ids=lambda c: f"{c['path']} in {c['root']}")
def test_within_any_gives_the_tables_answers(case):
    assert within_any([case["root"]])(case["path"]) is case["within"]


def test_within_any_is_any_of_its_roots():
    check = within_any(["/srv/a", "relative/root", "/home/u/ws/"])
    assert check("/srv/a/x") and check("/home/u/ws") and check("/home/u/ws/deep/f")
    assert not check("/srv/ab") and not check("relative/root/x") and not check("/home/u") and not check("x")
    assert within_any([])("/anything") is False

"""`oh.pathsearch.which` against the real `shutil.which`, on generated PATH layouts (files, directories,
non-executables, symlinks, dangling links, empty and repeated entries, relative entries, names with a slash)."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from oh.pathsearch import which

pytestmark = pytest.mark.skipif(os.name != "posix", reason="elsewhere which() is shutil.which itself")

NAMES = ("tool", "git", "a b", "x.sh", "dir", "link", "dangling", "plain")


def _layout(root, rng: random.Random) -> list[str]:
    dirs = []
    for i in range(rng.randint(1, 6)):
        d = root / f"d{i}"
        d.mkdir()
        dirs.append(str(d))
        for name in rng.sample(NAMES, rng.randint(0, len(NAMES))):
            kind = rng.choice(("exec", "noexec", "dir", "link", "dangling"))
            target = d / name
            if kind == "dir":
                target.mkdir()
                if rng.random() < 0.5:
                    target.chmod(0o755)
            elif kind == "link":
                real = root / f"real{i}-{name}"
                real.write_text("#!/bin/sh\n")
                real.chmod(rng.choice((0o755, 0o644)))
                target.symlink_to(real)
            elif kind == "dangling":
                target.symlink_to(root / "nowhere")
            else:
                target.write_text("#!/bin/sh\n")
                target.chmod(0o755 if kind == "exec" else 0o644)
    entries = dirs + rng.sample(dirs, rng.randint(0, len(dirs))) + rng.choice(([], [""], ["d0"], ["missing"]))
    rng.shuffle(entries)
    return entries


@pytest.mark.parametrize("seed", range(40))
def test_which_answers_as_shutil_does(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    entries = _layout(tmp_path, rng)
    monkeypatch.chdir(tmp_path)
    path = os.pathsep.join(entries)
    for name in (*NAMES, "absent", "d0/tool", "./d1/tool", str(tmp_path / "d0" / "git")):
        assert which(name, path=path) == shutil.which(name, path=path), (name, path)
        monkeypatch.setenv("PATH", path)
        assert which(name) == shutil.which(name), (name, path)


@pytest.mark.parametrize("path", ["", os.pathsep, None])
def test_which_with_an_empty_or_missing_path(monkeypatch, path):
    if path is None:
        monkeypatch.delenv("PATH", raising=False)
    else:
        monkeypatch.setenv("PATH", path)
    for name in ("sh", "true", "absent-program"):
        assert which(name) == shutil.which(name)

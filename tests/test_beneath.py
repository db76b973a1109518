"""oh.beneath: every shape of a symlink out of the root is refused, on both ways of opening (openat2 and the
O_NOFOLLOW walk, forced here), and symlinks that stay beneath the root are still followed (issue 36, item 4).

A real temp tree: ``outside/`` holds a secret and a file that must never change; ``root/`` is the workspace.
"""

from __future__ import annotations

import errno
import os

import pytest

from oh import beneath

SECRET = b"-----BEGIN OPENSSH PRIVATE KEY----- outside\n"


@pytest.fixture(params=["openat2", "walk"])
def way(request):
    if request.param == "openat2" and not beneath.uses_openat2():
        pytest.skip("this kernel has no openat2")
    beneath.force_walk(request.param == "walk")
    assert beneath.uses_openat2() == (request.param == "openat2")
    yield request.param
    beneath.force_walk(False)


@pytest.fixture
def tree(tmp_path):
    out = tmp_path / "outside"
    (out / ".ssh").mkdir(parents=True)
    (out / ".ssh" / "id_ed25519").write_bytes(SECRET)
    (out / ".bashrc").write_bytes(b"# the user's\n")
    root = tmp_path / "root"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_bytes(b"inside\n")
    return str(root), str(out)


def escape_shapes(root: str, out: str) -> dict[str, str]:
    """name -> symlink target: each leads out of ``root``."""
    depth = root.count("/")
    return {
        "absolute": out + "/.ssh",
        "dotdot": "../outside/.ssh",
        "deep-dotdot": "d/../../outside/.ssh",
        "proc-self-root": "/proc/self/root" + out + "/.ssh",
        "proc-relative": "../" * depth + "proc/self/root" + out + "/.ssh",
        "dangling-absolute": out + "/nothing-here",
        "dangling-dotdot": "../outside/nothing-here",
    }


def read(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "shape",
    ["absolute", "dotdot", "deep-dotdot", "proc-self-root", "proc-relative", "dangling-absolute", "dangling-dotdot"],
)
def test_a_symlinked_directory_out_of_the_root_is_refused(way, tree, shape):
    root, out = tree
    os.symlink(escape_shapes(root, out)[shape], os.path.join(root, "link"))
    with pytest.raises(beneath.Escape) as caught:
        read(beneath.open_at(root, "link/id_ed25519", os.O_RDONLY))
    assert caught.value.errno == errno.EXDEV and "leads outside" in str(caught.value)
    with pytest.raises(beneath.Escape):
        beneath.open_at(root, "link/new", os.O_WRONLY | os.O_CREAT, 0o600)
    with pytest.raises(beneath.Escape):
        beneath.open_dir(root, "link/a/b", create=True)
    assert sorted(os.listdir(out)) == [".bashrc", ".ssh"]
    assert os.listdir(os.path.join(out, ".ssh")) == ["id_ed25519"]


@pytest.mark.parametrize("shape", ["absolute", "dotdot", "proc-self-root", "dangling-absolute", "dangling-dotdot"])
def test_a_symlinked_file_out_of_the_root_is_refused(way, tree, shape):
    root, out = tree
    target = escape_shapes(root, out)[shape].replace("/.ssh", "/.ssh/id_ed25519").replace("nothing-here", ".bashrc")
    os.symlink(target, os.path.join(root, "key"))
    with pytest.raises(beneath.Escape):
        read(beneath.open_at(root, "key", os.O_RDONLY))
    with pytest.raises(beneath.Escape):
        beneath.open_at(root, "key", os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    with pytest.raises(beneath.Escape):
        beneath.stat_at(root, "key")
    assert open(os.path.join(out, ".bashrc"), "rb").read() == b"# the user's\n"


def test_dotdot_in_the_path_itself_cannot_climb_out(way, tree):
    root, _ = tree
    with pytest.raises(beneath.Escape):
        beneath.open_at(root, "d/../../outside/.bashrc", os.O_RDONLY)
    assert read(beneath.open_at(root, "d/../d/f.txt", os.O_RDONLY)) == b"inside\n"


def test_a_symlink_loop_is_eloop_not_a_hang(way, tree):
    root, _ = tree
    os.symlink("b", os.path.join(root, "a"))
    os.symlink("a", os.path.join(root, "b"))
    with pytest.raises(OSError) as caught:
        beneath.open_at(root, "a/x", os.O_RDONLY)
    assert caught.value.errno == errno.ELOOP and not isinstance(caught.value, beneath.Escape)


def test_symlinks_that_stay_inside_are_followed(way, tree):
    root, _ = tree
    os.symlink("d", os.path.join(root, "alias"))  # a directory
    os.symlink("d/f.txt", os.path.join(root, "f-link"))  # a file
    os.mkdir(os.path.join(root, "e"))
    os.symlink("../d", os.path.join(root, "e", "up"))  # ".." that stays inside
    assert read(beneath.open_at(root, "alias/f.txt", os.O_RDONLY)) == b"inside\n"
    assert read(beneath.open_at(root, "f-link", os.O_RDONLY)) == b"inside\n"
    assert read(beneath.open_at(root, "e/up/f.txt", os.O_RDONLY)) == b"inside\n"
    # O_NOFOLLOW still means "not the last component": ELOOP, as open(2) says
    with pytest.raises(OSError) as caught:
        beneath.open_at(root, "f-link", os.O_RDONLY | os.O_NOFOLLOW)
    assert caught.value.errno == errno.ELOOP
    # a dangling link inside: O_CREAT makes its target, inside
    os.symlink("d/made.txt", os.path.join(root, "to-be"))
    os.close(beneath.open_at(root, "to-be", os.O_WRONLY | os.O_CREAT, 0o600))
    assert os.path.isfile(os.path.join(root, "d", "made.txt"))


def test_the_helpers(way, tree):
    root, out = tree
    fd = beneath.open_dir(root, "x/y/z", create=True)
    os.close(fd)
    assert os.path.isdir(os.path.join(root, "x", "y", "z"))
    assert beneath.stat_at(root, "x/nothing") is None
    assert beneath.stat_at(root, "d/f.txt/deeper") is None  # ENOTDIR: nothing there
    st = beneath.stat_at(root, "d/f.txt")
    assert st is not None and st.st_size == 7
    assert beneath.stat_at(root, "").st_ino == os.stat(root).st_ino
    pfd, name = beneath.open_parent(root, "x/y/file")
    os.close(pfd)
    assert name == "file"
    with pytest.raises(IsADirectoryError):
        beneath.open_parent(root, "")
    os.symlink(out + "/.bashrc", os.path.join(root, "rc"))
    beneath.unlink_at(root, "rc")  # the link goes, never its target
    assert not os.path.lexists(os.path.join(root, "rc")) and os.path.exists(os.path.join(out, ".bashrc"))
    beneath.rmdir_at(root, "x/y/z")
    assert not os.path.exists(os.path.join(root, "x", "y", "z"))
    os.symlink("d", os.path.join(root, "alias"))
    assert beneath.listdir_at(root, "") == [("alias", True), ("d", True), ("x", True)]
    os.symlink(out, os.path.join(root, "away"))
    with pytest.raises(beneath.Escape):
        beneath.listdir_at(root, "away")
    with pytest.raises(FileNotFoundError):
        beneath.open_at(root, "missing/f", os.O_RDONLY)
    with pytest.raises(NotADirectoryError):
        beneath.open_at(root, "d/f.txt/x", os.O_RDONLY)


def test_escape_is_an_oh_error_and_an_oserror():
    from oh.errors import OhBaseError

    e = beneath.Escape("/w", "a/b")
    assert isinstance(e, OhBaseError) and isinstance(e, OSError) and e.errno == errno.EXDEV
    assert str(e) == "A symlink in /w/a/b leads outside /w"

"""`oh vscode install|uninstall|status` against fake editor CLIs that record their exact argv (one per
fork), and the pure parts of launcher/editorcli.py. The real code-server: tests/e2e/test_vscode_wheel.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oh.commands import vscode as cmd
from oh.commands._io import Streams, call
from oh.launcher import editorcli

from .fake_cli import FakeClis, make_vsix

FORKS = ["code", "code-insiders", "cursor", "windsurf", "codium", "code-server"]


@pytest.fixture
def clis(tmp_path: Path) -> FakeClis:
    return FakeClis(tmp_path / "fake")


def _run(run, **kw) -> tuple[int, str, str]:
    io = Streams.buffers()
    code = call(run, io, **kw)
    return code, io.out.getvalue(), io.err.getvalue()


def _find(clis: FakeClis):
    return lambda: editorcli.find_editors(str(clis.bin), locations={})


@pytest.mark.parametrize("fork", FORKS)
def test_install_passes_each_fork_its_exact_arguments(clis, tmp_path, fork):
    cli = clis.add(fork)
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    code, out, _ = _run(cmd.run_vscode_install, vsix=str(vsix), find=_find(clis))
    assert code == 0, out
    argvs = [c["argv"] for c in clis.calls()]
    assert argvs == [
        ["--list-extensions", "--show-versions"],  # what is there now
        ["--install-extension", str(vsix), "--force"],
        ["--list-extensions", "--show-versions"],  # verified, not assumed
    ]
    name = editorcli.kind_for(str(cli)).name
    assert f"✓ {name} ({cli}): installed oh-dev.oh-vscode 0.1.0 (was: not installed)" in out
    # idempotent: a second run lists and changes nothing
    code, out, _ = _run(cmd.run_vscode_install, vsix=str(vsix), find=_find(clis))
    assert code == 0 and "already has oh-dev.oh-vscode 0.1.0" in out
    assert [c["argv"] for c in clis.calls()][3:] == [["--list-extensions", "--show-versions"]]


def test_all_forks_at_once_with_dirs_and_dry_run(clis, tmp_path):
    for fork in FORKS:
        clis.add(fork, installed={"oh-dev.oh-vscode": "0.0.9"} if fork == "cursor" else {})
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    code, out, _ = _run(
        cmd.run_vscode_install,
        vsix=str(vsix),
        find=_find(clis),
        dry_run=True,
        extensions_dir="/x/exts",
        user_data_dir="/x/ud",
    )
    assert code == 0
    assert all(
        c["argv"] == ["--extensions-dir", "/x/exts", "--user-data-dir", "/x/ud", "--list-extensions", "--show-versions"]
        for c in clis.calls()
    )
    assert sorted(c["cli"] for c in clis.calls()) == sorted(FORKS)
    assert "would install 0.1.0 (now: 0.0.9)" in out and out.count("would install") == 6
    assert f"--extensions-dir /x/exts --user-data-dir /x/ud --install-extension {vsix} --force" in out
    assert all(clis.installed(f) in ({}, {"oh-dev.oh-vscode": "0.0.9"}) for f in FORKS)  # dry run changed nothing


def test_status_json_and_text(clis, tmp_path):
    clis.add("code", installed={"oh-dev.oh-vscode": "0.1.0", "ms-python.python": "2024.1.0"})
    clis.add("cursor", installed={"OH-DEV.oh-vscode": "0.0.9"})  # ids compare case-insensitively
    clis.add("windsurf")
    code, out, _ = _run(cmd.run_vscode_status, json_=True, find=_find(clis))
    data = json.loads(out)
    assert code == 0 and data["extension"] == "oh-dev.oh-vscode"
    assert [(e["editor"], e["installed_version"], e["state"]) for e in data["editors"]] == [
        ("VS Code", "0.1.0", "current" if data["bundled"]["version"] == "0.1.0" else "other version"),
        ("Cursor", "0.0.9", "other version"),
        ("Windsurf", None, "not installed"),
    ]
    code, out, _ = _run(cmd.run_vscode_status, find=_find(clis))
    assert (
        "Windsurf" in out
        and "not installed (`oh vscode install`)" in out
        and "0.0.9 (differs from oh's: `oh vscode install`)" in out
    )


def test_uninstall_is_idempotent(clis):
    clis.add("codium", installed={"oh-dev.oh-vscode": "0.1.0"})
    code, out, _ = _run(cmd.run_vscode_uninstall, find=_find(clis))
    assert code == 0 and "removed oh-dev.oh-vscode 0.1.0" in out
    assert clis.calls()[-1]["argv"] == ["--uninstall-extension", "oh-dev.oh-vscode"]
    code, out, _ = _run(cmd.run_vscode_uninstall, find=_find(clis))
    assert code == 0 and "is not installed" in out and len(clis.calls()) == 3  # listed, nothing removed


def test_a_failing_editor_is_reported_and_fails_the_command(clis, tmp_path, monkeypatch):
    clis.add("code")
    clis.add("cursor")
    monkeypatch.setenv("FAKE_CLI_FAIL", "cursor")
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    code, out, _ = _run(cmd.run_vscode_install, vsix=str(vsix), find=_find(clis))
    assert code == 1
    assert "✓ VS Code" in out and "✗ Cursor" in out and "exit 3: Error: something went wrong in the editor" in out
    assert "run it yourself to see the whole error:" in out


def test_no_editor_found_and_bad_editor_flag(clis, tmp_path):
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    code, _, err = _run(cmd.run_vscode_install, vsix=str(vsix), find=_find(clis))
    assert code == 7 and "no VS Code-family editor CLI found" in err and "--editor" in err
    code, _, err = _run(cmd.run_vscode_install, vsix=str(vsix), editors=[str(tmp_path / "nope")])
    assert code == 2 and "no such executable" in err
    code, _, err = _run(cmd.run_vscode_install, vsix=str(tmp_path / "missing.vsix"), editors=[str(clis.add("code"))])
    assert code == 2 and "not a readable VS Code extension package" in err


def test_the_real_oh_process_with_editor_flag(clis, tmp_path):
    """`oh vscode install --editor PATH` end to end in a real `oh` process (typer parsing, exit codes)."""
    cli = clis.add("my-code-wrapper")  # an unknown name: treated as VS Code's CLI under another name
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    env = {**os.environ, "PATH": str(clis.bin) + os.pathsep + "/usr/bin:/bin"}
    p = subprocess.run(
        [sys.executable, "-m", "oh", "vscode", "install", "--editor", str(cli), "--vsix", str(vsix)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    assert "installed oh-dev.oh-vscode 0.1.0" in p.stdout and clis.installed("my-code-wrapper") == {
        "oh-dev.oh-vscode": "0.1.0"
    }
    p = subprocess.run(
        [sys.executable, "-m", "oh", "vscode", "status", "--editor", "my-code-wrapper", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert p.returncode == 0 and json.loads(p.stdout)["editors"][0]["installed_version"] == "0.1.0"


# ---------------------------------------------------------------------------- pure parts
@pytest.mark.parametrize(
    "path, cli, scheme",
    [
        ("/usr/bin/code", "code", "vscode"),
        ("/x/code-insiders", "code-insiders", "vscode-insiders"),
        ("/x/cursor", "cursor", "cursor"),
        ("/x/windsurf", "windsurf", "windsurf"),
        ("/x/codium", "codium", "vscodium"),
        ("/x/code-server", "code-server", None),
        ("C:/VS Code/bin/code.cmd", "code", "vscode"),
        ("/x/Cursor.exe", "cursor", "cursor"),
    ],
)
def test_kind_for(path, cli, scheme):
    k = editorcli.kind_for(path)
    assert (k.cli, k.scheme) == (cli, scheme)


@pytest.mark.parametrize(
    "fork, expect",
    [
        ("code", [["W"], ["--open-url", "vscode://oh-dev.oh-vscode/connect?session=s1"]]),
        ("cursor", [["W"], ["--open-url", "cursor://oh-dev.oh-vscode/connect?session=s1"]]),
        ("windsurf", [["W"], ["--open-url", "windsurf://oh-dev.oh-vscode/connect?session=s1"]]),
        ("codium", [["W"], ["--open-url", "vscodium://oh-dev.oh-vscode/connect?session=s1"]]),
        ("code-insiders", [["W"], ["--open-url", "vscode-insiders://oh-dev.oh-vscode/connect?session=s1"]]),
        ("code-server", [["W"]]),  # no URI scheme: the session file alone connects it
    ],
)
def test_open_argv_uses_each_forks_scheme(fork, expect):
    ed = editorcli.Editor(editorcli.kind_for(f"/b/{fork}"), f"/b/{fork}")
    assert [argv[1:] for argv in editorcli.open_argv(ed, "W", "connect?session=s1", in_editor_terminal=True)] == expect
    assert all(argv[0] == f"/b/{fork}" for argv in editorcli.open_argv(ed, "W", "connect?session=s1"))
    # outside its own terminal `code-server DIR` would start a second server: nothing runs
    assert editorcli.open_argv(ed, "W", "connect?session=s1") == (
        [] if fork == "code-server" else editorcli.open_argv(ed, "W", "connect?session=s1", True)
    )


def test_parse_list_skips_noise():
    out = (
        "Extensions installed on SSH: host:\nms-python.python@2024.1.0\nOH-dev.oh-vscode@0.1.0\n\nwarning: something\n"
    )
    assert editorcli.parse_list(out) == {"ms-python.python": "2024.1.0", "oh-dev.oh-vscode": "0.1.0"}


def test_find_editors_dedupes_symlinks_and_uses_known_locations(clis, tmp_path):
    real = clis.add("code")
    (clis.bin / "code-insiders").symlink_to(real)  # same file under two names: listed once
    elsewhere = tmp_path / "opt" / "cursor"
    elsewhere.parent.mkdir()
    elsewhere.write_text("#!/bin/sh\n")
    elsewhere.chmod(0o755)
    found = editorcli.find_editors(str(clis.bin), locations={"cursor": (str(elsewhere),)})
    assert [(e.kind.cli, e.path) for e in found] == [("code", str(real)), ("cursor", str(elsewhere))]


def test_vsix_version_reads_the_manifest(tmp_path):
    assert editorcli.vsix_version(make_vsix(tmp_path / "a.vsix", "1.2.3")) == "1.2.3"
    (tmp_path / "bad.vsix").write_bytes(b"not a zip")
    with pytest.raises(ValueError):
        editorcli.vsix_version(tmp_path / "bad.vsix")


def test_vsix_version_needs_neither_zipfile_nor_json_and_sees_a_rebuilt_vsix(tmp_path):
    """`oh doctor` reads the bundled .vsix's version on every run: with zipimport (always loaded), not zipfile +
    json; a .vsix rebuilt at the same path (`oh vscode install` builds one) is read anew, not from a cache."""
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "1.2.3")
    code = (
        "import sys\nfrom oh.launcher import editorcli\nfirst = editorcli.vsix_version(sys.argv[1])\n"
        "loaded = sorted({'zipfile', 'json'} & set(sys.modules))\n"
        "sys.path.insert(0, sys.argv[2])\nfrom fake_cli import make_vsix\n"
        "from pathlib import Path\nmake_vsix(Path(sys.argv[1]), '10.20.30-rebuilt')\n"
        "print(first, editorcli.vsix_version(sys.argv[1]), loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(vsix), str(Path(__file__).parent)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "1.2.3 10.20.30-rebuilt []\n"


def test_doctor_names_oh_vscode_install(clis, monkeypatch):
    """`oh doctor`: each editor's oh extension against the bundled one; the fix is always `oh vscode install`."""
    from oh.commands import doctor
    from oh.launcher import signal

    monkeypatch.setattr(signal, "bundled_version", lambda: "0.1.0")
    monkeypatch.setenv("OH_CODE", str(clis.add("cursor")))
    checks = {c["check"]: c for c in doctor._vscode_checks()}
    assert checks["vscode Cursor"]["status"] == "warn" and checks["vscode Cursor"]["fix"] == "Run `oh vscode install`."
    assert checks["vscode extension"]["status"] == "fail" and "oh vscode install" in checks["vscode extension"]["fix"]
    monkeypatch.setenv("OH_CODE", str(clis.add("codium", installed={"oh-dev.oh-vscode": "0.0.9"})))
    checks = {c["check"]: c for c in doctor._vscode_checks()}
    assert (
        checks["vscode VSCodium"]["status"] == "warn"
        and "0.0.9, this oh ships 0.1.0" in checks["vscode VSCodium"]["detail"]
    )
    assert "vscode extension" not in checks  # one editor has it: no failure
    monkeypatch.setenv("OH_CODE", str(clis.bin / "missing"))
    checks = {c["check"]: c for c in doctor._vscode_checks()}
    assert checks["vscode editors"]["status"] == "warn" and "oh vscode install" in checks["vscode editors"]["fix"]


def test_an_install_into_extensions_dir_is_remembered_by_start_and_doctor(clis, tmp_path, monkeypatch):
    """Issue 30 item 15: after `oh vscode install --extensions-dir X`, the checks `oh start --runtime vscode` and
    `oh doctor` run (plain `--list-extensions`, which does not look in X) still find the extension there."""
    import asyncio

    from oh.launcher import signal
    from oh.ui.hints import install_hints

    cli = clis.add("code-server")
    exts = tmp_path / "exts"
    exts.mkdir()
    vsix = make_vsix(tmp_path / "oh-vscode.vsix", "0.1.0")
    monkeypatch.setenv("OH_CODE", str(cli))

    def seen() -> list:
        sync, live = signal.extension_states(), asyncio.run(signal.extension_states_async())
        assert sync == live  # `oh doctor` / the detached start's check, and the live view's
        return [s["installed_version"] for s in sync]

    code, out, _ = _run(cmd.run_vscode_install, vsix=str(vsix), find=_find(clis), extensions_dir=str(exts))
    assert code == 0 and "installed oh-dev.oh-vscode 0.1.0" in out
    assert clis.installed("code-server") == {}  # really elsewhere: the editor's own list does not have it
    assert seen() == ["0.1.0"] and install_hints(signal.extension_states(), "0.1.0") == []
    doctor = subprocess.run(
        [sys.executable, "-m", "oh", "doctor", "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
        timeout=60,
    )
    checks = {c["check"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert (
        checks["vscode code-server"]["status"] == "ok"
        and "oh extension 0.1.0" in checks["vscode code-server"]["detail"]
    )
    assert "vscode extension" not in checks  # no "not installed in any editor" failure
    code, out, _ = _run(cmd.run_vscode_status, json_=True, find=_find(clis))  # issue 42: said "not installed"
    rows = json.loads(out)["editors"]
    assert [e["installed_version"] for e in rows] == ["0.1.0"] and rows[0]["state"] != "not installed", out

    code, out, _ = _run(cmd.run_vscode_uninstall, find=_find(clis), extensions_dir=str(exts))
    assert code == 0 and "removed" in out
    assert seen() == [None]
    assert "is not installed in any editor" in install_hints(signal.extension_states(), "0.1.0")[0]

"""Programs oh runs itself are never the agent's (issue 36, item 2; docs/security.md §11.2).

Each planted program is a real executable that leaves a marker outside the sandbox when it runs; the tests
show oh running the system's program instead, and saying why it skipped the planted one."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
from pathlib import Path

import pytest

from oh import programs
from oh.protocol import sandbox as rules
from oh.protocol.sandbox_defaults import DEFAULT_WRITABLE, on_path, on_path_warning
from sandboxed import needs_bwrap

SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@pytest.fixture(autouse=True)
def fresh():
    programs.reset()
    yield
    programs.reset()


def plant(directory: Path, name: str, marker: Path) -> Path:
    """An executable ``name`` in ``directory`` that touches ``marker`` and then does what the real one does."""
    directory.mkdir(parents=True, exist_ok=True)
    real = "/usr/bin/" + name
    p = directory / name
    p.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexec {real} "$@"\n')
    p.chmod(p.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return p


def test_a_program_in_a_distrusted_directory_is_skipped_and_the_reason_kept(tmp_path):
    ws = tmp_path / "ws"
    planted = plant(ws / ".venv" / "bin", "git", tmp_path / "marker")
    path = f"{planted.parent}:{SYSTEM_PATH}"
    assert programs.find("git", path=path) == str(planted)  # nothing distrusted yet: PATH's first
    programs.distrust(str(ws))
    found = programs.find("git", path=path)
    assert found is not None and not found.startswith(str(ws)), found
    assert str(ws) in programs.refusals["git"] and "sandbox can write" in programs.refusals["git"]


def test_a_symlink_into_a_distrusted_directory_is_skipped(tmp_path):
    ws = tmp_path / "ws"
    planted = plant(ws / "bin", "rg", tmp_path / "marker")
    trusted = tmp_path / "trusted"
    trusted.mkdir()
    (trusted / "rg").symlink_to(planted)
    programs.distrust(str(ws))
    found = programs.find("rg", path=f"{trusted}:{SYSTEM_PATH}")
    assert found is None or os.path.realpath(found) != str(planted)


def test_relative_path_entries_are_never_searched(tmp_path, monkeypatch):
    plant(tmp_path / "bin", "git", tmp_path / "marker")
    monkeypatch.chdir(tmp_path)
    found = programs.find("git", path=f"bin:.:{SYSTEM_PATH}")
    assert found is not None and os.path.isabs(found) and not found.startswith(str(tmp_path))
    assert programs.safe_path(f"bin::{SYSTEM_PATH}") == SYSTEM_PATH


def test_the_env_for_oh_programs_has_no_distrusted_directory(tmp_path):
    ws = tmp_path / "ws"
    (ws / ".venv" / "bin").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(ws / ".venv" / "bin")
    programs.distrust(str(ws), "~/.cache")
    env = programs.env({"PATH": f"{ws}/.venv/bin:{link}:{os.path.expanduser('~/.cache/bin')}:{SYSTEM_PATH}"})
    assert env["PATH"] == SYSTEM_PATH


def test_a_later_distrust_drops_an_answer_kept_before(tmp_path):
    shims = tmp_path / "shims"
    planted = plant(shims, "python3", tmp_path / "marker")
    path = f"{shims}:{SYSTEM_PATH}"
    assert programs.find("python3", path=path) == str(planted)
    programs.distrust(str(shims))
    assert programs.find("python3", path=path) != str(planted)


def test_an_absolute_name_in_a_distrusted_directory_is_refused(tmp_path):
    planted = plant(tmp_path / "ws", "bash", tmp_path / "marker")
    programs.distrust(str(tmp_path / "ws"))
    assert programs.find(str(planted)) is None
    assert "sandbox can write" in programs.why_untrusted(str(planted))
    assert programs.why_untrusted("/usr/bin/git") == ""


def test_the_sandbox_distrusts_the_workspace_roots_and_writable_caches(tmp_path):
    from oh.runtimes.local.sandbox import Sandbox

    ws, root = tmp_path / "ws", tmp_path / "root"
    ws.mkdir()
    root.mkdir()
    Sandbox(rules.Spec(writable=("~/.cache", "/opt/cachey")), workspace=str(ws), roots=(str(root),))
    got = programs.distrusted()
    for want in (str(ws), str(root), os.path.realpath(os.path.expanduser("~/.cache")), "/opt/cachey"):
        assert want in got, (want, got)


# ------------------------------------------------------------------------------ the helpers, each with a real effect
def test_history_git_runs_the_system_git_not_the_workspace_venvs(tmp_path, monkeypatch):
    """A user who started oh from an activated workspace venv: the agent plants `.venv/bin/git`; the history
    recorder's `git check-ignore` (and every git of history) runs /usr/bin/git."""
    from oh.history import tree

    ws, marker = tmp_path / "ws", tmp_path / "marker"
    ws.mkdir()
    assert os.system(f"git init -q {ws}") == 0
    plant(ws / ".venv" / "bin", "git", marker)
    monkeypatch.setenv("PATH", f"{ws}/.venv/bin:{os.environ['PATH']}")
    programs.distrust(str(ws))
    ignores = tree.Ignores(str(ws), store_ignored=False)
    assert ignores.git
    ignores.check_new(["new.txt"])
    assert not marker.exists(), marker.read_text()


def test_symbols_fallback_runs_the_system_rg_not_a_planted_one(tmp_path, monkeypatch):
    from oh.protocol import actions
    from oh.protocol.events import parse_action
    from oh.runtimes.local import knowledge

    if not os.path.exists("/usr/bin/rg"):
        pytest.skip("no /usr/bin/rg here")
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    ws.mkdir()
    (ws / "a.py").write_text("def greet():\n    pass\n")
    shims = tmp_path / "home" / ".cache" / "shims"  # a directory the sandbox can write, on the user's PATH
    plant(shims, "rg", marker)
    monkeypatch.setenv("PATH", f"{shims}:{os.environ['PATH']}")
    programs.distrust(str(ws), str(tmp_path / "home" / ".cache"))
    action = parse_action({**actions.symbols("greet"), "id": 1})
    obs = asyncio.run(knowledge.symbols_by_ripgrep(action, [str(ws)]))
    assert not marker.exists(), marker.read_text()
    assert "greet" in str(obs)


def test_the_bubblewrap_probe_refuses_a_bwrap_the_sandbox_can_write(tmp_path):
    from oh.runtimes import bwrapcheck

    cache, marker = tmp_path / "cache", tmp_path / "marker"
    planted = plant(cache / "bin", "bwrap", marker)
    programs.distrust(str(cache))
    found = bwrapcheck.start("", path=str(planted.parent)).result()
    assert not found.ok and "sandbox can write" in found.problem, found
    named = bwrapcheck.start(str(planted)).result()
    assert not named.ok and "sandbox can write" in named.problem, named
    if os.path.exists("/usr/bin/bwrap"):
        both = bwrapcheck.start("", path=f"{planted.parent}:{SYSTEM_PATH}").result()
        assert both.bwrap != str(planted)
    assert not marker.exists(), marker.read_text()


def test_ensures_interpreter_probe_takes_no_planted_python(tmp_path, monkeypatch):
    """`ensure`'s interpreter probe runs python3 outside the sandbox: never one from a writable directory."""
    ws, marker = tmp_path / "ws", tmp_path / "marker"
    planted = plant(ws / ".venv" / "bin", "python3", marker)
    monkeypatch.setenv("PATH", f"{planted.parent}:{os.path.dirname(sys.executable)}:{SYSTEM_PATH}")
    programs.distrust(str(ws))
    from oh.runtimes.ensure import EnsureService

    svc = EnsureService(None, str(ws), new_id=lambda: 1)  # type: ignore[arg-type]
    real, version = asyncio.run(svc._probe("python3", ["-c", "import sys;print(sys.executable);print(1)"]))
    assert real is not None and not real.startswith(str(ws)), real
    assert not marker.exists(), marker.read_text()


# ------------------------------------------------------------------------------ item 2: the writable defaults
TYPICAL_PATH = [
    "~/.local/bin",
    "~/bin",
    "~/.pyenv/shims",
    "~/.pyenv/bin",
    "~/.cargo/bin",
    "~/go/bin",
    "~/.yarn/bin",
    "~/.config/yarn/global/node_modules/.bin",
    "~/.local/share/pnpm",
    "~/.npm-global/bin",
    "~/.nvm/versions/node/v20.11.0/bin",
    "~/.volta/bin",
    "~/.bun/bin",
    "~/.deno/bin",
    "~/.rbenv/shims",
    "~/.asdf/shims",
    "~/.local/share/mise/shims",
    "~/.sdkman/candidates/java/current/bin",
    "~/.poetry/bin",
    "~/.dotnet/tools",
    "/usr/local/bin",
    "/usr/bin",
    "/bin",
]


def test_no_default_writable_entry_is_or_holds_a_directory_on_a_typical_path():
    home = "/home/u"
    hits = on_path(DEFAULT_WRITABLE, ":".join(p.replace("~", home, 1) for p in TYPICAL_PATH), home)
    assert hits == [], hits
    for entry in DEFAULT_WRITABLE:
        parts = entry.split("/")
        assert not {"bin", "shims", ".bin"} & set(parts), entry


def test_no_default_writable_entry_holds_executables_here():
    """On this machine, whatever of the defaults exists holds no executable file at its top (a bin directory)."""
    for entry in DEFAULT_WRITABLE:
        d = os.path.expanduser(entry)
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            p = os.path.join(d, name)
            assert not (os.path.isfile(p) and os.access(p, os.X_OK)), p


def test_a_user_added_bin_directory_is_said_plainly():
    home = "/home/u"
    hits = on_path(["~/.pyenv", "~/.cache"], f"{home}/.pyenv/shims:/usr/bin", home)
    assert hits == [("~/.pyenv", f"{home}/.pyenv/shims")]
    said = on_path_warning(hits)
    assert "runs as you" in said and "~/.pyenv" in said


def test_oh_doctor_warns_about_a_writable_directory_on_path(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from oh.commands.doctorview import _writable_check

    monkeypatch.setenv("PATH", f"{tmp_path}/shims:/usr/bin")
    s = SimpleNamespace(sandbox="workspace-write", sandbox_writable=[str(tmp_path / "shims")])
    got = _writable_check(s)
    assert got["status"] == "warn" and "runs as you" in got["detail"], got
    s.sandbox_writable = list(DEFAULT_WRITABLE)
    assert _writable_check(s)["status"] == "ok"


# ------------------------------------------------------------------------------ end to end: a real backend
PLANT = (
    "mkdir -p .venv/bin && for p in git rg python3; do "
    'printf \'#!/bin/sh\\necho "$0" >> %s\\nexec /usr/bin/%s "$@"\\n\' {marker} $p > .venv/bin/$p; '
    "chmod +x .venv/bin/$p; done; ls .venv/bin"
)


@needs_bwrap
def test_a_backend_started_from_an_activated_venv_runs_none_of_what_the_agent_plants_there(oh):
    """The user activated the workspace's venv and ran `oh start`: the agent plants git, rg and python3 in
    `.venv/bin` from its sandbox; the backend's history (git check-ignore), the `symbols` fallback (rg) run
    the system's programs: the marker (outside the sandbox, only the planted programs write it) stays absent."""
    from oh.client.aio import Client
    from oh.protocol import actions

    marker = oh.outside / "marker"
    oh.env["PATH"] = f"{oh.workspace}/.venv/bin:{oh.env['PATH']}"
    oh.env["VIRTUAL_ENV"] = f"{oh.workspace}/.venv"
    (oh.workspace / "a.py").write_text("def greet():\n    pass\n")
    oh.start("--history")
    sess = oh.session()

    async def agent() -> tuple[str, str]:
        async with await Client.connect(sess["url"], sess["token"], name="planter") as c:
            planted = await c.run(PLANT.format(marker=marker), timeout=60)
            assert "git" in planted.content and planted.exit_code == 0, planted.content
            made = await c.run("echo hi > new.txt && mkdir -p d && echo x > d/y.txt", timeout=60)
            assert made.exit_code == 0, made.content
            found = await c.send(actions.symbols("greet"), timeout=60)
            return planted.content, str(found.content)

    _, symbols = asyncio.run(agent())
    assert "greet" in symbols
    history = json.loads(oh("history", "--json").stdout)["entries"]
    assert any(e["kind"] == "run" and e["created"] >= 1 for e in history), history
    assert not marker.exists(), marker.read_text()

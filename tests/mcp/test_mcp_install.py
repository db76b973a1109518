"""`oh mcp install CLIENT`: real `oh` processes writing into a temporary HOME (merge, idempotent, dry run)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

tomlkit = pytest.importorskip("tomlkit")

OTHER = {"command": "npx", "args": ["-y", "other-server"], "env": {"TOKEN": "keep-me"}}


def _oh_exe() -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "oh")
    assert os.access(exe, os.X_OK), "tests run from the project's venv, which has the `oh` script"
    return exe


def _install(oh, *args, cwd=None, check=0):
    # `python -m oh` has no `oh` in argv[0]: the installer then finds the `oh` next to the interpreter
    return oh("mcp", "install", *args, cwd=cwd, check=check)


def _assert_idempotent(oh, path: Path, *args):
    before = path.read_bytes()
    p = _install(oh, *args)
    assert "nothing changed" in p.stdout and path.read_bytes() == before


@pytest.mark.parametrize("scope", ["user", "project"])
def test_claude_merges_into_existing_config(oh, scope):
    path = oh.user_home / ".claude.json" if scope == "user" else oh.workspace / ".mcp.json"
    path.write_text(
        json.dumps(
            {"numStartups": 7, "projects": {"/x": {"allowedTools": []}}, "mcpServers": {"other": OTHER}}, indent=2
        )
    )
    os.chmod(path, 0o600)
    p = _install(oh, "claude", "--scope", scope)
    assert str(path) in p.stdout
    data = json.loads(path.read_text())
    assert (
        data["numStartups"] == 7
        and data["projects"] == {"/x": {"allowedTools": []}}
        and data["mcpServers"]["other"] == OTHER
    )
    entry = data["mcpServers"]["oh"]
    assert entry == {"type": "stdio", "command": _oh_exe(), "args": ["mcp"], "env": {}}
    assert os.path.isabs(entry["command"])
    assert path.stat().st_mode & 0o777 == 0o600  # the user's mode is kept
    _assert_idempotent(oh, path, "claude", "--scope", scope)


def test_codex_keeps_toml_comments_and_other_servers(oh):
    path = oh.user_home / ".codex" / "config.toml"
    path.parent.mkdir()
    original = (
        '# my settings\nmodel = "o4"  # keep this comment\n\n[mcp_servers.other]\ncommand = "npx"\nargs = ["-y", '
        '"other"]\n'
    )
    path.write_text(original)
    _install(oh, "codex")
    text = path.read_text()
    assert text.startswith(original.rstrip("\n"))  # untouched, comments included
    doc = tomlkit.parse(text)
    assert doc["model"] == "o4" and doc["mcp_servers"]["other"]["command"] == "npx"
    assert doc["mcp_servers"]["oh"]["command"] == _oh_exe() and list(doc["mcp_servers"]["oh"]["args"]) == ["mcp"]
    _assert_idempotent(oh, path, "codex")

    # a user's own keys on our entry (timeouts, env) survive a re-install that changes the command
    path.write_text(text.replace(f'command = "{_oh_exe()}"', 'command = "/old/oh"') + "tool_timeout_sec = 600\n")
    _install(oh, "codex")
    entry = tomlkit.parse(path.read_text())["mcp_servers"]["oh"]
    assert entry["command"] == _oh_exe() and entry["tool_timeout_sec"] == 600


def test_codex_forwards_oh_directories_and_keeps_the_users_env_vars(oh):
    """Codex gives a stdio server only HOME, PATH & co.: without env_vars, `oh mcp` under Codex looked for
    backends in the default directories, not in $OH_HOME, and answered NO_BACKEND (seen with codex 0.169)."""
    path = oh.user_home / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(f'[mcp_servers.oh]\ncommand = "{_oh_exe()}"\nargs = ["mcp"]\nenv_vars = ["MY_VAR", "OH_HOME"]\n')
    _install(oh, "codex")  # an entry from before env_vars: upgraded, the user's own variable kept
    entry = tomlkit.parse(path.read_text())["mcp_servers"]["oh"]
    assert list(entry["env_vars"]) == ["OH_HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "MY_VAR"]
    _assert_idempotent(oh, path, "codex")


def test_codex_respects_codex_home(oh, tmp_path):
    home = tmp_path / "codexhome"
    oh.env["CODEX_HOME"] = str(home)
    _install(oh, "codex")
    assert tomlkit.parse((home / "config.toml").read_text())["mcp_servers"]["oh"]["args"] == ["mcp"]


@pytest.mark.parametrize("scope", ["user", "project"])
def test_gemini_and_cursor(oh, scope):
    base = oh.user_home if scope == "user" else oh.workspace
    gemini = base / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    gemini.write_text(json.dumps({"theme": "Dracula", "mcpServers": {"other": OTHER}}))
    _install(oh, "gemini", "--scope", scope)
    data = json.loads(gemini.read_text())
    assert data["theme"] == "Dracula" and data["mcpServers"]["other"] == OTHER
    assert data["mcpServers"]["oh"] == {"command": _oh_exe(), "args": ["mcp"]}
    _assert_idempotent(oh, gemini, "gemini", "--scope", scope)

    _install(oh, "cursor", "--scope", scope)  # no file yet: created, private
    cursor = base / ".cursor" / "mcp.json"
    assert json.loads(cursor.read_text()) == {
        "mcpServers": {"oh": {"command": _oh_exe(), "args": ["mcp", "--workspace", "${workspaceFolder}"]}}
    }
    assert cursor.stat().st_mode & 0o777 == 0o600
    _assert_idempotent(oh, cursor, "cursor", "--scope", scope)


def test_vscode_user_and_workspace_files(oh, tmp_path):
    _install(oh, "vscode", "--scope", "project")
    ws = json.loads((oh.workspace / ".vscode" / "mcp.json").read_text())
    assert ws == {
        "servers": {"oh": {"type": "stdio", "command": _oh_exe(), "args": ["mcp", "--workspace", "${workspaceFolder}"]}}
    }

    user = tmp_path / "xdg-config" / "Code" / "User" / "mcp.json"  # the fixture's XDG_CONFIG_HOME
    user.parent.mkdir(parents=True)
    user.write_text(json.dumps({"servers": {"other": OTHER}, "inputs": [{"id": "key", "type": "promptString"}]}))
    _install(oh, "vscode")
    data = json.loads(user.read_text())
    assert (
        data["inputs"] == [{"id": "key", "type": "promptString"}]
        and data["servers"]["other"] == OTHER
        and "oh" in data["servers"]
    )
    _assert_idempotent(oh, user, "vscode")


def test_dry_run_writes_nothing_and_print_gives_the_one_liner(oh):
    path = oh.workspace / ".mcp.json"
    p = _install(oh, "claude", "--scope", "project", "--dry-run")
    assert not path.exists()
    assert (
        '"mcpServers"' in p.stdout and f'"command": "{_oh_exe()}"' in p.stdout and p.stdout.startswith("--- /dev/null")
    )

    p = _install(oh, "claude", "--print")
    assert p.stdout.strip() == f"claude mcp add --scope user oh -- {_oh_exe()} mcp"
    # Codex forwards only a few variables to servers: the one-liner carries oh's directories (set by the fixture)
    env = (
        f"--env OH_HOME={oh.home} --env XDG_CONFIG_HOME={oh.tmp / 'xdg-config'} --env "
        f"XDG_STATE_HOME={oh.tmp / 'xdg-state'}"
    )
    assert (
        _install(oh, "codex", "--print", "--name", "myoh").stdout.strip()
        == f"codex mcp add myoh {env} -- {_oh_exe()} mcp"
    )
    assert (
        _install(oh, "gemini", "--print", "--scope", "project").stdout.strip()
        == f"gemini mcp add --scope project oh {_oh_exe()} mcp"
    )
    vs = _install(oh, "vscode", "--print").stdout.strip()
    assert vs.startswith("code --add-mcp ") and json.loads(vs.split(" ", 2)[2].strip("'"))["command"] == _oh_exe()
    assert not any(oh.user_home.iterdir())  # nothing written anywhere

    _install(oh, "claude", "--scope", "project", "--start")
    assert json.loads(path.read_text())["mcpServers"]["oh"]["args"] == ["mcp", "--start"]


def test_refuses_to_rewrite_what_it_cannot_parse(oh):
    path = oh.workspace / ".vscode" / "mcp.json"
    path.parent.mkdir()
    jsonc = '{\n  // my servers\n  "servers": {}\n}\n'
    path.write_text(jsonc)
    p = _install(oh, "vscode", "--scope", "project", check=1)
    assert "not plain JSON" in p.stderr and '"oh"' in p.stderr  # shows the entry to add by hand
    assert path.read_text() == jsonc

    codex = oh.user_home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text("this is = = not toml\n")
    p = _install(oh, "codex", check=1)
    assert "not valid TOML" in p.stderr and codex.read_text() == "this is = = not toml\n"


def test_bad_client_or_scope_is_a_usage_error(oh):
    p = _install(oh, "emacs", check=2)
    assert "unknown client 'emacs'" in p.stderr and "claude" in p.stderr
    p = _install(oh, "claude", "--scope", "global", check=2)
    assert "unknown scope" in p.stderr


@pytest.mark.parametrize(
    ("client", "step"), [("claude", "approve"), ("gemini", "trust this folder"), ("codex", "required = true")]
)
def test_project_scope_says_what_the_client_asks_before_it_starts_the_server(oh, client, step):
    """A project-scope entry stays inert until the user approves/trusts it in the client: the install says so;
    a user-scope install does not need it."""
    assert step in _install(oh, client, "--scope", "project").stdout
    assert step not in _install(oh, client).stdout


# issue 18 item 6: symlinks and read-only configs
def test_project_scope_never_writes_through_a_symlink(oh):
    user = oh.user_home / ".claude.json"
    private = '{"oauthAccount": {"email": "me@example.com"}, "mcpServers": {}}\n'
    user.write_text(private)
    link = oh.workspace / ".mcp.json"
    link.symlink_to(user)
    p = _install(oh, "claude", "--scope", "project", check=1)
    assert f"{link} is a symlink to {user}" in p.stderr and "--scope user" in p.stderr and '"oh"' in p.stderr
    assert link.is_symlink() and user.read_text() == private  # neither the link nor its target changed
    # a symlinked directory is the same thing: .vscode -> elsewhere
    elsewhere = oh.tmp / "shared-vscode"
    elsewhere.mkdir()
    (oh.workspace / ".vscode").symlink_to(elsewhere)
    p = _install(oh, "vscode", "--scope", "project", check=1)
    assert f"{oh.workspace / '.vscode'} is a symlink to {elsewhere}" in p.stderr
    assert list(elsewhere.iterdir()) == []


def test_user_scope_writes_a_symlinks_target_and_keeps_its_mode(oh):
    dotfiles = oh.tmp / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude.json"
    target.write_text('{"numStartups": 3}\n')
    os.chmod(target, 0o640)
    link = oh.user_home / ".claude.json"
    link.symlink_to(target)
    p = _install(oh, "claude")
    assert f"{target} (the target of the symlink {link}): added" in p.stdout
    assert link.is_symlink() and os.readlink(link) == str(target)
    data = json.loads(target.read_text())
    assert data["numStartups"] == 3 and data["mcpServers"]["oh"]["command"] == _oh_exe()
    assert target.stat().st_mode & 0o777 == 0o640
    assert [f.name for f in dotfiles.iterdir()] == ["claude.json"]  # no temporary file left behind
    _assert_idempotent(oh, target, "claude")


@pytest.mark.parametrize("scope", ["user", "project"])
def test_a_read_only_config_is_refused_with_the_reason(oh, scope):
    path = oh.user_home / ".claude.json" if scope == "user" else oh.workspace / ".mcp.json"
    path.write_text('{"mcpServers": {}}\n')
    os.chmod(path, 0o444)
    p = _install(oh, "claude", "--scope", scope, check=1)
    assert f"{path} is read-only (mode 0444)" in p.stderr and "chmod u+w" in p.stderr
    assert path.read_text() == '{"mcpServers": {}}\n' and path.stat().st_mode & 0o777 == 0o444

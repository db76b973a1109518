"""`oh config` and `oh token` called in-process (their run functions); rotation against a real backend.

test_config.py and test_token.py keep the real-process paths: a real keyring backend chosen by
PYTHON_KEYRING_BACKEND, `oh start` reading the settings, exit codes of `oh` itself.
"""

from __future__ import annotations

import hashlib
import json
import stat
import tomllib

import pytest

from oh.commands import config as config_cmd
from oh.commands import token as token_cmd

from .inprocess import here, invoke  # noqa: F401 - `here` is a fixture


def fp(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:8]


def test_config_set_get_unset_and_path(here):
    r = invoke(config_cmd.run_set, key="editor-timeout", value="12")
    path = here.home / "config.toml"
    assert r.code == 0 and r.out == f"editor_timeout = 12  ({path})\n"
    assert tomllib.loads(path.read_text()) == {"editor_timeout": 12.0}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert invoke(config_cmd.run_get, key="editor_timeout").out == "12\n"
    assert invoke(config_cmd.run_path).out == f"{path}\n"
    r = invoke(config_cmd.run_unset, key="editor_timeout")
    assert r.code == 0 and r.out.startswith("editor_timeout unset (")
    r = invoke(config_cmd.run_unset, key="editor_timeout")
    assert r.code == 0 and r.out == "editor_timeout is not set in the file (effective: default)\n"


def test_config_set_notes_an_environment_override(here, monkeypatch):
    monkeypatch.setenv("OH_PORT", "7000")
    r = invoke(config_cmd.run_set, key="port", value="7100")
    assert r.code == 0 and "OH_PORT is set in the environment and overrides this value" in r.err
    data = json.loads(invoke(config_cmd.run_list, show_origin=True, json_=True).out)
    assert data["port"] == {"value": 7000, "origin": "env", "source": "OH_PORT"}


def test_config_refusals_exit_2_and_write_nothing(here):
    r = invoke(config_cmd.run_set, key="prot", value="80")
    assert r.code == 2 and "Did you mean 'port'" in r.err
    r = invoke(config_cmd.run_set, key="port", value="123456")
    assert r.code == 2 and "0 to 65535" in r.err and "Allowed:" not in r.err  # said once (issue 30 item 12)
    r = invoke(config_cmd.run_unset, key="nope")
    assert r.code == 2 and "unknown setting 'nope'" in r.err
    assert not (here.home / "config.toml").exists()


def test_config_list_reports_a_broken_file_with_exit_2(here):
    here.home.mkdir(mode=0o700)
    (here.home / "config.toml").write_text("port = [oops\n")
    r = invoke(config_cmd.run_list)
    assert r.code == 2 and "config.toml" in r.err and "oh config edit" in r.err


def test_config_edit_runs_the_editor_then_validates(here, monkeypatch):
    monkeypatch.setenv("EDITOR", "my-editor --wait")
    seen = []

    def editor(argv):  # the injected editor: writes what a user would type
        seen.append(argv)
        with open(argv[-1], "a") as f:
            f.write('port = "abc"\n')
        return 0

    r = invoke(config_cmd.run_edit, call_editor=editor)
    target = here.home / "config.toml"
    assert seen == [
        ["my-editor", "--wait", str(here.home / "config.edit.toml")]
    ]  # a copy: config.toml changes only when valid
    assert r.code == 2 and "0 to 65535" in r.err
    r = invoke(config_cmd.run_edit, call_editor=lambda argv: open(argv[-1], "w").write("port = 9000\n") and 0)
    assert (r.code, r.out) == (0, f"{target}: valid\n") and target.read_text() == "port = 9000\n"
    r = invoke(config_cmd.run_edit, call_editor=lambda argv: 3)
    assert r.code == 1 and "the editor exited with status 3" in r.err and target.read_text() == "port = 9000\n"
    # the rejected edit went on into the valid config.toml (issue 30 item 15): nothing left behind
    assert sorted(p.name for p in here.home.glob("config*")) == ["config.toml"]


def test_config_edit_that_ends_invalid_leaves_the_file_as_it_was(here, monkeypatch):
    monkeypatch.setenv("EDITOR", "vi")
    target = here.home / "config.toml"
    invoke(config_cmd.run_set, key="port", value="7100")
    before = target.read_text()

    def broken(argv):
        with open(argv[-1], "a") as f:
            f.write("port = [oops\n")
        return 0

    r = invoke(config_cmd.run_edit, call_editor=broken)
    rejected = here.home / "config.rejected.toml"
    assert (
        r.code == 2
        and "your edit of config.toml is not valid TOML" in r.err  # not config.toml, unchanged (item 15)
        and f"{target} is not valid TOML" not in r.err
        and f"{target} is unchanged; your edit is kept in {rejected}" in r.err
    )
    assert target.read_text() == before and rejected.read_text() == before + "port = [oops\n"
    assert invoke(config_cmd.run_get, key="port").out == "7100\n"  # the settings still load
    # asked to edit again (a terminal): the second attempt fixes it and is saved
    attempts = []

    def fixes_it_the_second_time(argv):
        attempts.append(open(argv[-1]).read())
        with open(argv[-1], "w") as f:
            f.write("port = [oops\n" if len(attempts) == 1 else "port = 7200\n")
        return 0

    r = invoke(config_cmd.run_edit, call_editor=fixes_it_the_second_time, ask=lambda q: True)
    assert r.code == 0 and len(attempts) == 2 and attempts[1] == "port = [oops\n"  # the same copy, reopened
    assert target.read_text() == "port = 7200\n"


@pytest.mark.parametrize("editor", ["nonexistent-editor-xyz", "code-not-installed-xyz --wait"])
def test_config_edit_with_an_editor_that_is_not_installed(here, monkeypatch, editor):
    monkeypatch.setenv("EDITOR", editor)
    r = invoke(config_cmd.run_edit)  # the real subprocess.call
    name = editor.split()[0]
    assert r.code == 1 and f"cannot run the editor '{name}' ($EDITOR)" in r.err and "export EDITOR=nano" in r.err, r
    assert "Traceback" not in r.err and not (here.home / "config.edit.toml").exists()


def test_config_edit_without_an_editor_says_how_to_set_one(here):
    r = invoke(config_cmd.run_edit, call_editor=lambda argv: 0)
    assert r.code == 2 and "neither $VISUAL nor $EDITOR is set" in r.err and "export EDITOR=nano" in r.err


def test_token_show_before_and_after_rotate(here):
    info = json.loads(invoke(token_cmd.run_show, json_=True).out)
    assert info["stored"] is False and info["storage"] == "file" and info["fingerprint"] is None
    r = invoke(token_cmd.run_show, reveal=True)
    assert r.code == 1 and r.out == "" and "no token stored yet" in r.err
    rotated = json.loads(invoke(token_cmd.run_rotate, json_=True).out)
    token = (here.home / "token").read_text().strip()
    assert rotated["fingerprint"] == fp(token) and rotated["updated"] == []
    assert invoke(token_cmd.run_show, reveal=True).out == token + "\n"
    text = invoke(token_cmd.run_show).out
    assert f"fingerprint  {fp(token)}" in text and token not in text


def test_token_rotate_switches_a_running_backend(here):
    info = here.start("local")
    before = here.session(info["instance_id"])["token"]
    r = invoke(token_cmd.run_rotate)
    assert r.code == 0, r
    assert "1 running backend(s) updated" in r.out
    after = here.session(info["instance_id"])["token"]
    assert after != before and after == (here.home / "token").read_text().strip()
    shown = json.loads(invoke(token_cmd.run_show, json_=True).out)
    assert shown["backends"] == [{"instance_id": info["instance_id"], "fingerprint": fp(after), "same": True}]


def test_token_show_explains_a_backend_started_with_another_token(here, monkeypatch):
    invoke(token_cmd.run_rotate)
    info = here.start("local")
    monkeypatch.setenv("OH_TOKEN", "from-env-123")
    r = invoke(token_cmd.run_show)
    assert r.code == 0 and f"backend      {info['instance_id']} uses fingerprint" in r.out
    assert "OH_TOKEN overrides the stored token" in r.err
    r = invoke(token_cmd.run_rotate)
    assert r.code == 2 and "OH_TOKEN is set in the environment" in r.err


def test_token_show_refuses_a_token_file_others_can_write(here):
    invoke(token_cmd.run_rotate)
    (here.home / "token").chmod(0o666)
    r = invoke(token_cmd.run_show, json_=True)
    assert r.code == 1
    assert json.loads(r.out)["refused"]["path"] == str(here.home / "token")
    assert "refusing to use" in r.err and "fix:" in r.err
    r = invoke(token_cmd.run_show, reveal=True)
    assert r.code == 1 and r.out == "" and "refusing to use" in r.err


def test_config_set_negative_value_and_broken_file_errors(here):
    here.home.mkdir(mode=0o700)
    target = here.home / "config.toml"
    target.write_text("port = [oops\n")
    r = invoke(config_cmd.run_set, key="port", value="80")
    assert r.code == 2 and f"{target} is not valid TOML" in r.err and "Allowed" not in r.err, r
    target.unlink()
    target.mkdir()  # unreadable: a directory where the file should be
    r = invoke(config_cmd.run_set, key="port", value="80")
    assert r.code == 2 and f"cannot read {target}" in r.err and "Allowed" not in r.err, r

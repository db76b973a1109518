"""`oh config`: precedence, typed validation, suggestions, the file on disk."""

from __future__ import annotations

import json
import stat
import sys
import tomllib

import pytest

from oh.config import settings


# ---------------------------------------------------------------- pure (in-process, no I/O beyond tmp)
def test_precedence_flag_env_file_default(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text('port = 4000\nruntime = "vscode"\neditor_timeout = 12\n')
    s = settings.Settings.load({"runtime": "local"}, env={"OH_PORT": "5000"}, path=path)
    assert (s.runtime, s.origin("runtime").origin) == ("local", "flag")
    assert (s.port, s.origin("port").origin, s.origin("port").detail) == (5000, "env", "OH_PORT")
    assert (s.editor_timeout, s.origin("editor_timeout").origin) == (12.0, "file")
    assert (s.open_editor, s.origin("open_editor").origin) == ("auto", "default")


def test_every_key_is_an_attribute_of_settings_and_nothing_else_is(tmp_path):
    """The attributes are generated from the key table: each key reads its resolved value; a name
    that is not a key is an AttributeError (no catch-all lookup)."""
    s = settings.Settings.load({}, env={}, path=tmp_path / "none.toml")
    for name, k in settings.KEYS.items():
        assert getattr(s, name) == k.default, name
        assert getattr(settings.Settings, name).__doc__ == k.help
    with pytest.raises(AttributeError):
        s.prot  # noqa: B018 - a typo of "port"


@pytest.mark.parametrize(
    "key,value,expected",
    [
        ("port", "65535", 65535),
        ("runtime", "VSCODE", "vscode"),
        ("trace_max_bytes", "2M", 2 * 1024 * 1024),
        ("trace", "off", False),
        ("editor_timeout", "0.5", 0.5),
        ("host", "localhost", "127.0.0.1"),
        ("host", "::1", "::1"),
    ],
)
def test_values_parse(key, value, expected):
    assert settings.parse_value(key, value) == expected


@pytest.mark.parametrize(
    "key,value,needle",
    [
        ("port", "65536", "0 to 65535"),
        ("port", "http", "0 to 65535"),
        ("runtime", "docker", "local, vscode"),
        ("editor_timeout", "-1", "> 0"),
        ("host", "0.0.0.0", "loopback"),
        ("host", "192.168.1.2", "loopback"),
        ("open_editor", "sometimes", "auto, always, never"),
        ("trace_max_bytes", "12", ">= 1024"),
    ],
)
def test_bad_values_name_what_is_allowed(key, value, needle):
    with pytest.raises(settings.SettingError) as exc:
        settings.parse_value(key, value)
    assert needle in str(exc.value) and key in str(exc.value)


def test_unknown_key_suggests():
    with pytest.raises(settings.SettingError, match="Did you mean 'editor_timeout'"):
        settings.key("editor_timout")


def test_bad_env_value_is_an_error_naming_the_variable(tmp_path):
    with pytest.raises(settings.SettingError, match="OH_PORT"):
        settings.Settings.load(env={"OH_PORT": "99999"}, path=tmp_path / "none.toml")


# ---------------------------------------------------------------- real `oh` processes
def test_set_get_unset_roundtrip_and_file_is_private(oh):
    oh("config", "set", "port", "8123", check=0)
    oh("config", "set", "runtime", "vscode", check=0)
    path = oh.home / "config.toml"
    assert tomllib.loads(path.read_text()) == {"port": 8123, "runtime": "vscode"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(oh.home.stat().st_mode) == 0o700
    assert oh("config", "get", "port", check=0).stdout.strip() == "8123"
    assert oh("config", "path", check=0).stdout.strip() == str(path)
    oh("config", "unset", "port", check=0)
    assert oh("config", "get", "port", check=0).stdout.strip() == "0"
    assert tomllib.loads(path.read_text()) == {"runtime": "vscode"}


def test_list_show_origin_json_reports_env_over_file(oh):
    oh("config", "set", "editor_timeout", "5", check=0)
    data = oh.json("config", "list", "--show-origin", "--json", env={"OH_EDITOR_TIMEOUT": "7"})
    assert data["editor_timeout"] == {"value": 7.0, "origin": "env", "source": "OH_EDITOR_TIMEOUT"}
    data = oh.json("config", "list", "--show-origin", "--json")
    assert data["editor_timeout"]["origin"] == "file" and data["editor_timeout"]["value"] == 5.0
    assert data["runtime"] == {"value": "local", "origin": "default", "source": None}
    text = oh("config", "list", "--show-origin", check=0).stdout
    assert "editor_timeout" in text and "(file: " in text


def test_unknown_key_and_bad_value_exit_2_with_help(oh):
    p = oh("config", "set", "prot", "80")
    assert p.returncode == 2 and "Did you mean 'port'" in p.stderr
    p = oh("config", "set", "port", "123456")
    assert p.returncode == 2 and "0 to 65535" in p.stderr
    p = oh("config", "get", "runtim")
    assert p.returncode == 2 and "'runtime'" in p.stderr
    assert not (oh.home / "config.toml").exists()  # nothing written on a refused set


def test_broken_file_is_reported_with_its_path_and_fix(oh):
    oh.home.mkdir(mode=0o700)
    (oh.home / "config.toml").write_text("port = [oops\n")
    p = oh("config", "list")
    assert p.returncode == 2 and "config.toml" in p.stderr and "oh config edit" in p.stderr
    (oh.home / "config.toml").write_text("prot = 1\n")
    assert oh("status").returncode == 3  # status does not need settings; start does
    p = oh("start", "--detach")
    assert p.returncode == 2 and "unknown setting 'prot'" in p.stderr and "'port'" in p.stderr


def test_edit_validates_after_the_editor(oh, tmp_path):
    fake = tmp_path / "fake-editor.py"
    fake.write_text("import sys\nopen(sys.argv[1], 'a').write('\\nport = \"abc\"\\n')\n")
    p = oh("config", "edit", env={"EDITOR": f"{sys.executable} {fake}"})
    assert p.returncode == 2 and "port" in p.stderr and "0 to 65535" in p.stderr
    fake.write_text("import sys\nopen(sys.argv[1], 'w').write('port = 9000\\n')\n")
    p = oh("config", "edit", env={"EDITOR": f"{sys.executable} {fake}"}, check=0)
    assert "valid" in p.stdout
    assert oh("config", "get", "port", check=0).stdout.strip() == "9000"


def test_env_beats_file_and_flag_beats_env_on_start(oh):
    oh("config", "set", "runtime", "local", check=0)
    p = oh("start", "--detach", "--json", "--no-open", env={"OH_RUNTIME": "vscode"}, check=0, timeout=40)
    info = json.loads(p.stdout)
    oh.started.append(info)
    assert info["runtime"] == "vscode"
    oh("stop", "--all", check=0)
    p = oh(
        "start",
        "--detach",
        "--json",
        "--runtime",
        "local",
        env={"OH_RUNTIME": "vscode", "OH_SANDBOX": "off"},
        timeout=40,
    )
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout)
    oh.started.append(info)
    assert info["runtime"] == "local"
    assert [w["id"] for w in info["warnings"]] == ["no_sandbox"]  # --json: in the JSON, not on stderr


def test_set_and_unset_keep_comments_and_key_order(oh):
    """Issue 9 #22: `oh config set` used to rewrite the file sorted and without its comments."""
    path = oh.home / "config.toml"
    oh.home.mkdir(mode=0o700, exist_ok=True)
    original = '# my settings\nruntime = "vscode"  # VS Code on this box\n\n# ports\nport = 4000\ntrace = true\n'
    path.write_text(original)
    path.chmod(0o600)
    oh("config", "set", "port", "4100", check=0)
    assert path.read_text() == original.replace("port = 4000", "port = 4100")
    oh("config", "set", "editor_timeout", "12", check=0)
    text = path.read_text()
    assert text.startswith(original.replace("port = 4000", "port = 4100")) and text.rstrip().endswith(
        "editor_timeout = 12.0"
    )
    oh("config", "unset", "trace", check=0)
    assert (
        "trace" not in path.read_text()
        and "# my settings" in path.read_text()
        and "# VS Code on this box" in path.read_text()
    )
    assert oh("config", "get", "port", check=0).stdout.strip() == "4100"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

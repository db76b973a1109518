"""One spelling per backend setting (issue 38.3): `python -m oh.backend` takes its whole configuration as JSON on
the private stdin (the launcher's BackendConfig), reads no settings from its environment, and refuses a bad
configuration with a clear error (no traceback, no hang)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

from oh import sessions
from oh.launcher.control import control
from oh.protocol.backendconfig import BackendConfig, to_wire
from oh.protocol.sandbox import Spec

from .conftest import TOKEN


def _start(workspace, env, private: dict) -> tuple[subprocess.Popen, dict]:
    """The backend as the launcher starts it: argv names the workspace, token and configuration on stdin."""
    r, w = os.pipe()
    argv = [sys.executable, "-m", "oh.backend", "--workspace", str(workspace), "--token-stdin", "--private-stdin"]
    proc = subprocess.Popen(
        [*argv, "--ready-fd", str(w)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        pass_fds=(w,),
        env=env,
        start_new_session=True,
    )
    os.close(w)
    proc.stdin.write((TOKEN + "\n" + json.dumps(private) + "\n").encode())
    proc.stdin.close()
    with os.fdopen(r, "rb") as f:
        line = f.readline()  # the backend writes one line, then closes the fd (or exits)
    return proc, json.loads(line) if line else {"ready": False, "error": "no ready line"}


def _env(oh_home) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_")}
    # settings in the backend's environment are not its settings: only the configuration on stdin counts
    env.update(OH_HOME=str(oh_home), OH_SANDBOX="off", OH_USER_SHELL="0")
    return env


def test_the_configuration_on_stdin_is_the_backends_and_its_environment_is_ignored(workspace, oh_home):
    config = BackendConfig(
        workspace=os.path.realpath(workspace),
        instance_id="cfgstdin1",
        max_shells=3,
        user_shell=False,
        sandbox=Spec(level="read-only", fallback="unconfined"),
        unix_socket=False,
    )
    proc, ready = _start(workspace, _env(oh_home), {"instance_id": "cfgstdin1", "config": to_wire(config)})
    try:
        assert ready["ready"] and ready["instance_id"] == "cfgstdin1", ready
        session = sessions.read(sessions.path_for("cfgstdin1"))
        assert session is not None
        status = control(session, {"type": "status"})
        assert status["sandbox"]["level"] == "read-only"  # not OH_SANDBOX=off from its environment
    finally:
        proc.terminate()
        proc.wait(timeout=15)


def test_a_bad_configuration_is_refused_with_a_clear_error(workspace, oh_home):
    good = to_wire(BackendConfig(workspace=os.path.realpath(workspace), instance_id="cfgbad1"))
    for bad, said in (
        ({**good, "max_shells": "many"}, "max_shells must be a int"),
        ({**good, "no_such_setting": 1}, "unknown backend settings: no_such_setting"),
        ({**good, "consent": {"level": "never", "rules": {"allow": ["nonsense"]}}}, "consent rules"),
        ({**good, "workspace": "/"}, "different workspaces"),
    ):
        proc, ready = _start(workspace, _env(oh_home), {"instance_id": "cfgbad1", "config": bad})
        assert proc.wait(timeout=15) == 4 and not ready["ready"] and said in ready["error"], ready
        assert b"Traceback" not in proc.stderr.read()


def test_the_wire_form_is_every_field(workspace):
    names = {f.name for f in dataclasses.fields(BackendConfig)}
    assert set(to_wire(BackendConfig(workspace=str(workspace)))) == names


def test_a_hand_started_backend_takes_one_flag_per_field():
    """`python -m oh.backend` by hand: the flags come from the same fields (a bool alone means true; a sandbox,
    consent or list field takes its JSON wire form)."""
    from oh.backend.__main__ import _parse
    from oh.protocol.backendconfig import from_arguments

    args = _parse(
        ["--workspace", "/w", "--review", "--max-shells", "3", "--setup-script", "false"]
        + ["--sandbox", '{"level": "off"}', "--allowed-roots", '["/tmp"]', "--no-trace"]
    )
    config = from_arguments(args)
    assert config.review is True and config.max_shells == 3 and config.setup_script is False
    assert config.sandbox == Spec(level="off") and config.allowed_roots == ["/tmp"] and args.no_trace
    assert from_arguments(_parse([])) == BackendConfig()  # nothing given: the defaults


def test_a_setting_reaches_the_backend_through_its_field_metadata_alone(tmp_path, monkeypatch):
    """docs/architecture.md's figure (a new setting: settings.py + a BackendConfig field with `setting=`): every
    such field names a settings key, and the launcher copies the user's value into it with no other code."""
    from oh.config.settings import KEYS, Settings
    from oh.launcher import backendconfig
    from oh.protocol.backendconfig import copied_settings

    monkeypatch.setenv("OH_HOME", str(tmp_path / "home"))
    copied = copied_settings()
    assert copied and set(copied.values()) <= set(KEYS)
    given = {"max_shells": 5, "job_retention": 7.0, "repeat_limit": 3, "editor_timeout": 4.5, "user_shell": False}
    assert set(given) <= set(copied.values())
    config = backendconfig.resolve(Settings.load(given), str(tmp_path))
    for name, key in copied.items():
        assert getattr(config, name) == Settings.load(given).get(key), name
    assert all(getattr(config, k) == v for k, v in given.items())

"""The battery in real VS Code, `oh.terminalMode: shell` (VS Code's shell integration, issue 17 item 2).
See test_vscode_battery.py: every case passes but the listed ones, which this mode cannot do by design."""

from __future__ import annotations

from .conftest import VsCode
from .test_vscode_battery import SHELL_MODE_DIFFERS, USER_SHELL, backend, pytestmark, run_mode_battery  # noqa: F401

TERMINAL_MODE = "shell"


async def test_battery_shell_mode(vscode: VsCode, backend: dict):
    failures = await run_mode_battery(vscode, backend, "shell")
    failed = {f.split(" (step")[0].split(": ")[0] for f in failures}
    unexpected = [f for f in failures if f.split(" (step")[0].split(": ")[0] not in SHELL_MODE_DIFFERS]
    assert not unexpected, "\n".join(unexpected)
    assert failed == set(SHELL_MODE_DIFFERS), (
        f"now passing (update SHELL_MODE_DIFFERS): {set(SHELL_MODE_DIFFERS) - failed}"
    )


def test_shell_mode_issue_17_defects(vscode: VsCode, backend: dict):
    """Each defect of issue 17 "Why" in shell mode, as reported: through `oh run` and an agent's client."""
    import os

    from oh.client.sync import SyncClient

    for _ in range(8):  # was: no exit code (CLI exit 124 "did not report an exit code"), 8 of 8
        p = vscode.oh("run", "--", "(exit 7)", timeout=60)
        assert p.returncode == 7, p
    sub = vscode.workspace / "sub17"
    sub.mkdir(exist_ok=True)
    s = backend["session_file"]
    with SyncClient.connect(s["url"], s["token"], name="e2e-issue17") as client:
        # was: "still running" after 30 s, then every command in a throwaway extra terminal
        obs = client.run("(cd sub17 && pwd)", timeout=20)
        md = obs["extras"]["metadata"]
        assert (obs["content"], md["exit_code"]) == (f"{os.path.realpath(sub)}\n", 0), obs
        assert client.run("cd sub17 && export OH_ISSUE17=kept", timeout=20)["extras"]["metadata"]["exit_code"] == 0
        obs = client.run("echo $OH_ISSUE17; basename $PWD", timeout=20)
        assert obs["content"] == "kept\nsub17\n", obs
        assert "job_id" not in obs["extras"]["metadata"] and not obs["extras"]["metadata"]["prefix"], obs
        # was: "[1]+ Killed sleep 100" in the next command's output
        assert client.run("sleep 100 &", timeout=20)["extras"]["metadata"]["exit_code"] == 0
        assert client.run("kill -9 %1", timeout=20)["extras"]["metadata"]["exit_code"] == 0
        obs = client.run("echo next", timeout=20)
        assert obs["content"] == "next\n", obs
    names = [n for n in vscode.drive("terminals")["names"] if n.startswith("oh")]
    assert not any("#" in n for n in names), names

"""Consent through real `oh` processes (issue 19): `oh start --consent` backends, agents' `oh run` waiting
for `oh approve` / `oh reject`, "always" rules saved to config.toml and removed with `oh config remove`,
a workspace file that may only tighten, and every self-approval route an agent has, attempted and refused."""

from __future__ import annotations

import json
import subprocess

from .conftest import wait_for

AGENT_WAIT = 60


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=AGENT_WAIT)
    return proc.returncode, out, err


def test_approve_reject_and_always(oh):
    oh.start("local", None, "--consent", "commands")
    agent = oh.agent("run", "touch made.txt && echo made")
    [row] = oh.pending()
    assert row["what"] == "touch made.txt && echo made" and row["always"] == ["run: touch *", "run: echo *"]
    assert not (oh.workspace / "made.txt").exists()
    listing = oh("approvals", check=0).stdout
    assert row["id"] in listing and "touch made.txt" in listing and "oh approve" in listing
    assert oh("approve", row["id"], check=0).stdout.startswith(f"{row['id']}: allowed")
    rc, out, err = _finish(agent)
    assert rc == 0 and "made" in out and (oh.workspace / "made.txt").exists()

    agent = oh.agent("run", "touch nope.txt")
    [row] = oh.pending()
    oh("reject", row["id"], "--reason", "use the build dir", check=0)
    rc, out, err = _finish(agent)
    assert rc != 0 and "REJECTED" in (out + err) and "use the build dir" in (out + err)
    assert not (oh.workspace / "nope.txt").exists()

    agent = oh.agent("run", "ls")
    [row] = oh.pending()
    res = oh.json("approve", row["id"], "--always", "--json")
    assert res["results"][0]["rules"] == ["run: ls *"] and res["saved_to"]
    assert _finish(agent)[0] == 0
    assert oh.json("run", "--json", "ls -a")["observation"] == "run"  # no question now
    assert "run: ls *" in oh("config", "get", "consent_allow", check=0).stdout
    oh("config", "remove", "consent_allow", "run: ls *", check=0)
    assert "run: ls *" not in oh("config", "get", "consent_allow", check=0).stdout
    assert "No pending approval c999" in oh("approve", "c999", check=1).stdout


def test_self_approval_routes_are_refused(oh):
    """An agent's routes to its own approval: its token on /v1/control, `oh approve` / `oh review accept`
    through its own shell, reading the session file, and the environment its shell inherits."""
    from websockets.sync.client import connect

    info = oh.start("local", None, "--consent", "risky", "--review")
    sess = oh.session(info["instance_id"])
    assert sess["decider_token"] and sess["decider_token"] != sess["token"]
    agent = oh.agent("write", "f.txt", "--content", "x")  # a change: review mode asks (a proposal)
    proposal = wait_for(
        lambda: (oh.json("review", "--json")["proposals"] or [None])[0], timeout=30, interval=0.1, what="proposal"
    )
    # 1. the agent's own token on the control leg: may list, never decide
    with connect(info["url"] + "/v1/control", additional_headers={"Authorization": f"Bearer {sess['token']}"}) as ws:
        for frame in (
            {"type": "review", "op": "accept", "id": proposal["id"]},
            {"type": "review", "op": "accept", "all": True},
            {"type": "approvals", "op": "allow", "id": "c1"},
        ):
            ws.send(json.dumps(frame))
            assert json.loads(ws.recv(timeout=10))["error_id"] == "FORBIDDEN"
    # 2. its own shell running oh's deciding commands, or reading oh's files: each one waits for consent itself
    runs = [
        oh.agent("run", cmd) for cmd in ("oh review accept --all", "oh approve c1", f"cat {oh.home}/sessions/*.json")
    ]
    rows = oh.pending(3)
    assert sorted(r["what"] for r in rows) == sorted(
        ("oh review accept --all", "oh approve c1", f"cat {oh.home}/sessions/*.json")
    )
    assert not (oh.workspace / "f.txt").exists()
    for r in rows:
        oh("reject", r["id"], "--reason", "no self-approval", check=0)
    for p in runs:
        rc, out, err = _finish(p)
        assert rc != 0 and "REJECTED" in out + err
    assert not (oh.workspace / "f.txt").exists()
    oh("review", "accept", proposal["id"], check=0)  # the user, with the decider credential
    assert _finish(agent)[0] == 0 and (oh.workspace / "f.txt").read_text() == "x"
    # 3. what the agent's shell inherits: no OH_HOME (where the sessions are), no tokens
    assert (
        oh.json("run", "--json", "env | grep -c '^O[H]_HOME=' || true")["content"].strip() == "0"
    )  # (naming it is risky)
    assert oh.json("run", "--json", "env | grep -c '^O[H]_.*TOKEN' || true")["content"].strip() == "0"


def test_workspace_file_only_tightens(oh):
    (oh.workspace / ".oh").mkdir()
    (oh.workspace / ".oh" / "consent.toml").write_text(
        'allow = ["run: rm *"]\ndeny = ["run: touch *"]\nconsent = "never"\n'
    )
    proc = oh("start", "--detach", "--runtime", "local", "--no-open", "--consent", "risky", timeout=40)
    assert proc.returncode == 0, proc.stderr
    assert "may only tighten" in proc.stderr and "allow, consent" in proc.stderr
    oh.started.append({"pid": _pid(oh)})  # stopped at teardown
    res = oh.json("run", "--json", "touch x")
    assert res["extras"]["error_id"] == "REJECTED" and "deny run: touch *" in res["content"]
    agent = oh.agent("run", "rm -f y")  # the workspace's allow rule is ignored: rm is risky, so it asks
    [row] = oh.pending()
    oh("reject", row["id"], check=0)
    _finish(agent)


def _pid(oh) -> int:
    sessions = list((oh.home / "sessions").glob("*.json"))
    return json.loads(sessions[0].read_text())["pid"]


def test_the_decider_token_leaks_nowhere(oh):
    """The decider credential is only in the 0600 session file: not in argv, status, approvals, logs, traces,
    the agent shell's environment."""
    info = oh.start("local", None, "--consent", "commands", "--approval-timeout", "30")
    decider = oh.session(info["instance_id"])["decider_token"]
    assert len(decider) >= 40
    agent = oh.agent("run", "env; ps -eo args")
    [row] = oh.pending()
    oh("approve", row["id"], check=0)
    rc, out, err = _finish(agent)
    assert rc == 0 and "PATH=" in out
    texts = {
        "the agent shell's env and ps": out + err,
        "oh status --json": oh("status", "--json").stdout,
        "oh approvals --json": oh("approvals", "--json").stdout,
        "backend argv": open(f"/proc/{info['pid']}/cmdline", "rb").read().decode(errors="replace"),
    }
    for f in oh.home.rglob("*"):
        if f.is_file() and "sessions" not in f.parts:
            texts[str(f.relative_to(oh.home))] = f.read_bytes().decode(errors="replace")
    for where, text in texts.items():
        assert decider not in text, f"the decider token leaked into {where}"

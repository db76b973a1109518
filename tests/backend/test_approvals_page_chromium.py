"""The approvals page (issue 40) in real headless Chromium (Debian's, driven by the playwright-core that
extension/e2e/setup.sh installs; nothing is downloaded), 390 px wide like a phone: pair with a code, see a
pending `run` under consent `commands`, approve it with the keyboard (the command's effect: a marker file),
reject one with a reason, "always" saves exactly the rule the page showed, agent-written HTML/ANSI/bidi stay
inert text, 100 pending questions render. The screenshot is kept with the e2e artifacts (.e2e/approvals-page/)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest

from oh.protocol.consent import Policy, parse_rules

from .peers import agent, control, pending

REPO = Path(__file__).resolve().parents[2]
E2E_DIR = Path(os.environ.get("OH_E2E_DIR", REPO / ".e2e"))
PW = next(
    (d for d in (E2E_DIR / "pw", Path("/work/main/.e2e/pw")) if (d / "node_modules" / "playwright-core").is_dir()), None
)
ARTIFACTS = E2E_DIR / "approvals-page"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        PW is None or not shutil.which("node") or not os.path.exists("/usr/bin/chromium"),
        reason="needs node, /usr/bin/chromium and playwright-core (bash extension/e2e/setup.sh)",
    ),
]


class Page:
    """The node driver: one JSON command per line, one JSON answer per line."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    async def line(self) -> dict:
        assert self.proc.stdout is not None
        raw = await asyncio.wait_for(self.proc.stdout.readline(), 60)
        assert raw, "the page driver ended"
        return json.loads(raw)

    async def do(self, op: str, **args) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
        await self.proc.stdin.drain()
        answer = await self.line()
        assert answer["ok"], answer
        assert not answer["errors"], answer["errors"]  # no CSP violation, no script error
        return answer


async def open_page(url: str) -> Page:
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(Path(__file__).with_name("approvals_page.js")),
        "--url",
        url,
        "--pw",
        str(PW),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    page = Page(proc)
    assert (await page.line())["ready"]
    return page


async def test_pair_approve_reject_always_and_100_questions_in_chromium(make_backend, workspace):
    pol = Policy("commands", parse_rules((), (), ()), str(workspace.resolve()), "/nonexistent-home", ())
    b = await make_backend("local", consent=pol)
    code = (await control(b, b.decider_token, {"type": "approvals", "op": "pair"}))["code"]
    page = await open_page(f"http://127.0.0.1:{b.web.port}/")
    try:
        await page.do("pair", code=code)
        ag = await agent(b)
        evil = "echo '<img src=x onerror=alert(1)>' \x1b[31m \u202etxt.exe"
        commands = ["touch approved.txt", "touch rejected.txt", "echo hi > always.txt", evil]
        for i, command in enumerate(commands, 1):
            await ag.send(json.dumps({"id": i, "action": "run", "args": {"command": command}}))
        await pending(b, len(commands))
        await page.do("cards", n=len(commands))
        shown = await page.do("inspect", match="onerror")
        assert "<img src=x onerror=alert(1)>" in shown["text"] and shown["imgs"] == 0
        assert "<U+001B>[31m" in shown["text"] and "<U+202E>txt.exe" in shown["text"]
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = await page.do("screenshot", path=str(ARTIFACTS / "approvals-390px.png"))
        assert shot["scrollWidth"] <= 390  # nothing wider than the phone: long commands scroll inside their box
        assert not (workspace / "approved.txt").exists()
        await page.do("keyApprove", match="approved.txt")
        await page.do("reject", match="rejected.txt", reason="not today")
        rule = (await page.do("always", match="always.txt"))["rule"]
        outcomes = {}
        for _ in range(3):
            obs = json.loads(await asyncio.wait_for(ag.recv(), 30))
            outcomes[obs["cause"]] = obs
        assert (workspace / "approved.txt").exists() and (workspace / "always.txt").exists()
        assert not (workspace / "rejected.txt").exists() and "not today" in outcomes[2]["content"]
        assert [r.text for r in b.consent.policy.rules if r.verdict == "allow"] == [rule] == ["run: echo *"]
        await page.do("gone", match="approved.txt")
        # 100 more questions render (and the page stays usable)
        for i in range(100):
            await ag.send(json.dumps({"id": 100 + i, "action": "run", "args": {"command": f"touch many-{i}.txt"}}))
        got = await page.do("cards", n=101)
        assert got["count"] == 101
        await ag.close()
    finally:
        assert page.proc.stdin is not None
        page.proc.stdin.close()
        try:
            await asyncio.wait_for(page.proc.wait(), 30)
        except asyncio.TimeoutError:
            page.proc.kill()
            await page.proc.wait()

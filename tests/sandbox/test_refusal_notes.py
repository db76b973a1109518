"""A failure the sandbox caused says so (issue 41: sandbox refusals looked like plain OS errors). Real bubblewrap:
a write outside the workspace and a name lookup with the network off each end with a note naming the way out, for
the agent (args sandbox) and for a person (`oh run --unsandboxed` / `--network`); a failure that is not the
sandbox's gets none, and an unsandboxed shell none."""

from __future__ import annotations

from pathlib import Path

from oh.protocol.sandbox import refusal_hint
from sandboxed import needs_bwrap

from .test_confinement import make_box, run, runtime


def test_the_hint_by_output():
    assert "write was refused" in refusal_hint("touch: cannot touch '/etc/x': Read-only file system", False)
    assert "network is off" in refusal_hint("curl: (6) Could not resolve host: example.com", False)
    assert refusal_hint("curl: (6) Could not resolve host: example.com", True) == ""  # the network is on
    assert refusal_hint("make: *** [all] Error 2", False) == ""
    missing = "cat: /home/u/.ssh/id_ed25519: No such file or directory"
    assert "~/.ssh is hidden" in refusal_hint(missing, False, "cat ~/.ssh/id_ed25519", "/home/u")
    assert "~/.aws is hidden" in refusal_hint("No such file or directory", False, "cat $HOME/.aws/credentials", "/h")
    assert refusal_hint("cat: /home/u/.sshd: No such file or directory", False, "", "/home/u") == ""  # not a secret
    assert refusal_hint("cat: /home/u/notes: No such file or directory", False, "cat ~/notes", "/home/u") == ""


@needs_bwrap
async def test_a_write_outside_and_a_lookup_say_the_sandbox_refused(tmp_path):
    b = make_box(tmp_path)
    rt = runtime(b, level="workspace-write")
    try:
        wrote = await run(rt, f"touch {b['outside']}/x")
        md = wrote["extras"]["metadata"]
        assert md["exit_code"] != 0 and "write was refused" in md["suffix"] and "--unsandboxed" in md["suffix"], md
        looked = await run(rt, "python3 -c \"import socket; socket.getaddrinfo('example.com', 80)\"")
        md = looked["extras"]["metadata"]
        assert md["exit_code"] != 0 and "network is off" in md["suffix"], (looked["content"], md)
        (Path(b["env"]["HOME"]) / ".ssh").mkdir(exist_ok=True)
        (Path(b["env"]["HOME"]) / ".ssh" / "id_ed25519").write_text("secret")
        key = await run(rt, "cat ~/.ssh/id_ed25519")
        md = key["extras"]["metadata"]
        assert md["exit_code"] != 0 and "secret" not in key["content"], key  # hidden for real
        assert "~/.ssh is hidden" in md["suffix"] and "--unsandboxed" in md["suffix"], md
        plain = await run(rt, "exit 3")
        assert "Sandbox:" not in plain["extras"]["metadata"]["suffix"]
    finally:
        await rt.close()
    free = runtime(b, level="off")
    try:
        out = await run(free, "echo 'x: Read-only file system'; exit 1")
        assert "Sandbox:" not in out["extras"]["metadata"]["suffix"]
    finally:
        await free.close()

"""The sandboxed shell's pid, found from bubblewrap's without scanning every process (issue 41: psutil's
``children`` read /proc/*/stat of the whole machine before every command, 70% of the backend's time per
`run true`). Checked against the real bubblewrap: the pid found is the shell (its /proc cwd follows the
agent's `cd`), the same as psutil's answer, and stays right after the shell is replaced."""

from __future__ import annotations

import os

import psutil

from oh.runtimes.local import sandbox as sb
from sandboxed import needs_bwrap


def _psutil_shell(bwrap: int) -> int:
    level = [psutil.Process(bwrap)]
    for _ in range(3):
        level = [c for p in level for c in p.children()]
        found = next((c for c in level if c.name() != "bwrap"), None)
        if found is not None:
            return found.pid
    return -1


def test_children_match_psutil_for_this_process_tree():
    import subprocess

    kids = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
    try:
        assert sorted(sb._children(os.getpid())) == sorted(c.pid for c in psutil.Process().children())
        assert sb._ppid(kids[0].pid) == os.getpid() and sb.comm(kids[0].pid) == "sleep"
    finally:
        for k in kids:
            k.kill()
            k.wait()
    assert sb._ppid(kids[0].pid) == -1 and sb.comm(kids[0].pid) == ""  # gone: no error


@needs_bwrap
async def test_the_shell_found_is_the_sandboxed_shell_and_matches_psutil(tmp_path):
    from .test_confinement import make_box, run, runtime

    b = make_box(tmp_path)
    rt = runtime(b, level="workspace-write")
    try:
        (b["ws"] / "sub").mkdir()
        for step in range(3):  # the cached chain keeps answering as the shell moves
            where = "sub" if step % 2 == 0 else ".."
            obs = await run(rt, f"cd {where}")
            assert obs["extras"]["metadata"]["exit_code"] == 0, obs
            (group,) = rt._terminals.values()
            engine = group.main.shell
            found = engine.sandbox.shell_pid(engine.pid)
            assert found == _psutil_shell(engine.pid) and found != engine.pid
            expected = b["ws"] / "sub" if step % 2 == 0 else b["ws"]
            assert os.readlink(f"/proc/{found}/cwd") == str(expected)
            assert engine.cwd_now() == str(expected)
    finally:
        await rt.close()

"""Another agent's run files and exported values stay out of sight (issue 41.1 follow-up): since the host's /tmp is
visible read-only inside a sandbox, oh's scratch directories (each shell's run files, the `export -p` snapshot
that may hold secrets) and an approved one-shot's files live under oh's own state directory, which every sandbox
hides, not in /tmp. Real bubblewrap, two runtimes (two backends' worth of agents) side by side."""

from __future__ import annotations

import secrets

from sandboxed import needs_bwrap

from .test_confinement import make_box, run, runtime


@needs_bwrap
async def test_an_agent_cannot_read_another_runtimes_exports_through_tmp(tmp_path):
    b = make_box(tmp_path)
    value = "zz" + secrets.token_hex(12)
    first, second = runtime(b, level="workspace-write"), runtime(b, level="workspace-write")
    try:
        made = await run(first, f"export MY_API_TOKEN={value}; echo ok")
        assert made["content"].strip().endswith("ok"), made
        again = await run(first, "echo $MY_API_TOKEN")  # the first agent's shell keeps working from there
        assert value in again["content"]
        # (scratch location checked below by its effect)
        where = first._scratch
        with open(next(p for p in __import__("glob").glob(f"{where}/env-*"))) as f:
            assert value in f.read()  # the snapshot holds it: what must stay out of the other agent's sight
        found = await run(
            second, f"cat {where}/env-* 2>&1; grep -rl {value} /var/tmp {b['oh_home']} 2>/dev/null; echo end"
        )
        assert value not in found["content"] and found["content"].strip().endswith("end"), found["content"]
    finally:
        await first.close()
        await second.close()

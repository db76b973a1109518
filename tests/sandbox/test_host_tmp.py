"""The host's /tmp in the sandbox (issue 41.1, docs/security.md §10 "/tmp"): visible read-only, so a venv or a
tool that lives there runs; a write to /tmp fails loudly and leaves nothing on the host; temporary files go to a
private writable $TMPDIR; a Unix socket listening under the host's /tmp stays out of reach at every network
setting. Each test uses a directory made directly under /tmp (not pytest's basetemp, which may lie elsewhere)."""

from __future__ import annotations

import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from oh.runtimes.local.sandbox import check

from .test_confinement import make_box, run, runtime
from .test_unix_sockets import UnixListener, connect

pytestmark = [
    pytest.mark.skipif(not check().ok, reason="bubblewrap cannot run here: " + check().problem),
    pytest.mark.timeout(180),
]


@pytest.fixture
def host_tmp():
    path = Path(tempfile.mkdtemp(prefix="oh-host-tmp-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_venv_under_the_hosts_tmp_runs_in_the_sandbox(tmp_path, host_tmp):
    venv = host_tmp / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    tool = host_tmp / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\necho tool-ran-$1\n")
    tool.chmod(0o755)
    rt = runtime(make_box(tmp_path))
    try:
        obs = await run(rt, f"{venv}/bin/python -c 'import sys; print(\"venv\", sys.prefix)'; {tool} ok")
        assert f"venv {venv}" in obs["content"], obs["content"]
        assert "tool-ran-ok" in obs["content"], obs["content"]
    finally:
        await rt.close()


@pytest.mark.parametrize("level", ["workspace-write", "read-only"])
async def test_writes_to_tmp_fail_loudly_and_tmpdir_is_private_and_writable(tmp_path, host_tmp, level):
    rand = "oh-tmp-marker-" + secrets.token_hex(6)
    rt = runtime(make_box(tmp_path), level=level)
    try:
        obs = await run(
            rt,
            f"echo x > /tmp/{rand}; echo x > {host_tmp}/{rand}; echo tmpdir=$TMPDIR; f=$(mktemp) && echo kept > $f "
            "&& cat $f && python3 -c 'import tempfile; print(\"py\", tempfile.gettempdir())'",
        )
        text = obs["content"]
        assert text.count("Read-only file system") == 2, text  # said, not swallowed
        assert not Path("/tmp", rand).exists() and not (host_tmp / rand).exists()
        assert "tmpdir=/var/tmp" in text and "kept" in text and "py /var/tmp" in text, text
    finally:
        await rt.close()
    assert not list(Path("/var/tmp").glob(f"*{rand}*"))


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
async def test_a_socket_under_the_hosts_tmp_stays_unreachable(tmp_path, host_tmp, network):
    listener = UnixListener(host_tmp / "ipc" / "server.sock")
    rt = runtime(make_box(tmp_path), network=network)
    try:
        obs = await run(rt, connect(listener.path) + f"; ls {host_tmp}", timeout=20)
        assert listener.token not in obs["content"], obs["content"]
        assert listener.accepted == 0
        assert "ipc" in obs["content"], obs["content"]  # /tmp itself is shown: only the socket is covered
    finally:
        listener.close()
        await rt.close()

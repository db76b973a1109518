"""The sandbox battery (issue 27), in-process: a real ``LocalRuntime`` whose agent shell runs in real bubblewrap
on the real kernel, a fake HOME holding secrets, and each escape tried for real. Writes are checked by marker
files seen from outside; reads by a random secret that must never appear in the output.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from oh.protocol import sandbox as rules
from oh.protocol.events import parse_action
from oh.runtimes.local import LocalRuntime
from sandboxed import Listener, needs_bwrap

pytestmark = [
    needs_bwrap,
    pytest.mark.timeout(120),
]

SECRET = "s3cr3t-" + secrets.token_hex(8)
HIDDEN_FILES = (
    ".ssh/id_ed25519",
    ".aws/credentials",
    ".azure/accessTokens.json",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".docker/config.json",
    ".gnupg/private-keys-v1.d/key",
    ".local/share/keyrings/login.keyring",
    ".netrc",
    ".git-credentials",
    ".config/gh/hosts.yml",
    # redteam: credential-only files that were readable in the sandbox
    ".config/git/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".config/hub",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".terraform.d/credentials.tfrc.json",
    ".config/containers/auth.json",
    ".config/composer/auth.json",
    ".s3cfg",
    ".config/rclone/rclone.conf",
    ".cache/huggingface/token",
)


@pytest.fixture
def box(tmp_path: Path) -> dict[str, Any]:
    return make_box(tmp_path)


def make_box(tmp_path: Path) -> dict[str, Any]:
    """A fake HOME holding secrets, oh's state, a workspace and a directory outside it (test_new_repos too)."""
    home = tmp_path / "home"
    for rel in HIDDEN_FILES:
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(SECRET + "\n")
    (home / ".cache").mkdir(exist_ok=True)
    (home / ".bashrc").write_text("echo rc\n")
    oh_home = tmp_path / "ohhome"
    (oh_home / "sessions").mkdir(parents=True)
    (oh_home / "sessions" / "abc.json").write_text('{"token": "%s", "decider_token": "%s"}' % (SECRET, SECRET))
    (oh_home / "token").write_text(SECRET)
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "OH_HOME": str(oh_home),
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
    }
    return {"home": home, "ws": ws, "outside": outside, "env": env, "oh_home": oh_home, "tmp": tmp_path}


_ids = iter(range(1, 1_000_000))


async def run(rt: LocalRuntime, command: str, timeout: float = 30, **args: Any) -> dict[str, Any]:
    frame = {
        "id": next(_ids),
        "action": "run",
        "args": {"command": command, "blocking": True, **args},
        "timeout": timeout,
    }
    return await rt.execute(parse_action(frame), "agent")


def runtime(b: dict[str, Any], **spec: Any) -> LocalRuntime:
    return LocalRuntime(
        b["ws"],
        env=b["env"],
        sandbox=rules.Spec(**spec),
        sandbox_hidden=(str(b["oh_home"]),),
    )


# (name, command template, marker path relative to the tmp dir) -- every write must fail.
WRITES_OUTSIDE = [
    ("redirect into HOME", "echo x > {home}/marker", "home/marker"),
    (
        "append to the user's rc file",
        "echo 'echo pwned' >> {home}/.bashrc; echo x > {home}/.bashrc.marker",
        "home/.bashrc.marker",
    ),
    ("touch a sibling of the workspace", "touch {outside}/marker", "outside/marker"),
    ("python open()", "python3 -c \"open('{outside}/marker', 'w').write('x')\"", "outside/marker"),
    ("mkdir outside", "mkdir {outside}/marker", "outside/marker"),
    ("cp outside", "cp /bin/true {outside}/marker", "outside/marker"),
    ("symlink from the workspace", "ln -s {outside} link && echo x > link/marker", "outside/marker"),
    (
        "hard link out of the workspace",
        "ln {home}/.bashrc ./rc 2>/dev/null; echo x >> ./rc; grep -q x {home}/.bashrc && touch {outside}/marker",
        "outside/marker",
    ),
    ("a cache dir that is not a writable one", "mkdir -p {home}/.local/marker", "home/.local/marker"),
    ("the host's /tmp (shown read-only)", "echo x > /tmp/{rand}", "/tmp/{rand}"),
]


async def test_writes_outside_the_workspace_fail(box):
    rt = runtime(box)
    try:
        failures = []
        for name, template, marker in WRITES_OUTSIDE:
            rand = "oh-sbx-marker-" + secrets.token_hex(6)
            cmd = template.format(home=box["home"], outside=box["outside"], rand=rand)
            obs = await run(rt, cmd)
            target = box["tmp"] / marker.format(rand=rand)  # an absolute marker replaces the tmp dir
            if target.exists():
                failures.append(f"{name}: {target} was written ({obs['content']!r})")
        assert not failures, "\n".join(failures)
        assert (box["home"] / ".bashrc").read_text() == "echo rc\n"
        # ... while the workspace and the caches are writable, and seen from outside
        obs = await run(
            rt,
            (
                f"echo in > made.txt && mkdir -p {box['home']}/.cache/tool && echo c > "
                f"{box['home']}/.cache/tool/x && echo ok"
            ),
        )
        assert obs["content"].strip().endswith("ok"), obs
        assert (box["ws"] / "made.txt").read_text() == "in\n"
        assert (box["home"] / ".cache" / "tool" / "x").read_text() == "c\n"
    finally:
        await rt.close()


# Each read must not show SECRET (the command may fail or print nothing).
READS = [
    *[(f"cat ~/{rel}", f"cat ~/{rel}") for rel in HIDDEN_FILES],
    ("grep through HOME", "grep -r {secret_prefix} ~ 2>/dev/null"),
    ("oh's sessions (token, decider credential)", "cat {oh_home}/sessions/*.json"),
    ("oh's token file", "cat {oh_home}/token"),
    (
        "python reads oh's dir",
        (
            "python3 -c \"import os,glob; [print(open(p).read()) for p in glob.glob('{oh_home}/**', "
            'recursive=True) if os.path.isfile(p)]"'
        ),
    ),
    ("the environment", "env"),
]


async def test_secrets_and_oh_state_are_invisible(box):
    rt = runtime(box)
    try:
        failures = []
        for name, template in READS:
            cmd = template.format(oh_home=box["oh_home"], secret_prefix=SECRET[:10])
            obs = await run(rt, cmd)
            if SECRET in obs["content"]:
                failures.append(f"{name}: the secret was read")
        assert not failures, "\n".join(failures)
        obs = await run(
            rt, "ls -A ~/.ssh | wc -l; ls -A " + str(box["oh_home"]) + "; ls -A " + str(box["oh_home"]) + "/*"
        )
        # oh's state is an empty tmpfs but for the mount point of this shell's own scratch directory (its run
        # files), bound back under it since the host's /tmp is visible read-only (issue 41.1)
        lines = obs["content"].split()
        assert lines[0] == "0" and lines[1:2] in ([], ["scratch"]), obs["content"]
        assert all(name.startswith("oh-local-") for name in lines[2:]) and len(lines) <= 3, obs["content"]
    finally:
        await rt.close()


UNIX_CONNECT = (
    "python3 -c \"import socket; s=socket.socket(socket.AF_UNIX); s.settimeout(3); s.connect('{path}'); "
    'print(s.recv(100).decode())" 2>&1'
)


async def test_container_engine_sockets_are_hidden(box):
    """The network off does not stop a Unix socket at a path the sandbox shows: Docker Desktop's socket in
    HOME (root on the host through the Docker API) is covered. A socket we do not list is covered too with the
    network off (every listening one, test_unix_sockets.py); with the network on, the listed ones stay covered
    and the other one is reached through the same code: the positive control (docs/security.md §10)."""
    token = "hello-" + secrets.token_hex(4)
    listeners = []
    for rel in (".docker/run/docker.sock", ".colima/default/docker.sock", "plain.sock"):
        path = box["home"] / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.listen(4)
        sock.settimeout(0.2)
        listeners.append(sock)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            for sock in listeners:
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                with conn:
                    conn.sendall(token.encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    rt = runtime(box)
    online = runtime(box, network=True)
    try:
        for rel in (".docker/run/docker.sock", ".colima/default/docker.sock", "plain.sock"):
            obs = await run(rt, UNIX_CONNECT.format(path=box["home"] / rel), timeout=15)
            assert token not in obs["content"], (rel, obs["content"])
        for rel, reached in ((".docker/run/docker.sock", False), (".colima/default/docker.sock", False)):
            obs = await run(online, UNIX_CONNECT.format(path=box["home"] / rel), timeout=15)
            assert (token in obs["content"]) is reached, (rel, obs["content"])
        obs = await run(online, UNIX_CONNECT.format(path=box["home"] / "plain.sock"), timeout=15)
        assert token in obs["content"], obs["content"]  # the network on: only the fixed list is covered
    finally:
        await online.close()
        stop.set()
        thread.join(5)
        for sock in listeners:
            sock.close()
        await rt.close()


async def test_backend_process_invisible(box):
    rt = runtime(box)
    me = os.getpid()
    try:
        obs = await run(
            rt,
            (
                f"test -e /proc/{me} && echo VISIBLE; cat /proc/{me}/environ; kill -0 {me} && echo SIGNALLED; ls "
                "/proc | grep -c '^[0-9]'"
            ),
        )
        assert "VISIBLE" not in obs["content"] and "SIGNALLED" not in obs["content"], obs["content"]
        assert int(obs["content"].split()[-1]) < 10  # only the sandbox's own few processes
    finally:
        await rt.close()


class _Server(Listener):
    """A loopback TCP server on an ephemeral port that greets each client with a token."""

    def __init__(self) -> None:
        self.token = "hello-" + secrets.token_hex(4)
        super().__init__()

    def handle(self, conn: socket.socket) -> None:
        conn.sendall(self.token.encode() + b"\n")


PY_CONNECT = (
    "python3 -c \"import socket; s=socket.create_connection(('127.0.0.1', {port}), 3); print(s.recv(100).decode())\""
)
CURL = "curl -sS --max-time 3 telnet://127.0.0.1:{port} </dev/null"


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
async def test_loopback_server_by_network_setting(box, network):
    server = _Server()
    rt = runtime(box, network=network)
    try:
        tools = [PY_CONNECT] + ([CURL] if shutil.which("curl") else [])
        for tool in tools:
            obs = await run(rt, tool.format(port=server.port), timeout=15)
            assert (server.token in obs["content"]) is network, (tool, obs["content"])
    finally:
        server.close()
        await rt.close()


def _greeter(family: int, address: Any) -> tuple[socket.socket, str, threading.Event]:
    """A listener (IPv6 loopback, or an abstract Unix socket) that greets each client with a token."""
    token = "hello-" + secrets.token_hex(4)
    sock = socket.socket(family)
    sock.bind(address)
    sock.listen(4)
    sock.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(token.encode() + b"\n")

    threading.Thread(target=serve, daemon=True).start()
    return sock, token, stop


@pytest.mark.parametrize("network", [False, True], ids=["network-off", "network-on"])
async def test_ipv6_loopback_and_abstract_sockets_by_network_setting(box, network):
    """The network off is a private network namespace: the host's `::1` servers and abstract Unix sockets
    (X11's `@/tmp/.X11-unix/X0`, D-Bus's) are out of reach; on, both are reachable (docs/security.md §10)."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        v6, token6, stop6 = _greeter(socket.AF_INET6, ("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback")
    name = "oh-redteam-" + secrets.token_hex(4)
    ab, token_ab, stop_ab = _greeter(socket.AF_UNIX, "\0" + name)
    rt = runtime(box, network=network)
    try:
        port = v6.getsockname()[1]
        obs = await run(rt, PY_CONNECT.replace("'127.0.0.1'", "'::1'").format(port=port), timeout=15)
        assert (token6 in obs["content"]) is network, obs["content"]
        obs = await run(rt, UNIX_CONNECT.format(path="\\0" + name), timeout=15)
        assert (token_ab in obs["content"]) is network, obs["content"]
    finally:
        stop6.set()
        stop_ab.set()
        v6.close()
        ab.close()
        await rt.close()


async def test_read_only_level_and_off(box):
    rt = runtime(box, level="read-only")
    try:
        obs = await run(rt, 'echo x > in-ws.txt; echo t > "$TMPDIR/t" && cat "$TMPDIR/t"')
        assert not (box["ws"] / "in-ws.txt").exists() and obs["content"].strip().endswith("t"), obs
    finally:
        await rt.close()
    rt = runtime(box, level="off")
    try:
        obs = await run(rt, f"echo x > {box['outside']}/off-marker && echo done")
        assert (box["outside"] / "off-marker").exists(), obs
        first = obs["extras"]["metadata"].get("prefix") or ""
        assert "Sandbox:" not in first, first  # off is the user's explicit choice: `oh start`/`oh status` say it
    finally:
        await rt.close()


async def test_first_observation_states_the_level_and_job_control_works(box):
    rt = runtime(box)
    try:
        obs = await run(rt, "sleep 30 & jobs; kill %1; wait; echo end")
        prefix = obs["extras"]["metadata"].get("prefix") or ""
        assert "Sandbox: workspace-write" in prefix and "network off" in prefix, prefix
        assert "[1]" in obs["content"] and "end" in obs["content"], obs["content"]
        later = await run(rt, "echo again")
        assert "Sandbox:" not in (later["extras"]["metadata"].get("prefix") or "")  # said once
    finally:
        await rt.close()


async def test_every_agent_is_told_the_level_in_its_first_observation_and_the_live_view_once(box):
    """Issue 41: the note was said once per runtime, so a second agent's first observation lacked it."""
    rt = runtime(box)
    shown: list[str] = []
    rt.on_shell_note = shown.append
    try:
        for agent in ("agent", "second", "third"):
            frame = {"id": next(_ids), "action": "run", "args": {"command": "true", "blocking": True}, "timeout": 30}
            first = await rt.execute(parse_action(frame), agent)
            assert "Sandbox: workspace-write" in (first["extras"]["metadata"].get("prefix") or ""), (agent, first)
            again = await rt.execute(parse_action({**frame, "id": next(_ids)}), agent)
            assert "Sandbox:" not in (again["extras"]["metadata"].get("prefix") or ""), (agent, again)
        assert len(shown) == len(set(shown)), shown  # the live view is told each note once, not per agent
    finally:
        await rt.close()


async def test_git_hooks_and_config_stay_read_only(box):
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    rt = runtime(box, level="off")
    try:
        await run(rt, "git init -q . && git config user.email a@b && git config user.name a")
    finally:
        await rt.close()
    rt = runtime(box)
    try:
        obs = await run(
            rt,
            (
                "echo 'touch pwned' > .git/hooks/pre-commit; git config core.hooksPath /tmp; echo x > file && git "
                "add file && echo staged"
            ),
        )
        assert not (box["ws"] / ".git" / "hooks" / "pre-commit").exists()
        assert "hooksPath" not in (box["ws"] / ".git" / "config").read_text()
        assert "staged" in obs["content"], obs["content"]  # git itself still works in the workspace
    finally:
        await rt.close()


async def test_git_hooks_protected_when_missing_at_start(box):
    """A repository without .git/hooks when the shell starts: the agent cannot create it and plant a hook."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    rt = runtime(box, level="off")
    try:
        await run(rt, "git init -q . && git config user.email a@b && git config user.name a && rm -rf .git/hooks")
    finally:
        await rt.close()
    assert not (box["ws"] / ".git" / "hooks").exists()
    rt = runtime(box)
    try:
        obs = await run(
            rt,
            "mkdir -p .git/hooks; echo 'touch pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit; "
            "echo x > file && git add file && echo staged",
        )
        assert not (box["ws"] / ".git" / "hooks" / "pre-commit").exists(), obs["content"]
        assert "staged" in obs["content"], obs["content"]  # git itself still works in the workspace
    finally:
        await rt.close()
    assert list((box["ws"] / ".git" / "hooks").iterdir()) == []  # what stays behind: git init's empty dir


async def test_vscode_settings_protected_when_missing_at_start(box):
    """A workspace without .vscode: the agent cannot create it and plant a task that runs when the user opens the
    folder (or settings naming a program VS Code starts), outside the sandbox. Rename and link tricks fail too."""
    assert not (box["ws"] / ".vscode").exists()
    rt = runtime(box)
    try:
        obs = await run(
            rt,
            'mkdir -p .vscode; echo \'{"version": "2.0.0"}\' > .vscode/tasks.json; '
            "mv .vscode v2; rm -rf .vscode; ln -s v2 .vscode; echo done",
        )
        assert "done" in obs["content"], obs
    finally:
        await rt.close()
    assert (box["ws"] / ".vscode").is_dir() and not (box["ws"] / ".vscode").is_symlink()
    assert list((box["ws"] / ".vscode").iterdir()) == []  # what stays behind: an empty directory
    assert not (box["ws"] / "v2").exists()


async def test_a_missing_cache_directory_is_made_so_tools_can_cache(box):
    """uv, pip and npm create their caches under ~/.cache; HOME is read-only inside, so a user without one would
    see their first sandboxed install fail: the sandbox makes it (0700) when it is one of the writable caches."""
    shutil.rmtree(box["home"] / ".cache")
    rt = runtime(box)
    try:
        obs = await run(rt, "mkdir -p ~/.cache/uv && echo cached > ~/.cache/uv/marker && echo ok")
        assert obs["content"].strip().endswith("ok"), obs["content"]
        assert (box["home"] / ".cache" / "uv" / "marker").read_text() == "cached\n"
        assert (box["home"] / ".cache").stat().st_mode & 0o777 == 0o700
    finally:
        await rt.close()
    box["env"]["XDG_CACHE_HOME"] = str(box["home"] / ".local" / "mycache")  # elsewhere: not a writable cache
    rt = runtime(box)
    try:
        await run(rt, "true")
        assert not (box["home"] / ".local" / "mycache").exists()  # only a cache the settings make writable
    finally:
        await rt.close()


async def test_version_manager_shims_keep_working_and_stay_read_only(box):
    """pyenv's shims run in the sandbox, and the agent cannot write there (docs/security.md §11.2): a program
    planted in a shims directory would run as the user at their next command."""
    shims = box["home"] / ".pyenv" / "shims"
    shims.mkdir(parents=True)
    real = shutil.which("python3")
    (shims / "python3").write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    (shims / "python3").chmod(0o755)
    box["env"]["PATH"] = f"{shims}:{box['env']['PATH']}"
    rt = runtime(box)
    try:
        obs = await run(
            rt,
            "command -v python3; python3 -c 'print(6*7)'; "
            "touch ~/.pyenv/shims/rg 2>/dev/null && echo planted || echo read-only",
        )
        lines = obs["content"].split()
        assert lines[0] == str(shims / "python3") and "42" in lines and "read-only" in lines, obs["content"]
        assert not (shims / "rg").exists()
    finally:
        await rt.close()


def _wheel(directory: Path) -> Path:
    """A minimal pure-Python wheel built by hand (no network, no build backend): module ``ohsbxdemo``."""
    import base64
    import hashlib
    import zipfile

    files = {
        "ohsbxdemo.py": "VALUE = 'installed in the sandbox'\n",
        "ohsbxdemo-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: ohsbxdemo\nVersion: 0.1\n",
        "ohsbxdemo-0.1.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    record.append("ohsbxdemo-0.1.dist-info/RECORD,,")
    path = directory / "ohsbxdemo-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("ohsbxdemo-0.1.dist-info/RECORD", "\n".join(record) + "\n")
    return path


@pytest.mark.slow
async def test_pip_install_into_a_workspace_venv(box):
    wheel = _wheel(box["ws"])
    rt = runtime(box)
    try:
        obs = await run(
            rt,
            (
                "python3 -m venv .venv && .venv/bin/python -m pip install -q --no-index --disable-pip-version-check "
                f"{wheel.name} && .venv/bin/python -c 'import ohsbxdemo; print(ohsbxdemo.VALUE)'"
            ),
            timeout=120,
        )
        assert "installed in the sandbox" in obs["content"], obs["content"]
        assert list((box["ws"] / ".venv" / "lib").glob("python3*/site-packages/ohsbxdemo.py"))
        # an index on the network is out of reach with the network off: pip says so, nothing is installed
        obs = await run(
            rt,
            (
                ".venv/bin/python -m pip install -q --retries 0 --timeout 3 --index-url http://127.0.0.1:9/ "
                "x-y-z; echo rc=$?"
            ),
            timeout=60,
        )
        assert "rc=0" not in obs["content"], obs["content"]
    finally:
        await rt.close()


async def test_hard_timeout_kills_the_sandbox_and_restarts_where_the_shell_was(box):
    (box["ws"] / "deep").mkdir()
    rt = runtime(box)
    try:
        obs = await run(rt, "cd deep; sleep 1000 & echo child; sleep 1000", timeout=1.5)
        assert obs["extras"]["metadata"]["exit_code"] == -1 and "killed" in obs["extras"]["metadata"]["suffix"], obs
        obs = await run(rt, "pwd; ps -e | grep -c sleep")
        lines = obs["content"].split()
        assert lines[0] == str(box["ws"] / "deep") and lines[1] == "0", obs["content"]  # a fresh sandbox
    finally:
        await rt.close()


# The rc of test_rc_traps (pyenv-like: a lock taken at start, removed by an EXIT trap, a background child),
# with its state in the workspace: HOME is read-only in the sandbox, and $$ is a pid of the sandbox's own.
HANGUP_RC = r"""echo $$ > "$RC_STATE/$$.lock"
sleep {nap} &
trap 'rm -f "$RC_STATE/$$.lock"; echo "$$" >> "$RC_STATE/trap-ran"' EXIT
"""


async def _settled(state: Path, nap: str, traps: int) -> tuple[list[str], int, list[int]]:
    """(locks left, traps run, children alive) once every trap ran and no child is left, or after 30 s."""
    import asyncio

    import psutil

    deadline = asyncio.get_running_loop().time() + 30
    while True:
        locks = sorted(p.name for p in state.glob("*.lock"))
        ran = len((state / "trap-ran").read_text().split()) if (state / "trap-ran").exists() else 0
        alive = [p.pid for p in psutil.process_iter(["cmdline"]) if nap in " ".join(p.info["cmdline"] or ())]
        if (not locks and ran >= traps and not alive) or asyncio.get_running_loop().time() > deadline:
            return locks, ran, alive
        await asyncio.sleep(0.05)


async def test_ending_a_sandboxed_shell_runs_the_rc_exit_trap(box):
    """A hard timeout and the runtime's close end the sandboxed shell as a closed terminal does: bubblewrap
    passes the SIGHUP on, the rc's EXIT trap runs inside, and its background child does not survive."""
    nap = f"1000.{secrets.randbelow(10**6)}"  # names this test's children among the machine's processes
    state = box["ws"] / "state"
    state.mkdir()
    (box["home"] / ".bashrc").write_text(HANGUP_RC.format(nap=nap))
    box["env"].update(RC_STATE=str(state), OH_USER_SHELL="1", OH_SHELL_STARTUP_TIMEOUT="30")
    rt = runtime(box)
    try:
        obs = await run(rt, "echo up")
        assert obs["content"].strip().endswith("up") and list(state.glob("*.lock")), obs
        obs = await run(rt, "sleep 100", timeout=1)  # hard timeout: the shell is ended, then a new one
        assert "was killed" in obs["extras"]["metadata"]["suffix"], obs
        assert await _settled(state, nap, 1) == ([], 1, []), "the first shell's trap and child"
        obs = await run(rt, "echo again")
        assert obs["content"].strip().endswith("again") and list(state.glob("*.lock")), obs
    finally:
        await rt.close()
    assert await _settled(state, nap, 2) == ([], 2, []), "the second shell's trap and child, at close"


@pytest.mark.parametrize("level", ["workspace-write", "off"])
async def test_an_engine_host_closed_while_the_rc_runs_ends_its_shell_and_the_rc_traps_run(box, level):
    """VS Code's engine terminal: the extension closes a host it no longer wants and SIGKILLs it 3 s later. A
    host still starting a shell whose rc is slow must end that shell at once, as a closed terminal does: the rc's
    EXIT trap removes its lock (left behind, it blocks every later shell of the user: issue 30 #4)."""
    import sys

    nap = f"1000.{secrets.randbelow(10**6)}"
    state = box["ws"] / "state"
    state.mkdir()
    (box["home"] / ".bashrc").write_text(HANGUP_RC.format(nap=nap) + "sleep 30\n")
    proc = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "oh.runtimes.local.enginehost", "--cwd", str(box["ws"]), "--startup-timeout", "60"),
        *("--sandbox", level, "--hide", str(box["oh_home"])),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        env={**box["env"], "RC_STATE": str(state)},
    )
    try:
        deadline = time.monotonic() + 30
        while not list(state.glob("*.lock")) and time.monotonic() < deadline:  # the rc runs, its lock taken
            await asyncio.sleep(0.05)
        assert list(state.glob("*.lock")), "the rc never ran"
        assert proc.stdin is not None
        proc.stdin.write(b'{"type": "close"}\n')
        proc.stdin.close()
        # The extension waits 3 s; 10 here (a loaded machine): a host that reads its close only after the
        # rc's 30 s is still starting then, and is SIGKILLed as the extension would.
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            proc.kill()
        assert await _settled(state, nap, 1) == ([], 1, []), "the rc's trap ran, its lock and child are gone"
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


async def test_a_sandboxed_shell_that_keeps_forking_leaves_nothing_after_a_hard_timeout(box):
    """The hang-up through bubblewrap signals the processes inside one by one: a job forked meanwhile is
    found in the shell's session and ended too (nothing of the old sandbox touches a file later)."""
    marks = box["ws"] / "marks"
    marks.mkdir()
    rt = runtime(box)
    try:
        await run(rt, "true")
        obs = await run(rt, "while :; do (sleep 2; touch marks/m$BASHPID) & done", timeout=1)
        assert "was killed" in obs["extras"]["metadata"]["suffix"], obs
        ended_at = time.time()
        await asyncio.sleep(2.5)
        # Only what touched a file after the answer counts: on a loaded machine the hang-up of hundreds of
        # forks takes longer than their 2 s nap, so some touch theirs while being ended (before the answer).
        later = [(p.name, round(p.stat().st_mtime - ended_at, 2)) for p in marks.iterdir()]
        assert sorted(m for m in later if m[1] > 0) == []
    finally:
        await rt.close()

"""A container without Docker (no engine runs here): ``docker run``'s flags from `oh share --docker` turned into a
bubblewrap sandbox with its own network namespace (no route to the host's loopback) and its own root (a tmpfs
with the system read-only), so the agent really sees the workspace at /workspace and reaches the backend only
through the mounted socket."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def available() -> bool:
    return shutil.which("bwrap") is not None


def bwrap_argv(docker_args: list[str], extra_env: dict[str, str] | None = None) -> list[str]:
    """The bwrap command line for ``docker run DOCKER_ARGS IMAGE``: -v, -w, -e and --user, as Docker reads them."""
    py_root = Path(os.path.realpath(sys.executable)).parents[1]  # the interpreter's prefix (pyenv, /usr/local...)
    argv = ["bwrap", "--unshare-net", "--unshare-pid", "--unshare-ipc", "--die-with-parent", "--new-session"]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for name in ("bin", "lib", "lib64", "sbin"):
        if os.path.islink(f"/{name}"):
            argv += ["--symlink", os.readlink(f"/{name}"), f"/{name}"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/home"]
    argv += ["--ro-bind", str(py_root), str(py_root), "--ro-bind", str(REPO), str(REPO)]
    argv += ["--clearenv", "--setenv", "PATH", f"{REPO}/.venv/bin:/usr/bin:/bin", "--setenv", "HOME", "/home"]
    it = iter(docker_args)
    for flag in it:
        value = next(it)
        if flag == "-v":
            parts = value.split(":")
            ro = len(parts) == 3 and parts[2] == "ro"
            argv += ["--ro-bind" if ro else "--bind", parts[0], parts[1]]
        elif flag == "-w":
            argv += ["--chdir", value]
        elif flag == "-e":
            k, _, v = value.partition("=")
            argv += ["--setenv", k, v]
        elif flag == "--user":
            assert value == f"{os.getuid()}:{os.getgid()}", value  # the container runs as the user
        else:
            raise AssertionError(f"unexpected docker flag {flag}")
    for k, v in (extra_env or {}).items():
        argv += ["--setenv", k, v]
    return argv + ["--"]


def devcontainer_docker_args(config: dict, workspace: str) -> list[str]:
    """What the Dev Containers tooling turns a devcontainer.json's ``mounts`` and ``remoteEnv`` into (plus its own
    workspace mount at /workspaces/<folder>), as ``docker run`` flags for ``bwrap_argv``."""
    target = f"/workspaces/{os.path.basename(workspace)}"
    args = ["-v", f"{workspace}:{target}", "-w", target]
    for mount in config.get("mounts") or []:
        fields = dict(part.partition("=")[::2] for part in mount.split(","))
        ro = ":ro" if "readonly" in mount.split(",") else ""
        args += ["-v", f"{fields['source']}:{fields['target']}{ro}"]
    for k, v in (config.get("remoteEnv") or {}).items():
        args += ["-e", f"{k}={v}"]
    return args

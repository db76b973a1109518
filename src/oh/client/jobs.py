"""Jobs, ``stat`` and write modes for the clients (docs/protocol.md §3.8-§3.9): action builders and
the methods both clients gain (``Client`` awaits them, ``SyncClient`` blocks).

    obs = client.run_background("pytest -q")          # returns at once
    job = obs.job_id                                   # "j3"
    done = client.job_wait(job, timeout=600)           # job observation: done.job["state"], ["exit_code"]
    part = client.job_output(job, offset=0)            # part.content, part.extras["next_offset"]
    env = client.ensure()                              # workspace bootstrap (§3.14): env.extras["state"] == "ready"
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..protocol import actions as _build
from ..protocol.actions import WRITE_MODES, ensure, job, stat

__all__ = ["WRITE_MODES", "ensure", "job", "stat", "run_background", "follow_up", "write", "AsyncJobs", "SyncJobs"]


def run_background(
    command: str, *, cwd: str | None = None, force: bool = False, env: dict[str, str] | None = None
) -> dict[str, Any]:
    return _build.run(command, background=True, cwd=cwd, force=force, env=env)


def follow_up(command: str, job_id: str, *, is_input: bool = False, timeout: float | None = None) -> dict[str, Any]:
    """An empty command (wait for more output) or input for the running command ``job_id``."""
    return _build.run(command, is_input=is_input, job_id=job_id, timeout=timeout)


def write(path: str, content: str, *, mode: str = "overwrite", encoding: str | None = None) -> dict[str, Any]:
    return _build.write(path, content, mode=mode, encoding=encoding)


class AsyncJobs:
    """Mixed into ``Client``: each method sends one action and returns its observation."""

    if TYPE_CHECKING:  # what the mixin needs of its client (Client.send)

        async def send(self, action: dict[str, Any]) -> Any: ...

    async def run_background(
        self, command: str, *, cwd: str | None = None, force: bool = False, env: dict[str, str] | None = None
    ):
        return await self.send(run_background(command, cwd=cwd, force=force, env=env))

    async def follow(self, job_id: str, command: str = "", *, is_input: bool = False, timeout: float | None = None):
        return await self.send(follow_up(command, job_id, is_input=is_input, timeout=timeout))

    async def jobs(self):
        return await self.send(job("list"))

    async def job_poll(self, job_id: str, *, tail: int | None = None):
        return await self.send(job("poll", job_id, tail=tail))

    async def job_wait(self, job_id: str, *, timeout: float | None = None, tail: int | None = None):
        return await self.send(job("wait", job_id, timeout=timeout, tail=tail))

    async def job_output(self, job_id: str, *, offset: int = 0, limit: int | None = None, wait: float | None = None):
        return await self.send(job("output", job_id, offset=offset, limit=limit, wait=wait))

    async def job_cancel(self, job_id: str):
        return await self.send(job("cancel", job_id))

    async def stat(self, path: str):
        return await self.send(stat(path))

    async def ensure(
        self,
        *,
        targets: list[str] | None = None,
        path: str | None = None,
        wait: bool = True,
        force: bool = False,
        timeout: float | None = None,
    ):
        """Make the workspace's environments ready (.venv, node_modules); the answer's extras say what is ready."""
        return await self.send(ensure(targets=targets, path=path, wait=wait, force=force, timeout=timeout))

    async def write_file(self, path: str, content: str, *, mode: str = "overwrite", encoding: str | None = None):
        return await self.send(write(path, content, mode=mode, encoding=encoding))


class SyncJobs:
    """Mixed into ``SyncClient``: the same methods, blocking."""

    if TYPE_CHECKING:  # what the mixin needs of its client (SyncClient.send)

        def send(self, action: dict[str, Any]) -> Any: ...

    def run_background(
        self, command: str, *, cwd: str | None = None, force: bool = False, env: dict[str, str] | None = None
    ):
        return self.send(run_background(command, cwd=cwd, force=force, env=env))

    def follow(self, job_id: str, command: str = "", *, is_input: bool = False, timeout: float | None = None):
        return self.send(follow_up(command, job_id, is_input=is_input, timeout=timeout))

    def jobs(self):
        return self.send(job("list"))

    def job_poll(self, job_id: str, *, tail: int | None = None):
        return self.send(job("poll", job_id, tail=tail))

    def job_wait(self, job_id: str, *, timeout: float | None = None, tail: int | None = None):
        return self.send(job("wait", job_id, timeout=timeout, tail=tail))

    def job_output(self, job_id: str, *, offset: int = 0, limit: int | None = None, wait: float | None = None):
        return self.send(job("output", job_id, offset=offset, limit=limit, wait=wait))

    def job_cancel(self, job_id: str):
        return self.send(job("cancel", job_id))

    def stat(self, path: str):
        return self.send(stat(path))

    def ensure(
        self,
        *,
        targets: list[str] | None = None,
        path: str | None = None,
        wait: bool = True,
        force: bool = False,
        timeout: float | None = None,
    ):
        """Make the workspace's environments ready (.venv, node_modules); the answer's extras say what is ready."""
        return self.send(ensure(targets=targets, path=path, wait=wait, force=force, timeout=timeout))

    def write_file(self, path: str, content: str, *, mode: str = "overwrite", encoding: str | None = None):
        return self.send(write(path, content, mode=mode, encoding=encoding))

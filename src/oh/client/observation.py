"""Typed view of an observation: still the OpenHands dict, with accessors."""

from __future__ import annotations

from typing import Any


class Observation(dict):
    @property
    def kind(self) -> str:
        return self.get("observation", "")

    @property
    def cause(self) -> int | None:
        return self.get("cause")

    @property
    def content(self) -> str:
        return self.get("content", "")

    @property
    def extras(self) -> dict[str, Any]:
        return self.get("extras") or {}

    @property
    def exit_code(self) -> int | None:
        md = self.extras.get("metadata") or {}
        return md.get("exit_code") if self.kind == "run" else None

    @property
    def error_id(self) -> str | None:
        return self.extras.get("error_id") if self.kind == "error" else None

    @property
    def ok(self) -> bool:
        return self.kind != "error" and (self.kind != "run" or self.exit_code == 0)

    # Jobs (docs/protocol.md §3.6): the id of a run observation's command, or of a job observation's job.
    @property
    def job_id(self) -> str | None:
        if self.kind == "run":
            return (self.extras.get("metadata") or {}).get("job_id")
        return (self.extras.get("job") or {}).get("job_id") if self.kind == "job" else None

    @property
    def job(self) -> dict[str, Any]:
        """A job observation's record: job_id, state, exit_code, command, cwd, ... ({} otherwise)."""
        return self.extras.get("job") or {}

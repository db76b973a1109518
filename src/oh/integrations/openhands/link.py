"""One conversation's connection to the oh backend serving its working directory.

The terminal and file-editor tools of a conversation share one ``_Link`` (so one connection and one
shell on the backend side); the SDK calls the tools from worker threads, which the thread-safe
``SyncClient`` allows. Discovery reads the session files (``oh.sessions``): the backend whose
workspace or allowed roots contain the directory.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from ... import sessions
from ...client import OhClientError, SyncClient
from ..discovery import find_session

log = logging.getLogger("oh.integrations.openhands")

CLIENT_NAME = "openhands-sdk"


class Link:
    """A lazily (re)connected SyncClient for one conversation's working directory."""

    def __init__(self, session: sessions.Session, workdir: str, name: str = CLIENT_NAME) -> None:
        self.session = session
        self.workdir = os.path.realpath(workdir)
        self.name = name
        self._client: SyncClient | None = None
        self._lock = threading.Lock()
        self.users = 0

    def client(self) -> SyncClient:
        with self._lock:
            if self._client is None or self._client.closed:
                # A rotated token or a restarted backend: re-read the session file before reconnecting.
                fresh = find_session(self.workdir, self.session.instance_id) or find_session(self.workdir)
                if fresh is None:
                    raise OhClientError(
                        f"No oh backend serves {self.workdir} any more. Start one with `oh start` in that directory."
                    )
                self.session = fresh
                self._client = SyncClient.connect(fresh.url, fresh.token, name=self.name, workdir=self.workdir)
            return self._client

    def send(self, action: dict[str, Any], timeout: float | None) -> dict[str, Any]:
        """Send and wait; a lost connection becomes an error observation (the next call reconnects).

        A connection already closed before sending (token rotated, backend restarted) is replaced first;
        the private shell of the old connection is gone then, which the error-free answer cannot hide,
        so the model sees a fresh shell exactly as after a reset.

        Consent (issue 19): any action may wait for the user's yes, so the wait grows by the backend's
        ``approval_timeout`` (session file); a ``REJECTED`` answer reads as the SDK's own user rejection
        (``UserRejectObservation``: "Action rejected: <reason>"), which the tools return as an error
        observation (an executor must return its tool's observation type)."""
        try:
            extra = float(getattr(self.session, "approval_timeout", 0.0) or 0.0)
            obs = self.client().send(action, timeout=None if timeout is None else timeout + extra)
            return rejection_as_sdk(obs)
        except OhClientError as exc:
            with self._lock:
                self._client = None
            return {"observation": "error", "content": str(exc), "extras": {"error_id": "CONNECTION_LOST"}}
        except TimeoutError:
            return {
                "observation": "error",
                "content": "The oh backend did not answer in time. Check it with `oh status`.",
                "extras": {"error_id": "TIMEOUT"},
            }

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


def rejection_as_sdk(obs: dict[str, Any]) -> dict[str, Any]:
    """A REJECTED observation (the user, a consent rule, or nobody within approval_timeout: the action
    was NOT executed) worded as the SDK words a user rejection, so the model reacts the same way."""
    if obs.get("observation") == "error" and (obs.get("extras") or {}).get("error_id") == "REJECTED":
        content = str(obs.get("content") or "")
        if not content.startswith("Action rejected: "):
            return {**obs, "content": "Action rejected: " + content}
    return obs


_links: dict[str, Link] = {}
_links_lock = threading.Lock()
_warned: set[str] = set()


def link_for(conv_key: str, workdir: str, instance: str | None, name: str) -> Link | None:
    """The shared link of a conversation, or None (warned once per directory) when no backend serves it."""
    with _links_lock:
        link = _links.get(conv_key)
        if link is None:
            session = find_session(workdir, instance)
            if session is None:
                real = os.path.realpath(workdir)
                if real not in _warned:
                    _warned.add(real)
                    log.warning(
                        "oh: no running oh backend serves %s; the OpenHands SDK's own terminal and file editor are "
                        "used. Run `oh start` (or `oh start --runtime vscode`) in that directory to act through oh.",
                        real,
                    )
                return None
            link = Link(session, workdir, name)
            try:
                link.client()  # connect now: a refused handshake falls back to the SDK's tools at once
            except OhClientError as exc:
                log.warning(
                    "oh: cannot use the oh backend for %s (%s); the OpenHands SDK's own tools are used.", workdir, exc
                )
                return None
            _links[conv_key] = link
        link.users += 1
        return link


def release(conv_key: str, link: Link) -> None:
    with _links_lock:
        link.users -= 1
        if link.users <= 0 and _links.get(conv_key) is link:
            del _links[conv_key]
            link.close()


class LinkedExecutor:
    """What the oh-backed SDK executors share: one conversation's link, released once on the first close()."""

    def __init__(self, link: Link, conv_key: str) -> None:
        self.link = link
        self._conv_key = conv_key
        self._closed = threading.Event()
        self.versions: dict[str, str] = {}  # path -> the version last read or written (§3.18, if_version)

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            release(self._conv_key, self.link)

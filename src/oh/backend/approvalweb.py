"""The approvals page's server (issue 40, docs/security.md §12): its own loopback port, separate from the
backend's, whose rule "any Origin is refused" stays absolute (a browser never reaches the agents' port). Here
a browser is the client, so the rules differ: Host must be the page's (DNS rebinding), Origin the page's
(cross-site requests and WebSockets), and everything past the page's static HTML needs a paired device's
cookie. The decisions are ``protocol.approvalweb``'s; this module only moves bytes.

It also runs the ``approval_notify`` command for each new question (argv, never a shell; no credential in its
environment) and says whether anyone can be reached (a paired device or a notifier), so a question from a
backend nobody watches waits instead of being refused at once.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import os
import time
from http import HTTPStatus
from typing import Any, Callable
from urllib.parse import urlsplit

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from ..protocol import approvalpage as page
from ..protocol import approvalweb as web
from ..protocol import frames

log = logging.getLogger("oh.backend.approvals")

NOTIFY_TIMEOUT = 30.0  # seconds a notifier may run before it is killed
RECENT = 20  # decisions the page lists


def _respond(connection: ServerConnection, status: HTTPStatus, body: bytes | str, ctype: str, **extra: str) -> Any:
    data = body.encode() if isinstance(body, str) else body
    response = connection.respond(status, "")
    response.body = data
    del response.headers["Content-Type"]
    del response.headers["Content-Length"]
    response.headers["Content-Type"] = ctype
    response.headers["Content-Length"] = str(len(data))
    for name, value in {**page.headers(), **extra}.items():
        response.headers[name] = value
    return response


def _text(connection: ServerConnection, status: HTTPStatus, text: str) -> Any:
    return _respond(connection, status, text + "\n", "text/plain; charset=utf-8")


def notifier_env(row: dict[str, Any], url: str) -> dict[str, str]:
    """The notifier's environment: ours without any OH_ variable (nothing of oh's state or credentials), plus
    the question's id, a one-line sanitized summary and the page's address."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OH_") and "TOKEN" not in k.upper()}
    env.update(
        OH_APPROVAL_ID=str(row.get("id", "")),
        OH_APPROVAL_SUMMARY=web.summary(row),
        OH_APPROVAL_URL=url + "#" + str(row.get("id", "")),
    )
    return env


class ApprovalWeb:
    def __init__(
        self,
        decide: Callable[[dict[str, Any]], dict[str, Any]],
        pending: Callable[[], list[dict[str, Any]]],
        protections: Callable[[], dict[str, str]],
        host: str,
        port: int = 0,
        public_origin: str | None = None,
        notify: tuple[str, ...] = (),
    ) -> None:
        self.decide, self.pending, self.protections = decide, pending, protections
        self.host, self.port, self.public = host, port, public_origin
        self.notify = tuple(notify)
        self.pairing = web.Pairing()
        self.recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=RECENT)
        self.live: dict[ServerConnection, str] = {}  # page sockets -> their device id
        self.site = web.Site(port, public_origin)
        self._server: Server | None = None
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        self._server = await serve(
            self._serve,
            self.host,
            self.port,
            process_request=self._process_request,
            max_size=64 * 1024,
            compression=None,
            server_header=None,
            open_timeout=10,
            close_timeout=2,
        )
        self.port = next(iter(self._server.sockets)).getsockname()[1]
        self.site = web.Site(self.port, self.public)
        log.info("approvals page on %s", self.site.url())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._server is not None:
            self._server.close()
            try:
                await asyncio.wait_for(self._server.wait_closed(), 3)
            except asyncio.TimeoutError:
                pass

    def reachable(self) -> bool:
        """Someone can be asked even with no live view or editor: a paired device, or a notifier."""
        return bool(self.pairing.devices) or bool(self.notify)

    # ------------------------------------------------------------------ consent's events
    def event(self, name: str, fields: dict[str, Any]) -> None:
        if name == "approval_decided":
            self.recent.appendleft(web.recent_row(fields))
        if name not in ("approval_requested", "approval_decided"):
            return
        if name == "approval_requested" and self.notify:
            self._spawn(self._run_notifier(fields))
        self._spawn(self._broadcast())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_notifier(self, row: dict[str, Any]) -> None:
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.notify,
                env=notifier_env(row, self.site.url()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("approval_notify %s could not start: %s", self.notify[0], exc)
            return
        try:
            code = await asyncio.wait_for(proc.wait(), NOTIFY_TIMEOUT)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            log.warning("approval_notify %s killed after %g s", self.notify[0], NOTIFY_TIMEOUT)
            return
        if code:
            log.warning("approval_notify %s exited %s", self.notify[0], code)

    def state(self) -> str:
        return json.dumps(
            {
                "type": "state",
                "pending": [web.page_row(r) for r in self.pending()],
                "recent": list(self.recent),
                "protections": self.protections(),
            }
        )

    async def _broadcast(self) -> None:
        if not self.live:
            return
        data = self.state()
        await asyncio.gather(*(self._send(c, data) for c in list(self.live)))

    async def _send(self, conn: ServerConnection, data: str) -> None:
        try:
            await asyncio.wait_for(conn.send(data), 10)
        except (ConnectionClosed, asyncio.TimeoutError):
            conn.transport.abort()

    # ------------------------------------------------------------------ HTTP
    def _process_request(self, connection: ServerConnection, request: Any) -> Any:
        path = urlsplit(request.path).path
        headers = request.headers
        refused = web.check_host(headers, self.site)
        if refused:
            return _text(connection, HTTPStatus.FORBIDDEN, refused)
        if path == "/":
            return _respond(connection, HTTPStatus.OK, page.PAGE, "text/html; charset=utf-8")
        if path not in ("/api/me", "/api/pair", "/live"):
            return _text(connection, HTTPStatus.NOT_FOUND, "not found")
        refused = web.check_origin(headers, self.site, required=path == "/live")
        if refused:
            return _text(connection, HTTPStatus.FORBIDDEN, refused)
        if path == "/api/pair":
            return self._pair(connection, headers)
        device = self.pairing.device(web.cookie_value(headers), time.time())
        if path == "/api/me":  # whether this browser is paired (the page then pairs or connects)
            me = {"paired": True, "device": device.device_id} if device else {"paired": False}
            return _respond(connection, HTTPStatus.OK, json.dumps(me), "application/json")
        if device is None:
            return _text(connection, HTTPStatus.UNAUTHORIZED, "not paired: `oh approvals pair` prints a code")
        connection.oh_device = device.device_id  # type: ignore[attr-defined]
        return None  # /live: the upgrade goes on

    def _pair(self, connection: ServerConnection, headers: Any) -> Any:
        codes = headers.get_all(web.PAIR_HEADER)
        if len(codes) != 1:
            return _text(connection, HTTPStatus.BAD_REQUEST, f"send the code in one {web.PAIR_HEADER} header")
        agent = headers.get("User-Agent") or "browser"
        got = self.pairing.redeem(codes[0], agent, time.time())
        if isinstance(got, str):
            status = HTTPStatus.TOO_MANY_REQUESTS if got.startswith("too many") else HTTPStatus.FORBIDDEN
            log.info("approvals page: pairing refused (%s)", status.phrase)
            return _text(connection, status, got)
        device, value = got
        log.info("approvals page: device %s paired", device.device_id)
        return _respond(
            connection,
            HTTPStatus.OK,
            json.dumps({"device": device.device_id}),
            "application/json",
            **{"Set-Cookie": web.set_cookie(value, self.site)},
        )

    # ------------------------------------------------------------------ the page's socket
    async def _serve(self, conn: ServerConnection) -> None:
        device_id = getattr(conn, "oh_device", None)
        if device_id is None:
            return
        self.live[conn] = device_id
        try:
            await conn.send(self.state())
            async for message in conn:
                if device_id not in self.pairing.devices:  # revoked while connected
                    await conn.close(4003, "device revoked")
                    return
                await conn.send(json.dumps(self._answer(message)))
        except ConnectionClosed:
            pass
        finally:
            self.live.pop(conn, None)

    def _answer(self, message: str | bytes) -> dict[str, Any]:
        try:
            frame = web.parse_decision(json.loads(message))
        except ValueError:
            frame = "not JSON"
        if isinstance(frame, str):
            return {"type": "result", "ok": False, "text": frame}
        answer = self.decide(frame)
        if answer.get("type") == "error":
            return {"type": "result", "ok": False, "text": web.visible(answer.get("message"))}
        results = answer.get("results") or [{}]
        r = results[0]
        ok = r.get("outcome") in ("allowed", "rejected")
        text = f"{r.get('id')}: {r.get('outcome')}" + (f" (always: {', '.join(r['rules'])})" if r.get("rules") else "")
        return {"type": "result", "ok": ok, "text": web.visible(text if ok else r.get("message"))}

    # ------------------------------------------------------------------ the control leg (decider only)
    def control(self, obj: dict[str, Any]) -> dict[str, Any]:
        op = obj.get("op")
        if op == "web":
            return frames.approvals_answer("web", url=self.site.url(), port=self.port)
        if op == "pair":
            code = self.pairing.new_code(time.time())
            return frames.approvals_answer("pair", code=code, ttl=self.pairing.ttl, url=self.site.url())
        if op == "devices":
            return frames.approvals_answer("devices", devices=[d.row() for d in self.pairing.devices.values()])
        device_id = obj.get("device")
        if not isinstance(device_id, str) or not self.pairing.revoke(device_id):
            return frames.refusal("BAD_REQUEST", f"No device {web.visible(device_id, 40)!s}: `oh approvals devices`.")
        self._spawn(self.close_device(device_id))
        return frames.approvals_answer("revoke", device=device_id)

    async def close_device(self, device_id: str | None = None) -> None:
        """Close the page sockets of one device (None: every device, after ``revoke_all``)."""
        doomed = [c for c, d in self.live.items() if device_id is None or d == device_id]
        for conn in doomed:
            self.live.pop(conn, None)
            await conn.close(4003, "device revoked")

    async def revoke_all(self) -> None:
        self.pairing.revoke_all()
        await self.close_device(None)

"""Scripted stand-ins for model APIs on a loopback ephemeral port (no real model).

FakeAnthropic speaks the Anthropic Messages API (Claude Code), FakeResponses the OpenAI Responses API
(Codex). Both follow one script: a request whose tools include TOOL and whose conversation holds no
tool result yet gets a call of TOOL with ARGS; one that carries the tool's result gets FINAL_TEXT;
anything else (the client's side requests: titles, summaries, warm-ups) a short text. Streaming
requests get the API's server-sent events; every request is recorded (path, body) for the test.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

FINAL_TEXT = "The command ran."


class FakeAnthropic:
    endpoint = "/v1/messages"

    def __init__(self, tool: str, args: dict[str, Any], on_tool_result: Callable[[], None] | None = None) -> None:
        self.tool = tool
        self.args = args
        # called before the final answer, while the client still holds its MCP servers (e.g. to snapshot `oh status`)
        self.on_tool_result = on_tool_result
        self.requests: list[tuple[str, dict]] = []
        self.tool_results: list[Any] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet: the test prints what it needs
                pass

            def do_HEAD(self):
                self._send(200, b"", "text/plain")

            def do_GET(self):
                self._send(
                    404,
                    json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "fake"}}).encode(),
                    "application/json",
                )

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?")[0]
                with fake._lock:
                    fake.requests.append((path, body))
                if path.endswith("/count_tokens") or path.endswith(":countTokens"):
                    return self._send(200, b'{"input_tokens": 12, "totalTokens": 12}', "application/json")
                if not path.endswith(fake.endpoint):
                    return self._send(
                        404, b'{"type":"error","error":{"type":"not_found_error","message":"fake"}}', "application/json"
                    )
                content = fake.answer(body)
                if body.get("stream") or "alt=sse" in self.path or path.endswith(":streamGenerateContent"):
                    return self._send(200, fake.sse(body, content), "text/event-stream")
                msg = fake.message(body, content)
                return self._send(200, json.dumps(msg).encode(), "application/json")

            def _send(self, code: int, data: bytes, ctype: str) -> None:
                self.send_response(code)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, name="fake-anthropic", daemon=True)

    def answer(self, body: dict) -> list[dict]:
        tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
        results = [
            b
            for m in body.get("messages") or []
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
        if results:
            with self._lock:
                first = not self.tool_results
                self.tool_results.extend(results)
            if first and self.on_tool_result:
                self.on_tool_result()
            return [{"type": "text", "text": FINAL_TEXT}]
        if self.tool in tools:
            return [{"type": "tool_use", "id": "toolu_fake_0001", "name": self.tool, "input": self.args}]
        return [{"type": "text", "text": "ok"}]

    def sse(self, body: dict, content: list[dict]) -> bytes:
        msg = self.message(body, [])
        events: list[tuple[str, dict]] = [
            ("message_start", {"type": "message_start", "message": dict(msg, stop_reason=None)})
        ]
        for i, block in enumerate(content):
            if block["type"] == "text":
                events += [
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "text_delta", "text": block["text"]},
                        },
                    ),
                ]
            else:
                events += [
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {
                                "type": "tool_use",
                                "id": block["id"],
                                "name": block["name"],
                                "input": {},
                            },
                        },
                    ),
                    (
                        "content_block_delta",
                        {
                            "type": "content_block_delta",
                            "index": i,
                            "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                        },
                    ),
                ]
            events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode() for name, ev in events)

    @staticmethod
    def message(body: dict, content: list[dict]) -> dict:
        stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": 5,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
            },
        }

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


class FakeResponses(FakeAnthropic):
    """The OpenAI Responses API (POST .../responses, streamed), as Codex's custom model providers use it.

    Codex offers an MCP server's tools as one `namespace` tool (name `mcp__SERVER`, its `tools` inside):
    TOOL `mcp__oh__run` is then called as function `run` in namespace `mcp__oh`.
    """

    endpoint = "/responses"

    def _find_tool(self, body: dict) -> dict | None:
        for t in body.get("tools") or []:
            if not isinstance(t, dict):
                continue
            if t.get("name") == self.tool:
                return {"name": self.tool}
            inner = [i.get("name") for i in t.get("tools") or [] if isinstance(i, dict)]
            if (
                t.get("type") == "namespace"
                and self.tool.startswith(f"{t.get('name')}__")
                and self.tool[len(t["name"]) + 2 :] in inner
            ):
                return {"name": self.tool[len(t["name"]) + 2 :], "namespace": t["name"]}
        return None

    def answer(self, body: dict) -> list[dict]:
        results = [
            i for i in body.get("input") or [] if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if results:
            with self._lock:
                first = not self.tool_results
                self.tool_results.extend(results)
            if first and self.on_tool_result:
                self.on_tool_result()
            return [
                {
                    "type": "message",
                    "role": "assistant",
                    "id": "msg_fake_2",
                    "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}],
                }
            ]
        call = self._find_tool(body)
        if call:
            return [
                {
                    "type": "function_call",
                    "id": "fc_fake_1",
                    "call_id": "call_fake_0001",
                    **call,
                    "arguments": json.dumps(self.args),
                }
            ]
        return [
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_fake_1",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        ]

    def sse(self, body: dict, content: list[dict]) -> bytes:
        usage = {
            "input_tokens": 12,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 17,
        }
        response = {
            "id": "resp_fake",
            "object": "response",
            "model": body.get("model", "fake"),
            "status": "in_progress",
            "output": [],
        }
        events = [("response.created", {"type": "response.created", "response": response})]
        for i, item in enumerate(content):
            events.append(
                ("response.output_item.done", {"type": "response.output_item.done", "output_index": i, "item": item})
            )
        events.append(
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": dict(response, status="completed", output=content, usage=usage),
                },
            )
        )
        return b"".join(f"event: {name}\ndata: {json.dumps(ev)}\n\n".encode() for name, ev in events)


class FakeGemini(FakeAnthropic):
    """The Gemini API (POST /v1beta/models/MODEL:generateContent or :streamGenerateContent?alt=sse), as Gemini
    CLI calls it with GOOGLE_GEMINI_BASE_URL. Its side requests (e.g. "who speaks next", a JSON answer) get
    a plain JSON text that says the user does."""

    endpoint = ""  # the model is part of the path: every POST is a generate call (countTokens aside)

    def answer(self, body: dict) -> list[dict]:
        declared = {
            f.get("name")
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for f in t.get("functionDeclarations") or []
            if isinstance(f, dict)
        }
        results = [
            p
            for c in body.get("contents") or []
            if isinstance(c, dict)
            for p in c.get("parts") or []
            if isinstance(p, dict) and "functionResponse" in p
        ]
        if results:
            with self._lock:
                first = not self.tool_results
                self.tool_results.extend(results)
            if first and self.on_tool_result:
                self.on_tool_result()
            return [{"text": FINAL_TEXT}]
        if self.tool in declared:
            return [{"functionCall": {"name": self.tool, "args": self.args}}]
        if (body.get("generationConfig") or {}).get("responseMimeType") == "application/json":
            return [{"text": json.dumps({"reasoning": "done", "next_speaker": "user"})}]
        return [{"text": "ok"}]

    def _response(self, parts: list[dict]) -> dict:
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17},
            "modelVersion": "fake",
        }

    def message(self, body: dict, content: list[dict]) -> dict:  # type: ignore[override]
        return self._response(content)

    def sse(self, body: dict, content: list[dict]) -> bytes:
        return f"data: {json.dumps(self._response(content))}\r\n\r\n".encode()

"""The local runtime's answers to the editor-knowledge actions (docs/protocol.md §3.6).

There is no language server here, so ``diagnostics``, ``open``, ``editors``, ``definition`` and
``references`` are refused with TOOL_UNSUPPORTED saying they need ``--runtime vscode``. ``symbols``
is answered honestly with ripgrep: lines that look like a definition of a name containing the query
(``def``/``class``/``function``/``const``/``interface``/...), and the answer says that is what it is.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Sequence

from ... import programs
from ...protocol.errors import ErrorId
from ...protocol.events import Action, error_observation
from ...protocol.knowledge import knowledge_observation, local_refusal

RG_TIMEOUT = 20.0  # seconds; a huge tree gives a partial answer rather than a hang
RG_MAX_BYTES = 4 * 1024 * 1024  # of rg's JSON output read at most
_KEYWORDS = r"(?:def|class|function|const|let|var|type|interface|enum|struct|trait|fn|func|module|namespace)"


def _pattern(query: str) -> str:
    # Definition-like line: keyword, then a name that contains the query (case-insensitive via -i).
    return rf"\b{_KEYWORDS}\s+[A-Za-z0-9_$]*{re.escape(query)}[A-Za-z0-9_$]*"


async def symbols_by_ripgrep(action: Action, roots: Sequence[str]) -> dict[str, Any]:
    query = action.args.get("query", "")
    limit = action.args.get("limit") or 100
    rg = programs.find("rg")
    if rg is None or not query.strip():
        why = (
            "ripgrep (`rg`) is not installed"
            if rg is None
            else "an empty query lists nothing without a language server"
        )
        return error_observation(
            action.id,
            ErrorId.TOOL_UNSUPPORTED,
            f"{local_refusal('symbols')} (The ripgrep fallback cannot help: {why}.)",
        )
    argv = [rg, "--json", "-i", "--max-columns", "300", "--max-count", "20", "-e", _pattern(query), "--", *roots]
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=programs.env()
    )
    assert proc.stdout is not None  # stdout=PIPE above
    try:
        out = await asyncio.wait_for(proc.stdout.read(RG_MAX_BYTES), RG_TIMEOUT)
    except asyncio.TimeoutError:
        out = b""
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    found: list[dict[str, Any]] = []
    name_re = re.compile(_pattern(query), re.I)
    for raw in out.splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue  # the last line may be cut at RG_MAX_BYTES
        if ev.get("type") != "match":
            continue
        data = ev["data"]
        text = (data.get("lines") or {}).get("text") or ""
        m = name_re.search(text)
        name = m.group(0).split()[-1] if m else query
        found.append(
            {
                "name": name,
                "kind": "text match",
                "container": None,
                "path": (data.get("path") or {}).get("text"),
                "line": data.get("line_number"),
                "column": (m.start() + 1) if m else 1,
            }
        )
        if len(found) >= limit:
            break
    lines = [f"{s['path']}:{s['line']}:{s['column']}: {s['name']}" for s in found]
    head = (
        f"No language server here (runtime local): these are ripgrep matches of definition-like lines for {query!r}, "
        "not a symbol index; use `oh start --runtime vscode` for real symbols."
    )
    content = head + "\n" + ("\n".join(lines) if lines else "No matches.")
    return knowledge_observation("symbols", action.id, content, {"query": query, "symbols": found, "source": "ripgrep"})


def refuse(action: Action) -> dict[str, Any]:
    return error_observation(action.id, ErrorId.TOOL_UNSUPPORTED, local_refusal(action.kind))

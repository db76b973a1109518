"""The `history` control requests' refusals, on in-process backends (real server, real local runtime)."""

from __future__ import annotations

from pathlib import Path

from oh.backend.server import Backend, BackendConfig

TOKEN = "history-test-token-0123456789"


async def _backend(ws: Path, history_dir: Path | None) -> Backend:
    b = Backend(
        BackendConfig(workspace=str(ws), write_session=False, history_dir=str(history_dir) if history_dir else None),
        TOKEN,
    )
    await b.start()
    return b


async def test_history_off_bad_requests_and_unknown_entries(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("OH_HOME", str(tmp_path / "home"))
    ws = tmp_path / "ws"
    ws.mkdir()
    off = await _backend(ws, None)
    try:
        answer = await off.historyctl.handle({"op": "list"}, True)
        assert answer["error_id"] == "HISTORY_OFF" and "--history" in answer["message"]
    finally:
        await off.stop()
    on = await _backend(ws, tmp_path / "history")
    try:
        history = on.historyctl
        assert (await history.handle({"op": "list"}, False))["entries"] == []
        assert (await history.handle({"op": "zap"}, True))["error_id"] == "BAD_REQUEST"
        assert (await history.handle({"op": "show", "entry": 7}, True))["error_id"] == "NO_ENTRY"
        undo = await history.handle({"op": "undo", "entry": 7}, True)
        assert undo["ok"] is False and undo["error"] == "NO_ENTRY"
        forbidden = await history.handle({"op": "undo", "entry": 7}, False)  # agent token, no name
        assert forbidden["error_id"] == "FORBIDDEN"
    finally:
        await on.stop()
    # Copies of the user's files: 0600 files in a 0700 directory (docs/security.md).
    assert (tmp_path / "history").stat().st_mode & 0o777 == 0o700
    for name in ("timeline.jsonl", "objects.pack"):
        assert (tmp_path / "history" / name).stat().st_mode & 0o777 == 0o600

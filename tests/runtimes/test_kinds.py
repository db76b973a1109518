"""The action-kind table (protocol/kinds.py) read by every layer: each built-in kind is handled or refused
by name, and a kind nobody wrote code for (``teleport``) is refused or asked at every layer, never let
through: the validator (TOOL_UNSUPPORTED / BAD_REQUEST), the consent gate (asked at every level), branch
mode (may change files), review mode (no proposal), repetition (ends a streak), the local runtime and the
vscode runtime (TOOL_UNSUPPORTED). The extension's half is extension/test/contract.test.ts."""

from __future__ import annotations

import types

import pytest

from oh.protocol import branch, consent, kinds, repetition, review
from oh.protocol.errors import ProtocolError
from oh.protocol.events import Action, parse_action, summarize
from oh.protocol.frames import KNOWN_CAPABILITIES, Registration
from oh.runtimes.editor_link import EditorLink, Welcome
from oh.runtimes.editors import EditorRegistry
from oh.runtimes.local import LocalRuntime
from oh.runtimes.vscode import VscodeRuntime

FAKE = "teleport"


def _teleport_check(args, cause):
    if not isinstance(args.get("where"), str):
        raise ProtocolError("BAD_REQUEST", "args.where must be a string.", cause)


TELEPORT = kinds.Kind(
    FAKE,
    _teleport_check,
    lambda args: f"teleport {args.get('where')}",
    lambda args: "unknown",  # nobody classified it
    capability=FAKE,
    example={"where": "moon"},
)


@pytest.fixture
def teleport(monkeypatch):
    """The fake kind in the table, as a new kind's first commit would put it (no executor anywhere yet)."""
    monkeypatch.setitem(kinds.TABLE, FAKE, TELEPORT)
    return TELEPORT


def _policy(level: str) -> consent.Policy:
    return consent.Policy(level=level, workspace="/w", home="/home/u")


def test_the_table_is_whole():
    assert set(kinds.NAMES) == set(kinds.TABLE) and FAKE not in kinds.TABLE
    for k in kinds.TABLE.values():
        parse_action({"id": 1, "action": k.name, "args": dict(k.example)})  # its example passes its check
        assert summarize(Action(1, k.name, dict(k.example))) != ""
        assert k.consent(k.example) in kinds.CONSENT_CLASSES, k.name
        assert k.capability is None or k.capability in KNOWN_CAPABILITIES, k.name
    # What the local runtime executes is a table kind; every other kind it refuses by name (below).
    assert set(LocalRuntime.HANDLERS) <= set(kinds.TABLE)


@pytest.mark.parametrize("level", consent.LEVELS)
def test_level_all_asks_every_kind_that_reveals_content(level):
    """Level `all` asks for every command, change and read: the knowledge kinds and stat included."""
    for k in kinds.TABLE.values():
        args = dict(k.example)
        cls = kinds.consent_class(k.name, args)
        verdict = consent.decide(_policy(level), k.name, args).verdict
        if level == "all" and cls in ("command", "change", "read") and k.name != "run":
            assert verdict == "ask", (k.name, cls)
        if cls == "none":
            assert verdict == "allow", k.name


@pytest.mark.parametrize("level", consent.LEVELS)
def test_an_unknown_kind_fails_closed_in_every_pure_layer(level):
    raw = {"id": 7, "action": FAKE, "args": {"where": "moon"}}
    with pytest.raises(ProtocolError) as exc:
        parse_action(raw)
    assert (str(exc.value.error_id), exc.value.cause) == ("TOOL_UNSUPPORTED", 7)
    assert kinds.consent_class(FAKE, {}) == "unknown"
    assert consent.decide(_policy(level), FAKE, {}).verdict == "ask"  # even at level never
    assert branch.is_change(FAKE, {}) is True  # the branch is in place before it could change anything
    assert review.is_proposal(FAKE, {}) is False  # only known changes can be shown as a diff
    streak = repetition.Streak("make", 3)
    repetition.step(streak, Action(7, FAKE, {}), 3, "note")
    assert streak.count == 0  # not neutral


def test_a_new_kind_in_the_table_is_checked_summarized_and_asked(teleport):
    assert parse_action({"id": 3, "action": FAKE, "args": {"where": "moon"}}).kind == FAKE
    with pytest.raises(ProtocolError) as exc:
        parse_action({"id": 3, "action": FAKE, "args": {}})
    assert str(exc.value.error_id) == "BAD_REQUEST"
    assert summarize(Action(3, FAKE, {"where": "moon"})) == "teleport moon"
    assert consent.decide(_policy("never"), FAKE, {"where": "moon"}).verdict == "ask"


async def test_the_local_runtime_refuses_a_kind_it_has_no_handler_for(teleport, tmp_path):
    rt = LocalRuntime(tmp_path)
    try:
        action = parse_action({"id": 4, "action": FAKE, "args": {"where": "moon"}})
        obs = await rt.execute(action, "a1")
        assert (obs["observation"], obs["extras"]["error_id"], obs["cause"]) == ("error", "TOOL_UNSUPPORTED", 4)
        # A knowledge kind without a language server is refused with what to do instead.
        obs = await rt.execute(parse_action({"id": 5, "action": "editors", "args": {}}), "a1")
        assert obs["extras"]["error_id"] == "TOOL_UNSUPPORTED" and "oh start --runtime vscode" in obs["content"]
    finally:
        await rt.close()


def test_the_vscode_runtime_refuses_what_the_editor_did_not_advertise(teleport, tmp_path):
    registry = EditorRegistry()
    link = EditorLink(registry, Welcome("i1", str(tmp_path), [str(tmp_path)], 8, 60.0, False, 600.0, True, 5.0))
    rt = VscodeRuntime(link, str(tmp_path), allowed_roots=[str(tmp_path)])
    reg = Registration([str(tmp_path)], "code", "1.99", 1, "0.1", list(KNOWN_CAPABILITIES), 1, None)
    editor = types.SimpleNamespace(registration=reg)
    for name, args in ((FAKE, {"where": "moon"}), ("ensure", {})):  # not advertised / not an editor's kind
        refused = rt._refusal(Action(6, name, args), editor)
        assert refused is not None and refused["extras"]["error_id"] == "TOOL_UNSUPPORTED", name
    assert rt._refusal(Action(6, "stat", {"path": "/w/a"}), editor) is None

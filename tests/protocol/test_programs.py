"""The program registry (issue 38 item 1): every record's examples, run through the real parser and the
decider, and the table's own consistency. A new program is one record; its examples are checked here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from oh.protocol import programs, shellparse
from oh.protocol.consent import Policy, decide, is_risky, parse_rules
from oh.protocol.programs.record import Program, TableError

EXAMPLES = [
    (rec.names[0], command, want)
    for rec in programs.RECORDS
    for want, commands in ((True, rec.match), (False, rec.not_match))
    for command in commands
]


def _base(part: shellparse.Part) -> str:
    return part.name.rsplit("/", 1)[-1]


@pytest.mark.parametrize(("family", "command", "want"), EXAMPLES)
def test_record_examples(family: str, command: str, want: bool) -> None:
    """A `match` example is flagged (risky, writes, writes blind or runs something) by its own record, and
    the decider's built-in risky notion agrees; a `not_match` example is none of those. A wrapper's examples
    are peeled off by the parser: what it adds (another user, the environment, input arguments) makes the
    command it runs risky or not."""
    parsed = shellparse.parse(command)
    assert parsed.unknown is None, (command, parsed.unknown)
    rec = programs.lookup(family)
    if rec.role == "wrapper":
        assert all(programs.lookup(_base(p)) is not rec for p in parsed.parts), f"{command!r}: {family} not peeled"
        assert any(is_risky(p) is not None for p in parsed.parts) is want, command
        return
    part = next((p for p in parsed.parts if programs.lookup(_base(p)) is rec), None)
    assert part is not None, f"{command!r} is not an example of {family}"
    got = programs.effects(part.argv)
    assert got.flagged is want, (command, got)
    if got.risky or got.runs:
        assert is_risky(part) is not None, command
    if not want:
        assert is_risky(part) is None, command


def test_every_record_has_examples_and_one_name_one_record() -> None:
    assert all(rec.match or rec.not_match for rec in programs.RECORDS)
    with pytest.raises(TableError):
        programs._index((Program(("x",)), Program(("x",))))
    with pytest.raises(TableError):
        Program(("x",), role="wizard")


def test_unknown_program_has_no_effects() -> None:
    got = programs.effects(["frobnicate", "--all", "x"])
    assert got.program is programs.UNKNOWN and got.unknown and not got.flagged
    assert programs.effects(["curl", "-s", "https://example.com"]).network
    assert not programs.effects(["ls"]).network and not programs.effects(["ls"]).unknown
    assert programs.lookup("python3.12").role == "interpreter" and programs.lookup("mkfs.ext4").risky


def _policy(level: str, ws: str, allow: tuple[str, ...] = ()) -> Policy:
    return Policy(level, parse_rules(allow), ws, "/home/u", ("/home/u/.local/state/oh",))


def test_zip_runs_its_test_command(tmp_path: Path) -> None:
    """zip was unknown before the registry (one record taught it): `zip -TT CMD` runs CMD (shown for real),
    so `risky` asks it and an allow rule for zip does not cover it; a plain zip is allowed."""
    (tmp_path / "a").write_text("x")
    marker = tmp_path / "marker"
    command = f"zip -q -T -TT 'touch {marker}' o.zip a"
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, timeout=60)
    assert marker.exists()  # the effect is real
    ws = str(tmp_path)
    assert decide(_policy("risky", ws), "run", {"command": command}).verdict == "ask"
    assert decide(_policy("commands", ws, ("run: zip *",)), "run", {"command": command}).verdict == "ask"
    assert decide(_policy("risky", ws), "run", {"command": "zip -q o.zip a"}).verdict == "allow"


def test_zip_into_git_is_asked(tmp_path: Path) -> None:
    """zip writes its archive: one into .git/ (hooks run code) is asked at `risky`; one beside is not."""
    ws = str(tmp_path)
    assert decide(_policy("risky", ws), "run", {"command": "zip .git/hooks/pre-commit a"}).verdict == "ask"
    assert decide(_policy("risky", ws), "run", {"command": "zip -m out.zip .git/config"}).verdict == "ask"
    assert decide(_policy("risky", ws), "run", {"command": "zip out.zip a"}).verdict == "allow"

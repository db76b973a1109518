"""An "always" answer to leaving the sandbox covers the approved shape and no wider (issue 36 #1, docs/security.md
§8 and §11.1): the saved ``unsandboxed:`` / ``network:`` rule names the files the command writes and reads by
redirection (``> PATH``, ``< PATH``), and a command with environment variables in front of it (or an action ``env``)
is never covered by a rule, so "always" is not offered for it. Each shape is approved "always" (its suggested rules
saved, as the gate saves them); then the shape itself is allowed and every variant is asked."""

from __future__ import annotations

import pytest

from oh.protocol import consent

HOME = "/home/u"
WS = "/w"
ESC = {"sandbox": "off", "reason": "needs to leave"}
NET = {"sandbox": "network", "reason": "needs the network"}


def _decide(rules: tuple[str, ...], command: str, esc=ESC, env=None, where=None) -> consent.Decision:
    policy = consent.Policy("never", consent.parse_rules(allow=rules), WS, HOME, ())
    args = {"command": command, **esc, **({"env": env} if env else {})}
    return consent.decide_unsandboxed(policy, args, where=where)


def _always(command: str, esc=ESC) -> tuple[str, ...]:
    """The rules an "always" answer to ``command`` saves (each parsed back, as the gate does)."""
    asked = _decide((), command, esc)
    assert asked.verdict == "ask" and asked.suggest, asked
    for text in asked.suggest:
        rule = consent.parse_rule(text, "allow")
        assert rule.text == text  # what is saved reads back as itself
    return asked.suggest


SHAPES = {
    "echo x > ~/o.txt": [
        ("echo x >> ~/.bashrc", None),
        ("echo x > ~/.bashrc", None),
        ("echo x > ~/o.txt 2> ~/.profile", None),
        ("echo x", None),
        ("echo x < ~/.ssh/id_ed25519 > ~/o.txt", None),
        ("echo x > ~/o.txt", {"PROMPT_COMMAND": "touch /tmp/m"}),
        ("echo x > ~/o.txt", {"FOO": "1"}),
        ("BASH_ENV=/w/e echo x > ~/o.txt", None),
    ],
    "echo x": [
        ("echo x", {"PROMPT_COMMAND": "touch /tmp/m"}),
        ("echo x", {"BASH_ENV": "/w/evil"}),
        ("echo x", {"FOO": "bar"}),
        ("FOO=1 echo x", None),
        ("env FOO=1 echo x", None),
        ("echo x > ~/.bashrc", None),
        ("echo x 2>> ~/.bashrc", None),
        ("echo x &> /etc/profile", None),
        ("echo x | tee ~/.bashrc", None),
        ("echo y", None),
    ],
    "git --version": [
        ("PATH=/w/evil git --version", None),
        ("git --version", {"PATH": "/w/evil"}),
        ("git --version > ~/.bashrc", None),
        ("git -c core.pager=x --version", None),
    ],
    "tee o.txt": [
        ("tee /home/u/.bashrc", None),
        ("tee o.txt > ~/.bashrc", None),
        ("cd ~ && tee o.txt", None),
    ],
    "cat < /w/in.txt": [
        ("cat < ~/.ssh/id_ed25519", None),
        ("cat", None),
        ("cat < /w/in.txt > ~/.bashrc", None),
    ],
}


@pytest.mark.parametrize("esc", [ESC, NET], ids=["unsandboxed", "network"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_always_covers_the_approved_shape_and_no_wider(shape, esc):
    saved = _always(shape, esc)
    assert _decide(saved, shape, esc).verdict == "allow", saved
    widened = [(cmd, env) for cmd, env in SHAPES[shape] if _decide(saved, cmd, esc, env).verdict != "ask"]
    assert widened == [], (saved, widened)


def test_the_saved_rule_names_what_is_written_and_read():
    assert _always("echo x > ~/o.txt") == ("unsandboxed: echo x > ~/o.txt",)
    assert _always("tee o.txt") == ("unsandboxed: tee o.txt > /w/o.txt",)  # relative: where it lands
    assert _always("cat < in.txt", NET) == ("network: cat < /w/in.txt",)
    assert _always("touch /w/a") == ("unsandboxed: touch /w/a",)  # an absolute path is in its words already


def test_an_env_or_an_assignment_is_never_offered_always():
    for command, env in (("echo x", {"PROMPT_COMMAND": "x"}), ("FOO=1 echo x", None), ("echo x > $F", None)):
        asked = _decide((), command, env=env)
        assert asked.verdict == "ask" and asked.suggest == (), (command, asked)


def test_a_relative_write_lands_where_the_shell_is():
    saved = _always("tee o.txt")
    here = consent.Where(WS)
    elsewhere = consent.Where(HOME)
    assert _decide(saved, "tee o.txt", where=here).verdict == "allow"
    assert _decide(saved, "tee o.txt", where=elsewhere).verdict == "ask"  # it would write ~/o.txt


def test_a_target_swapped_for_a_symlink_is_asked():
    saved = _always("echo x > /w/o.txt")
    real = consent.Where(WS, {"/w/o.txt": ("/w/o.txt",)})
    linked = consent.Where(WS, {"/w/o.txt": (f"{HOME}/.bashrc",)})
    assert _decide(saved, "echo x > /w/o.txt", where=real).verdict == "allow"
    assert _decide(saved, "echo x > /w/o.txt", where=linked).verdict == "ask"


@pytest.mark.parametrize(
    "text, allowed, asked",
    [
        ("unsandboxed: make install", "make install", "make install > log"),
        ("unsandboxed: make install *", "make install DESTDIR=/opt", "make install > /w/log"),
        ("network: npm ci", "npm ci", "npm ci < /w/x"),
        ('unsandboxed: echo ">"', "echo '>'", "echo"),  # an operator with no path after it stays a word
        ("unsandboxed: echo x>~/o.txt", "echo x > ~/o.txt", "echo x > ~/p.txt"),
    ],
)
def test_existing_rule_syntax_keeps_parsing_and_covers_no_more(text, allowed, asked):
    rule = consent.parse_rule(text, "allow")
    esc = NET if text.startswith("network") else ESC
    assert _decide((rule.text,), allowed, esc).verdict == "allow", rule
    assert _decide((rule.text,), asked, esc).verdict == "ask", rule

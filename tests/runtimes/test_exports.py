"""The agent shell's exports read from its real ``export -p`` (bash and zsh), as the engine host's ``exports``
answer gives them to the VS Code extension's extra shells (docs/protocol.md §3.4.1): parsed, never run."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from oh.runtimes.local.exports import parse_exports

VALUES = {
    "PLAIN": "bar",
    "QUOTES": "b a\"r'$`\\ x",
    "MULTI": "one\ntwo\n",
    "CTRL": "t\x01a\tb\x1b",
    "UTF": "héllo ✓",
    "EMPTY": "",
}
SET = "; ".join(f'export {k}="$V_{k}"' for k in VALUES)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_every_value_comes_back_exactly_from_the_real_export_p(shell: str) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "OH_TOKEN": "t", "OH_X_SECRET": "s", "OH_MODE": "m"}
    env.update({f"V_{k}": v for k, v in VALUES.items()})
    out = subprocess.run(
        [shell, "-f" if shell == "zsh" else "--norc", "-c", f"{SET}; export -p"],
        env=env,
        capture_output=True,
        timeout=10,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    got = parse_exports(out)
    assert {k: got.get(k) for k in VALUES} == VALUES
    assert got["PATH"] == "/usr/bin:/bin", "zsh ties PATH to an array (export -T)"
    assert got["OH_MODE"] == "m" and "OH_TOKEN" not in got and "OH_X_SECRET" not in got, "oh's secrets never leave"
    assert not {"PWD", "OLDPWD", "SHLVL", "_"} & set(got), "each shell has its own"


def test_text_that_is_not_a_declaration_is_data_and_ends_the_parse() -> None:
    text = 'declare -x A="1"\ntouch /tmp/x; declare -x B="2"\ndeclare -x \'C\'=3\n'
    assert parse_exports(text) == {"A": "1"}
    assert parse_exports('declare -x A="unclosed\n') == {}
    assert parse_exports("declare -x NOVALUE\ndeclare -x D=$'\\x41\\101\\n'\n") == {"D": "AA\n"}

"""The caches the sandbox keeps writable by default (setting `sandbox_writable`): a module of its own, stdlib-free,
so `config.settings` reads the default without loading the sandbox rules (startup of `oh config get`)."""

# Writable by default in workspace-write: the caches package managers write to while they build or install into
# the workspace (a wheel cache, a package store). ~ is the user's HOME. Never a directory a shell searches for
# programs, nor one holding such a directory (docs/security.md §11.2): a program the agent plants in
# `~/.pyenv/shims`, `~/.yarn/bin` or pnpm's home (its global bins) runs as the user at their next command, and
# in oh's own helpers. So pnpm's and yarn's stores are named, not their homes; pyenv's shims are not here (a
# `pyenv rehash` in the sandbox fails; run it outside).
DEFAULT_WRITABLE = (
    "~/.cache",
    "~/.npm",
    "~/.yarn/berry",
    "~/.pnpm-store",
    "~/.local/share/pnpm/store",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/go/pkg/mod",
    "~/.m2/repository",
    "~/.gradle/caches",
    "~/.nvm/.cache",
)


def _norm(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    while "//" in path:
        path = path.replace("//", "/")
    return path.rstrip("/") or "/"


def on_path(writable: list[str] | tuple[str, ...], path: str, home: str) -> list[tuple[str, str]]:
    """(entry, PATH directory) for each ``writable`` entry that is a directory on ``path`` (``:``-separated), or
    holds one, or lies in one: a program the agent writes there runs as the user (`oh start`, `oh doctor` warn)."""
    dirs = [_norm(d, home) for d in path.split(":") if d.startswith("/")]
    out: list[tuple[str, str]] = []
    for entry in writable:
        mine = _norm(entry, home)
        if mine == "/":
            continue
        hit = next((d for d in dirs if d == mine or d.startswith(mine + "/")), None)
        if hit is not None:
            out.append((entry, hit))
    return out


def on_path_warning(hits: list[tuple[str, str]]) -> str:
    """What `oh start` and `oh doctor` say about ``on_path``'s answer ("" when it is empty)."""
    if not hits:
        return ""
    said = ", ".join(f"{entry} (holds {d})" if entry != d else entry for entry, d in hits)
    return (
        f"sandbox_writable makes directories on your PATH writable for the agent: {said}. A program the agent "
        "writes there runs as you, unconfined, at your next command of that name (oh itself never runs one from "
        "there). Remove them unless you accept that: `oh config set sandbox_writable ...`"
    )

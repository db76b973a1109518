"""The caches the sandbox keeps writable by default (setting `sandbox_writable`): a module of its own, stdlib-free,
so `config.settings` reads the default without loading the sandbox rules (startup of `oh config get`)."""

# Writable by default in workspace-write: the caches package managers and version managers write to while
# they build or install into the workspace (a shim rehash, a wheel cache). ~ is the user's HOME.
DEFAULT_WRITABLE = (
    "~/.cache",
    "~/.npm",
    "~/.yarn",
    "~/.pnpm-store",
    "~/.local/share/pnpm",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/go/pkg/mod",
    "~/.m2/repository",
    "~/.gradle/caches",
    "~/.pyenv/shims",
    "~/.nvm/.cache",
)

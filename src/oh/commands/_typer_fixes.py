"""Adjustments to typer (0.2x) for a faster start and help/error texts written for people.

``install()`` is called once when the typer app is built. Each patch checks that the attribute it
replaces exists and otherwise does nothing: a typer upgrade can only make the texts plainer or
the start slower, never break a command (tests/cli/test_help_texts.py notices either).
"""

from __future__ import annotations

from typing import Any, get_args, get_origin


def install() -> None:
    import typer.core as core

    cls = getattr(core, "_TyperParameter", None)
    if cls is None or getattr(cls, "_oh_patched", False):
        return
    _skip_pydantic_for_absent_flags(cls)
    if hasattr(cls, "display_type"):
        cls.display_type = _display_type
        cls.display_type_rich = _display_type
    argument = getattr(core, "TyperArgument", None)
    if argument is not None and hasattr(argument, "_usage_display_name"):
        argument._usage_display_name = _usage_display_name
    _plain_validation_errors()
    for command_class in (getattr(core, "TyperCommand", None), getattr(core, "TyperGroup", None)):
        if command_class is not None and hasattr(command_class, "format_help"):
            _reflow_help_paragraphs(command_class)
    cls._oh_patched = True


def _reflow_help_paragraphs(command_class) -> None:
    """A docstring's later paragraphs flow as prose, like its first line.

    typer (rich markup) keeps the single line breaks of the source there, so at 80 columns a source
    line of 85 characters printed as a full line and then a stub ("... watches: the window" / "whose
    workspace ..."). Joining them here, when help is drawn, costs nothing on the other paths.
    A paragraph that starts with click's no-rewrap mark (\\b) keeps its lines.
    """
    original = command_class.format_help

    def format_help(self, ctx, formatter):
        self.help = reflow(self.help)
        return original(self, ctx, formatter)

    command_class.format_help = format_help


def reflow(text: str | None) -> str | None:
    if not text:
        return text
    import inspect

    head, mark, tail = inspect.cleandoc(text).partition("\f")
    paragraphs = [
        p if p.startswith("\b") else " ".join(line.strip() for line in p.splitlines()) for p in head.split("\n\n")
    ]
    return "\n\n".join(paragraphs) + mark + tail


def _skip_pydantic_for_absent_flags(cls) -> None:
    """Speed (measured: ~60 ms of every run; benchmarks/cli_startup.py).

    typer coerces every parameter value through pydantic, except bool flags whose value is already
    a bool. Its own ``--help`` flag arrives as ``None`` when absent, so each invocation imports
    pydantic just to coerce ``None`` to ``None``. We skip exactly that case (bool annotation, value
    None) and keep typer's required-check and callback.
    """
    if not hasattr(cls, "process_value"):
        return
    original = cls.process_value

    def process_value(self, ctx, value):
        desc = getattr(self, "type_descriptor", None)
        if value is None and desc is not None and getattr(desc, "annotation", None) is bool and not self.required:
            return self.callback(ctx, self, value) if self.callback is not None else value
        return original(self, ctx, value)

    cls.process_value = process_value


# Help: `<bool>`, `<list[str]>`, `<float range>` become click's plain words.
_WORDS = {int: "INTEGER", float: "NUMBER", str: "TEXT"}


def _word(annotation: Any) -> str:
    if get_origin(annotation) in (list, tuple):
        inner = [a for a in get_args(annotation) if a is not Ellipsis]
        words = [_word(a) for a in inner] or ["TEXT"]
        return " ".join(words) if get_origin(annotation) is tuple else f"{words[0]}..."
    return _WORDS.get(annotation, "VALUE")


def _display_type(self, ctx=None) -> str | None:
    desc = getattr(self, "type_descriptor", None)
    annotation = getattr(desc, "annotation", None)
    if annotation is bool or getattr(self, "is_flag", False):
        return None  # a flag takes no value: nothing to show
    if getattr(self, "param_type_name", "") == "argument":
        return None  # its name already says it (PATH, COMMAND...)
    if self.metavar:
        return self.metavar
    choices = getattr(desc, "choices", None) if getattr(desc, "is_choice", False) else None
    if choices:
        return "|".join(str(getattr(c, "value", c)) for c in choices)
    return _word(annotation)


def _usage_display_name(self) -> str:
    name = (self.metavar or self.name or "").upper()
    name = name if self.required else f"[{name}]"
    return name + ("..." if self.nargs != 1 else "")


# Errors: pydantic's "Input should be a valid integer, unable to parse string as an integer".
def _plain(error: dict) -> str:
    kind = error.get("type", "")
    value = error.get("input")
    ctx = error.get("ctx") or {}
    shown = repr(value) if isinstance(value, str) else str(value)
    if kind.startswith("int_"):
        return f"{shown} is not a whole number."
    if kind.startswith("float_"):
        return f"{shown} is not a number."
    if kind.startswith("bool_"):
        return f"{shown} is not true or false."
    bounds = {
        "greater_than_equal": ("ge", "at least"),
        "greater_than": ("gt", "more than"),
        "less_than_equal": ("le", "at most"),
        "less_than": ("lt", "less than"),
    }
    if kind in bounds:
        key, words = bounds[kind]
        return f"must be {words} {ctx.get(key)} (got {shown})."
    return str(error.get("msg", "invalid value")).replace("Input should be", "must be")


def _plain_validation_errors() -> None:
    import types

    import typer._coercion as coercion

    param_types: types.ModuleType | None
    try:
        import typer._param_types as param_types
    except ImportError:  # pragma: no cover
        param_types = None
    from typer._display import get_error_msg as original

    def get_error_msg(exc: Any) -> str:
        try:
            errors = exc.errors()
        except Exception:  # noqa: BLE001 - not a pydantic error: typer's own text
            return original(exc)
        return _plain(errors[0]) if errors else original(exc)

    modules: tuple[types.ModuleType | None, ...] = (coercion, param_types)
    for module in modules:
        if module is not None and hasattr(module, "get_error_msg"):
            setattr(module, "get_error_msg", get_error_msg)  # noqa: B010 - typer's private hook, not in its types

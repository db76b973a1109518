"""Compact JSON for the fast path on top of the C accelerator ``_json``, without ``json`` itself.

``import json`` pulls in ``re`` (and ``enum``): ~15 ms of a ~25 ms interpreter start on the
benchmark machine, i.e. a large slice of the 4x budget (docs/benchmarks.md). ``_json`` is the very
scanner/escaper ``json`` uses, so parsing and string escaping are the stdlib's own; only the small
tree walk of ``dumps`` is ours. Without ``_json`` (other interpreters) it falls back to ``json``.
Pretty output (``--json``) still uses ``json`` (loaded only then).
"""

from __future__ import annotations

try:
    import _json
except ImportError:  # pragma: no cover - CPython always has it
    _json = None  # type: ignore[assignment]  # checked before every use

_INF = float("inf")


class _Context:
    # The attributes _json.make_scanner reads (those of json.JSONDecoder with default options).
    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    memo: dict = {}

    @staticmethod
    def parse_constant(name: str):
        raise ValueError(f"JSON constant {name} is not allowed")


# _json.make_scanner takes any object with a JSONDecoder's attributes (typeshed says a JSONDecoder)
_scan = _json.make_scanner(_Context()) if _json is not None else None  # type: ignore[arg-type]
_WS = " \t\n\r"


def loads(data: bytes | str):
    text = data.decode("utf-8") if isinstance(data, (bytes, bytearray)) else data
    if _scan is None:  # pragma: no cover
        import json

        return json.loads(text)
    start = len(text) - len(text.lstrip(_WS))
    try:
        value, end = _scan(text, start)
    except StopIteration:
        raise ValueError("not JSON") from None
    if text[end:].strip(_WS):
        raise ValueError("extra data after the JSON value")
    return value


def dumps(obj) -> str:
    """Compact, non-ASCII kept (as ``json.dumps(obj, ensure_ascii=False, separators=(",", ":"))``)."""
    if _json is None:  # pragma: no cover
        import json

        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return "".join(_walk(obj))


def _walk(obj):
    if isinstance(obj, str):
        yield _json.encode_basestring(obj)
    elif obj is None:
        yield "null"
    elif obj is True:
        yield "true"
    elif obj is False:
        yield "false"
    elif isinstance(obj, int):
        yield int.__repr__(obj)
    elif isinstance(obj, float):
        if obj != obj or obj in (_INF, -_INF):
            raise ValueError(f"{obj} cannot be sent as JSON")
        yield float.__repr__(obj)
    elif isinstance(obj, dict):
        yield "{"
        for i, (key, value) in enumerate(obj.items()):
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, not {type(key).__name__}")
            yield ("," if i else "") + _json.encode_basestring(key) + ":"
            yield from _walk(value)
        yield "}"
    elif isinstance(obj, (list, tuple)):
        yield "["
        for i, value in enumerate(obj):
            if i:
                yield ","
            yield from _walk(value)
        yield "]"
    else:
        raise TypeError(f"{type(obj).__name__} cannot be sent as JSON")

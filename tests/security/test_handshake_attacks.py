"""Handshake attacks against a REAL backend process (started as the launcher does: `oh start --detach
--json` with OH_HOME): no/wrong/misplaced token, browser Origins, DNS-rebinding Hosts, odd schemes,
huge headers. Every request carries, right after its upgrade request, a WebSocket frame with a `run`
that would create a marker file: each must be refused before the upgrade (HTTP status checked), and
afterwards no marker exists, /v1/status counts 0 actions and the trace has no request. A positive
control (the same request done right) proves the harness would have seen an execution.
Only loopback is bound, and a non-loopback host is refused loudly at every entry point."""

from __future__ import annotations

import base64
import json
import socket
import time

import pytest

from . import helpers
from .conftest import record


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    """One real local-runtime backend for the whole module: (runner, info, token, port)."""
    from cli.conftest import Oh

    runner = Oh(tmp_path_factory.mktemp("attacks"))
    info = runner.start("local")
    token = runner.session(info["instance_id"])["token"]
    yield runner, info, token, info["port"]
    runner.cleanup()


def _marker(runner, name: str):
    return runner.workspace / f"marker-{name}"


def _attack_frame(runner, name: str) -> bytes:
    action = {
        "id": 1,
        "action": "run",
        "args": {"command": f"touch {_marker(runner, name)}", "blocking": True},
        "timeout": 5,
    }
    return helpers.ws_text_frame(json.dumps(action))


def _wrong_same_length(token: str) -> str:
    return ("A" if token[0] != "A" else "B") + token[1:]


# (name, path, headers builder (token, port) -> [(header, value)], allowed statuses). Every case
# is something a web page, another local program, or a network peer can send.
def H(port):
    return ("Host", f"127.0.0.1:{port}")


def A(token):
    return ("Authorization", f"Bearer {token}")


CASES = [
    # -- the token: missing, wrong, misplaced, wrong scheme
    ("no-token", "/v1/agent", lambda t, p: [H(p)], {401}),
    ("wrong-token-same-length", "/v1/agent", lambda t, p: [H(p), A(_wrong_same_length(t))], {401}),
    ("token-prefix", "/v1/agent", lambda t, p: [H(p), A(t[:-1])], {401}),
    ("token-plus-char", "/v1/agent", lambda t, p: [H(p), A(t + "x")], {401}),
    ("token-uppercased", "/v1/agent", lambda t, p: [H(p), A(t.upper() if t.upper() != t else t.lower())], {401}),
    ("token-with-extra-word", "/v1/agent", lambda t, p: [H(p), ("Authorization", f"Bearer {t} extra")], {401}),
    ("empty-bearer", "/v1/agent", lambda t, p: [H(p), ("Authorization", "Bearer ")], {401}),
    ("bearer-alone", "/v1/agent", lambda t, p: [H(p), ("Authorization", "Bearer")], {401}),
    ("token-in-query", "/v1/agent?token={t}", lambda t, p: [H(p)], {401}),
    ("access-token-in-query", "/v1/agent?access_token={t}", lambda t, p: [H(p)], {401}),
    ("authorization-in-query", "/v1/agent?authorization=Bearer%20{t}", lambda t, p: [H(p)], {401}),
    ("token-in-path", "/v1/agent/{t}", lambda t, p: [H(p)], {401}),
    (
        "basic-scheme",
        "/v1/agent",
        lambda t, p: [H(p), ("Authorization", "Basic " + base64.b64encode(f"oh:{t}".encode()).decode())],
        {401},
    ),
    ("basic-scheme-raw-token", "/v1/agent", lambda t, p: [H(p), ("Authorization", f"Basic {t}")], {401}),
    ("token-scheme", "/v1/agent", lambda t, p: [H(p), ("Authorization", f"Token {t}")], {401}),
    ("no-space-scheme", "/v1/agent", lambda t, p: [H(p), ("Authorization", f"Bearer{t}")], {401}),
    ("colon-scheme", "/v1/agent", lambda t, p: [H(p), ("Authorization", f"Bearer:{t}")], {401}),
    ("bare-token", "/v1/agent", lambda t, p: [H(p), ("Authorization", t)], {401}),
    (
        "lowercase-scheme-wrong-token",
        "/v1/agent",
        lambda t, p: [H(p), ("Authorization", f"bearer {_wrong_same_length(t)}")],
        {401},
    ),
    (
        "uppercase-scheme-wrong-token",
        "/v1/agent",
        lambda t, p: [H(p), ("Authorization", f"BEARER {_wrong_same_length(t)}")],
        {401},
    ),
    ("two-authorization-right-and-wrong", "/v1/agent", lambda t, p: [H(p), A(t), A("wrong")], {401}),
    ("two-authorization-both-right", "/v1/agent", lambda t, p: [H(p), A(t), A(t)], {401}),
    ("proxy-authorization", "/v1/agent", lambda t, p: [H(p), ("Proxy-Authorization", f"Bearer {t}")], {401}),
    ("cookie", "/v1/agent", lambda t, p: [H(p), ("Cookie", f"token={t}; oh={t}")], {401}),
    # a browser cannot set Authorization on a WebSocket, but it can set the subprotocol header
    ("subprotocol-header", "/v1/agent", lambda t, p: [H(p), ("Sec-WebSocket-Protocol", t)], {401}),
    ("x-header", "/v1/agent", lambda t, p: [H(p), ("X-OH-Token", t), ("X-Auth-Token", t)], {401}),
    ("wrong-token-editor", "/v1/editor", lambda t, p: [H(p), A(_wrong_same_length(t))], {401}),
    ("wrong-token-control", "/v1/control", lambda t, p: [H(p), A(_wrong_same_length(t))], {401}),
    ("wrong-token-monitor", "/v1/monitor", lambda t, p: [H(p)], {401}),
    # -- browsers: any Origin is refused, even with the right token (CVE-2025-52882 class)
    ("origin-null", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", "null")], {403}),
    ("origin-web", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", "https://evil.example")], {403}),
    ("origin-same-host", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", f"http://127.0.0.1:{p}")], {403}),
    ("origin-localhost", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", f"http://localhost:{p}")], {403}),
    (
        "origin-vscode-webview",
        "/v1/agent",
        lambda t, p: [H(p), A(t), ("Origin", "vscode-webview://1n2o3p4q5r6s7t8u9v0w")],
        {403},
    ),
    ("origin-vscode-file", "/v1/editor", lambda t, p: [H(p), A(t), ("Origin", "vscode-file://vscode-app")], {403}),
    ("origin-file", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", "file://")], {403}),
    (
        "origin-chrome-extension",
        "/v1/control",
        lambda t, p: [H(p), A(t), ("Origin", "chrome-extension://abcdefghijklmnop")],
        {403},
    ),
    ("origin-empty-value", "/v1/agent", lambda t, p: [H(p), A(t), ("Origin", "")], {403}),
    (
        "origin-twice",
        "/v1/agent",
        lambda t, p: [H(p), A(t), ("Origin", "null"), ("Origin", "https://evil.example")],
        {403},
    ),
    ("origin-lowercase-name", "/v1/agent", lambda t, p: [H(p), A(t), ("origin", "https://evil.example")], {403}),
    # -- DNS rebinding and other Hosts, all with the right token
    ("host-localhost-evil", "/v1/agent", lambda t, p: [("Host", f"localhost.evil.com:{p}"), A(t)], {403}),
    ("host-nip-io", "/v1/agent", lambda t, p: [("Host", f"127.0.0.1.nip.io:{p}"), A(t)], {403}),
    ("host-evil-name", "/v1/agent", lambda t, p: [("Host", f"evil.example:{p}"), A(t)], {403}),
    ("host-private-ip", "/v1/agent", lambda t, p: [("Host", f"10.0.0.1:{p}"), A(t)], {403}),
    ("host-lan-ip", "/v1/agent", lambda t, p: [("Host", f"192.168.1.20:{p}"), A(t)], {403}),
    ("host-any-ip", "/v1/agent", lambda t, p: [("Host", f"0.0.0.0:{p}"), A(t)], {403}),
    ("host-v4-mapped-v6", "/v1/agent", lambda t, p: [("Host", f"[::ffff:127.0.0.1]:{p}"), A(t)], {403}),
    ("host-no-port", "/v1/agent", lambda t, p: [("Host", "127.0.0.1"), A(t)], {403}),
    ("host-localhost-no-port", "/v1/agent", lambda t, p: [("Host", "localhost"), A(t)], {403}),
    (
        "host-wrong-port",
        "/v1/agent",
        lambda t, p: [("Host", f"127.0.0.1:{p + 1 if p < 65535 else p - 1}"), A(t)],
        {403},
    ),
    ("host-userinfo", "/v1/agent", lambda t, p: [("Host", f"127.0.0.1:{p}@evil.example"), A(t)], {403}),
    ("host-trailing-dot", "/v1/agent", lambda t, p: [("Host", f"localhost.:{p}"), A(t)], {403}),
    ("host-missing", "/v1/agent", lambda t, p: [A(t)], {400, 403}),
    ("host-empty", "/v1/agent", lambda t, p: [("Host", ""), A(t)], {400, 403}),
    ("two-hosts-good-and-evil", "/v1/agent", lambda t, p: [H(p), ("Host", f"evil.example:{p}"), A(t)], {400, 403}),
    ("two-hosts-both-good", "/v1/agent", lambda t, p: [H(p), H(p), A(t)], {400, 403}),
    # -- oversized and malformed requests (refused by the HTTP layer or by our checks)
    (
        "very-long-authorization",
        "/v1/agent",
        lambda t, p: [H(p), ("Authorization", "Bearer " + "A" * 20_000)],
        {400, 401, 413, 431},
    ),
    (
        "long-authorization-under-limit",
        "/v1/agent",
        lambda t, p: [H(p), ("Authorization", "Bearer " + "A" * 7_000)],
        {401},
    ),
    (
        "very-long-origin",
        "/v1/agent",
        lambda t, p: [H(p), A(t), ("Origin", "https://" + "e" * 100_000)],
        {400, 403, 413, 431},
    ),
    ("very-long-host", "/v1/agent", lambda t, p: [("Host", "a" * 9_000 + f":{p}"), A(t)], {400, 403, 413, 431}),
    ("very-long-path", "/v1/agent?" + "q" * 20_000, lambda t, p: [H(p), A(t)], {400, 404, 413, 414, 431}),
    (
        "too-many-headers",
        "/v1/agent",
        lambda t, p: [H(p), A(t)] + [(f"X-Pad-{i}", "x") for i in range(300)],
        {400, 413, 431},
    ),
    ("path-traversal", "/v1/x/../agent", lambda t, p: [H(p), A(t)], {404}),
    ("path-case", "/v1/AGENT", lambda t, p: [H(p), A(t)], {404}),
    ("path-double-slash", "//v1/agent", lambda t, p: [H(p), A(t)], {404}),
    ("status-with-origin", "/v1/status", lambda t, p: [H(p), A(t), ("Origin", "https://evil.example")], {403}),
    ("status-rebinding", "/v1/status", lambda t, p: [("Host", f"evil.example:{p}"), A(t)], {403}),
    ("status-no-token", "/v1/status", lambda t, p: [H(p)], {401}),
    ("health-with-origin", "/v1/health", lambda t, p: [H(p), ("Origin", "https://evil.example")], {403}),
    ("health-rebinding", "/v1/health", lambda t, p: [("Host", f"evil.example:{p}")], {403}),
]
METHOD_CASES = [
    # methods and versions a websockets server never upgrades (with everything else right)
    ("post-method", "POST", "HTTP/1.1", {400, 405}),
    ("put-method", "PUT", "HTTP/1.1", {400, 405}),
    ("http-1.0", "GET", "HTTP/1.0", {400, 505}),
]
TRIED: dict[str, int | None] = {}  # attack -> HTTP status it got


@pytest.mark.parametrize("name,path,build,allowed", CASES, ids=[c[0] for c in CASES])
def test_attack_is_refused_before_the_upgrade(target, name, path, build, allowed):
    runner, info, token, port = target
    request = helpers.upgrade_request(path.format(t=token), build(token, port))
    status, raw, closed = helpers.raw_exchange(port, request + _attack_frame(runner, name), timeout=5)
    assert status in allowed, f"{name}: HTTP {status}: {raw[:300]!r}"
    assert b"101 Switching Protocols" not in raw
    assert closed, f"{name}: the server kept the refused connection open"
    assert token.encode() not in raw, f"{name}: the answer echoes the token"
    TRIED[name] = status


@pytest.mark.parametrize("name,method,version,allowed", METHOD_CASES, ids=[c[0] for c in METHOD_CASES])
def test_wrong_method_or_version_is_refused(target, name, method, version, allowed):
    runner, info, token, port = target
    request = helpers.upgrade_request("/v1/agent", [H(port), A(token)], method=method, version=version)
    status, raw, closed = helpers.raw_exchange(port, request + _attack_frame(runner, name), timeout=5)
    assert status in allowed and b"101 Switching" not in raw, (status, raw[:200])
    TRIED[name] = status


def test_scheme_name_is_case_insensitive_but_the_token_is_not(target):
    """RFC 7235: auth-scheme names are case-insensitive, so `bearer <token>` is the right token, not
    an attack (it still needs the token, compared exactly)."""
    runner, info, token, port = target
    for scheme in ("bearer", "BEARER", "BeArEr"):
        status, raw, _ = helpers.raw_exchange(
            port, helpers.upgrade_request("/v1/status", [H(port), ("Authorization", f"{scheme} {token}")]), timeout=2
        )
        assert status == 200, (scheme, raw[:200])


def test_zero_actions_executed_then_positive_control(target):
    """After every attack: no marker, 0 actions in /v1/status, no request in the trace. Then the same
    request done right IS executed — so the checks above would have seen an execution."""
    runner, info, token, port = target
    markers = sorted(p.name for p in runner.workspace.glob("marker-*"))
    assert markers == [], f"an attack executed an action: {markers}"
    from oh import sessions

    session = sessions.read(runner.session_file(info["instance_id"]))
    st = helpers.backend_status(session)
    assert st["stats"] == {"done": 0, "pending": 0, "errors": 0}, st["stats"]
    assert st["agents"] == [] and st["editors"] == []
    time.sleep(0.4)  # the trace is flushed every 0.25 s
    trace = runner.home / "traces" / f"{info['instance_id']}.jsonl"
    records = [json.loads(line) for line in trace.read_text().splitlines()] if trace.exists() else []
    assert [r for r in records if r.get("kind") in ("request", "result", "error")] == []

    # positive control: identical harness, right headers -> upgraded, and the action runs
    request = helpers.upgrade_request("/v1/agent", [H(port), A(token)])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # held open while it runs
        sock.sendall(request + _attack_frame(runner, "control"))
        assert sock.recv(4096).startswith(b"HTTP/1.1 101 ")
        helpers.wait_until(lambda: _marker(runner, "control").exists(), 10, what="the positive control's marker")
    helpers.wait_until(lambda: helpers.backend_status(session)["stats"]["done"] == 1, 10, what="done == 1")
    record(
        "handshake_attacks",
        {
            "tried": len(TRIED),
            "refused_before_upgrade": len(TRIED),
            "actions_executed": 0,
            "positive_control_executed": True,
            "cases": len(CASES) + len(METHOD_CASES),
        },
    )
    by_status: dict[str, list[str]] = {}
    for name, status in TRIED.items():
        by_status.setdefault(str(status), []).append(name)
    record("handshake_attacks_by_status", by_status)


def test_only_loopback_is_bound(target):
    runner, info, token, port = target
    addrs = helpers.listening_addresses(info["pid"])
    assert addrs, "the backend listens nowhere?"
    assert all(ip in ("127.0.0.1", "::1") for ip, _ in addrs), addrs
    # the agents' port, and the approvals page's own loopback port (issue 40) when the backend serves one: nothing else
    from urllib.parse import urlsplit

    from oh import sessions

    page = helpers.backend_status(sessions.read(runner.session_file(info["instance_id"]))).get("approvals_page")
    expected = {port} | ({urlsplit(page).port} if page else set())
    assert {p for _, p in addrs} == expected, (addrs, page)


def test_a_loopback_alias_host_works_end_to_end(oh):
    """`host = 127.0.0.2` is loopback and accepted by `oh config`; the backend must then accept its own
    Host header (it used to refuse every client with 403, even `oh stop`)."""
    oh("config", "set", "host", "127.0.0.2", check=0)
    info = oh.start("local")
    assert info["url"].startswith("ws://127.0.0.2:")
    assert all(ip == "127.0.0.2" for ip, _ in helpers.listening_addresses(info["pid"]))
    assert oh("run", "--", "echo alias-ok", check=0).stdout == "alias-ok\n"
    stopped = json.loads(oh("stop", "--json", check=0).stdout)["stopped"][0]
    assert stopped["how"] == "shutdown"  # the control leg got through


NON_LOOPBACK = ["0.0.0.0", "::", "10.0.0.1", "192.168.1.20", "example.com", "localhost.evil.com", "127.0.0.1.nip.io"]


@pytest.mark.parametrize("host", NON_LOOPBACK)
def test_config_refuses_a_non_loopback_host(oh, host):
    p = oh("config", "set", "host", host)
    assert p.returncode == 2
    assert "loopback" in p.stderr and "never listens on the network" in p.stderr, p.stderr
    assert oh("config", "get", "host", check=0).stdout.strip() == "127.0.0.1"


def test_every_entry_point_refuses_0_0_0_0_loudly(oh):
    # environment variable
    p = oh("start", "--detach", "--runtime", "local", env={"OH_HOST": "0.0.0.0"})
    assert p.returncode == 2 and "OH_HOST" in p.stderr and "loopback" in p.stderr, p.stderr
    # flag
    p = oh("start", "--detach", "--runtime", "local", "--host", "0.0.0.0")
    assert p.returncode == 2 and "loopback" in p.stderr, p.stderr
    # a hand-edited config file
    oh.home.mkdir(parents=True, exist_ok=True)
    (oh.home / "config.toml").write_text('host = "0.0.0.0"\n')
    p = oh("start", "--detach", "--runtime", "local")
    assert p.returncode == 2 and "host" in p.stderr and "loopback" in p.stderr, p.stderr
    (oh.home / "config.toml").unlink()
    assert list((oh.home / "sessions").glob("*.json")) == [] if (oh.home / "sessions").exists() else True
    # the backend itself (someone running `python -m oh.backend --host 0.0.0.0` by hand)
    env = helpers.oh_env(oh.home)
    proc, ready = helpers.start_backend_process(
        oh.workspace, env, "t" * 43, runtime="local", extra=["--host", "0.0.0.0"]
    )
    try:
        assert proc.wait(timeout=20) == 4
        assert (
            ready["ready"] is False
            and "refusing to listen on 0.0.0.0" in ready["error"]
            and "network" in ready["error"]
        )
        assert "refusing to listen on 0.0.0.0" in proc.stderr.read().decode()
    finally:
        helpers.kill_tree(proc.pid)
    record(
        "non_loopback_refusals",
        {
            "config_values_refused": len(NON_LOOPBACK),
            "entry_points_refused": [
                "oh config set",
                "OH_HOST",
                "--host",
                "config.toml",
                "python -m oh.backend --host",
            ],
        },
    )


def test_backend_class_refuses_a_non_loopback_host(tmp_path):
    """Defence in depth for code that embeds the backend in-process."""
    import asyncio

    from oh.backend.server import Backend, BackendConfig

    b = Backend(BackendConfig(workspace=str(tmp_path), runtime="vscode", host="0.0.0.0", write_session=False), "t" * 43)
    with pytest.raises(ValueError, match="not a loopback address"):
        asyncio.run(b.start())


def test_ipv6_loopback_host_when_available(oh):
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
    except OSError:
        pytest.skip("::1 cannot be bound here")
    info = oh.start("local", None, "--host", "::1")
    assert info["url"].startswith("ws://[::1]:")
    assert all(ip == "::1" for ip, _ in helpers.listening_addresses(info["pid"]))
    assert oh("run", "--", "echo v6", check=0).stdout == "v6\n"

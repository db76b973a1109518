"""Review mode through the SDK's file editor: the integration waits as long as the backend does (its own wait
plus the backend's review_timeout, from the session file), so a user who decides after the integration's
usual wait still gets their decision to the model instead of a spurious "did not answer in time"."""

from __future__ import annotations

import json
import os
import threading
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

import pytest  # noqa: E402
from openhands.tools.file_editor.definition import FileEditorAction  # noqa: E402

from oh.integrations.openhands import file_editor  # noqa: E402
from oh.integrations.openhands import link as links  # noqa: E402
from oh.integrations.openhands.file_editor import OhFileEditorExecutor  # noqa: E402
from waiting import poll_until  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def test_file_editor_waits_for_the_users_decision(make_oh_backend, monkeypatch):
    backend = make_oh_backend("--review", "--review-timeout", "90")
    # The integration's own wait, shrunk from 300 s to 1 s: only the review_timeout it adds can cover the user.
    monkeypatch.setattr(file_editor, "_WAIT", 1.0)
    link = links.link_for("review-wait", str(backend.workspace), None, "review-wait")
    assert link is not None and link.session.review_timeout == 90
    editor = OhFileEditorExecutor(link, "review-wait")
    target = backend.workspace / "proposed.txt"
    result: dict = {}
    worker = threading.Thread(
        target=lambda: result.setdefault(
            "obs", editor(FileEditorAction(command="create", path=str(target), file_text="hi\n"))
        )
    )
    try:
        worker.start()
        poll_until(
            lambda: json.loads(backend.oh("review", "--json").stdout or "{}").get("proposals"), 30, "the proposal", 0.2
        )
        time.sleep(2.0)  # the user decides after the integration's own (shrunk) wait
        accepted = backend.oh("review", "accept", "--all")
        assert accepted.returncode == 0, accepted.stderr
        worker.join(60)
        obs = result["obs"]
        assert not obs.is_error, obs.text
        assert target.read_text() == "hi\n"
    finally:
        worker.join(60)
        link.close()

"""Python API for agents: connect to a backend, send OpenHands actions, get observations.

from oh.client import Client, SyncClient
async with await Client.connect(url, token) as c:
    obs = await c.run("pytest -q", timeout=120)
    print(obs.exit_code, obs.content)
"""

from .aio import Client
from .errors import AuthError, ConnectionLost, OhClientError, RefusedError
from .observation import Observation
from .sync import SyncClient

__all__ = ["Client", "SyncClient", "Observation", "OhClientError", "AuthError", "RefusedError", "ConnectionLost"]

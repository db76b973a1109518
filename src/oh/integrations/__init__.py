"""Adapters that let existing agent frameworks act through an oh backend without glue code.

- ``oh.integrations.openhands``: the OpenHands SDK (V1): ``install()`` swaps the SDK's terminal and
  file-editor tools for ones that execute through oh (extra ``[openhands]``, Python >= 3.12).
- ``oh.integrations.openhands_v0``: ``VsCodeRuntime``, an OpenHands V0 runtime (openhands-ai 1.6.0).

Each imports its framework lazily and only when used: ``import oh`` never pulls them in.
"""

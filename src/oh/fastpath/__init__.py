"""The CLI's fast entry for the verbs agents call in a loop: stdlib only, no typer.

``dispatch.main`` is tried first by ``oh.cli.main``; ``verbs`` is the agent verbs' one
implementation (the typer commands call it too). Why and how fast: docs/benchmarks.md, "CLI as
an agent's shell"; layering: docs/architecture.md.
"""

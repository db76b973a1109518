"""``python -m oh.editor [--workspace DIR] [--instance ID]``: attach the headless editor."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from .peer import run_editor


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m oh.editor", description="Execute a backend's actions headlessly (reference editor).")
    p.add_argument("--workspace", default=os.getcwd())
    p.add_argument("--instance", default=None)
    p.add_argument("--once", action="store_true", help="do not reconnect")
    args = p.parse_args(argv)

    def report(kind, data):
        print(f"{kind}: {data}", file=sys.stderr, flush=True)

    try:
        from ..eventloop import run as run_loop

        return run_loop(run_editor(args.workspace, instance=args.instance, reconnect=not args.once, on_event=report))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())

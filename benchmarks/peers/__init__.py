"""Peer transports for the benchmarks (python-socketio relay, HTTP action server, raw websockets echo).

Each module runs as its own process (``python benchmarks/peers/X.py ROLE ...``) and prints one JSON
ready line (``{"ready": true, "port": N}``) on stdout; the agent side of each peer is importable by
``benchmarks/run.py``, which drives every peer from one client process.
"""

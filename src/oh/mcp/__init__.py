"""oh as an MCP server (``oh mcp``): tools ``run``, ``read``, ``write``, ``edit`` for any MCP client.

``tools`` (pure: schemas, checks, results), ``backend`` (the lazy connection to the oh backend),
``server`` (the stdio server on the official ``mcp`` SDK, an optional extra), ``install`` (client
config files). Only ``server`` imports the SDK.
"""

"""Which addresses count as loopback (pure): the rule behind binding and the Host check."""

from __future__ import annotations

import ipaddress


def is_loopback_host(host: str) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1); never a name that needs DNS."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False

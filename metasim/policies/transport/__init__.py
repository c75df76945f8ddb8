"""Network transports for remote policies.

* :mod:`.msgpack_numpy` — openpi's msgpack-numpy frames (never pickle).
* :mod:`.openpi` — :class:`OpenpiClient`, synchronous client of openpi's websocket protocol.
* :mod:`.server` — :class:`PolicyServer`, a server speaking the same protocol.
* :mod:`.http_json` — OpenVLA's ``POST /act`` json-numpy format (client and server).
* :mod:`.errors` — typed errors and :func:`check_actions`.
"""

from metasim.policies.transport.errors import (
    DecodeError,
    PolicyAuthError,
    PolicyBadResponse,
    PolicyConnectionError,
    PolicyServerError,
    PolicyTimeout,
    PolicyTransportError,
    check_actions,
)
from metasim.policies.transport.http_json import HttpActClient, HttpActServer
from metasim.policies.transport.openpi import OpenpiClient
from metasim.policies.transport.server import PolicyServer, PolicySession

__all__ = [
    "DecodeError",
    "HttpActClient",
    "HttpActServer",
    "OpenpiClient",
    "PolicyAuthError",
    "PolicyBadResponse",
    "PolicyConnectionError",
    "PolicyServer",
    "PolicyServerError",
    "PolicySession",
    "PolicyTimeout",
    "PolicyTransportError",
    "check_actions",
]

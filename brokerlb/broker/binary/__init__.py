"""Pulsar's binary protocol on ``brokerServicePort``: the listener and its connections.

* :mod:`~brokerlb.broker.binary.server` -- :class:`BinaryServer`, the asyncio listener;
* :mod:`~brokerlb.broker.binary.connection` -- one connection's commands on the topic engine;
* :mod:`~brokerlb.broker.binary.context` -- what a connection needs from its broker, and the
  authentication seam;
* :mod:`~brokerlb.broker.binary.errors` -- brokerlb errors as Pulsar's ``ServerError`` codes.

The codec (frames, protocol buffers, CRC-32C) is pure and lives in :mod:`brokerlb.messaging`.
"""

from brokerlb.broker.binary.context import (
    ANONYMOUS_ROLE,
    AnonymousAuthenticator,
    Authenticator,
    BinaryContext,
)
from brokerlb.broker.binary.server import BinaryServer

__all__ = ["ANONYMOUS_ROLE", "AnonymousAuthenticator", "Authenticator", "BinaryContext", "BinaryServer"]

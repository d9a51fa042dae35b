"""``Redirect``: "ask that broker instead" -- the answer of an operation another broker must do.

The HTTP layer turns it into a **307** to the same request URI with host and port
replaced by ``url``'s and the ``authoritative`` query parameter set to
``authoritative`` (Pulsar's ``validateBundleOwnership`` / ``validateLeaderBroker``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Redirect"]


@dataclass(frozen=True, slots=True)
class Redirect:
    #: Base URL of the broker to ask (``http://host:port``).
    url: str
    #: Value of the ``authoritative`` query parameter in the redirected request.
    authoritative: bool = False

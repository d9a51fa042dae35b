"""brokerlb's own keys: options and deviations Pulsar does not have.

Every key here starts with ``brokerlb`` so it can never clash with a Pulsar key, and is
listed as a brokerlb option in docs/configuration.md. To add one, add one line to
:class:`BrokerlbKeys`::

    brokerlbSomething: bool = key(BOOL, False, "What it does and how it differs from Pulsar.")

then regenerate the docs (``brokerlb config keys --markdown > docs/configuration.md``).
"""

from __future__ import annotations

from brokerlb.config.kinds import OPTIONAL_STRING
from brokerlb.config.registry import KeyGroup, key

__all__ = ["BrokerlbKeys"]


class BrokerlbKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "brokerlb options"
    EXTENSION = True
    INTRO = "brokerlb's own options (not in Pulsar); every name starts with `brokerlb`."

    brokerlbLoadHistoryDir: str | None = key(
        OPTIONAL_STRING, None,
        "Directory where load reports and decisions are appended for later analysis "
        "(simulator, Spark pipeline); unset = no history is written.")

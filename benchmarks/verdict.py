"""The last line every benchmark prints: its goal, what was measured, and ``met`` / ``NOT met``.

``tests/integration/test_benchmarks.py`` runs each benchmark at a small size and reads that line.
"""

from __future__ import annotations

import os

__all__ = ["verdict"]


def verdict(goal: str, measured: str, met: bool) -> None:
    """Print ``goal: <goal>: <measured> (load average L) -> met|NOT met`` (the benchmark's last line)."""
    print(
        f"goal: {goal}: {measured} (load average {os.getloadavg()[0]:.1f}) -> {'met' if met else 'NOT met'}"
    )

"""The main job, ``brokerlb demo``: a live 3-broker cluster balancing skewed traffic.

See :func:`brokerlb.demo.run.run_demo` for the timeline.
"""

from brokerlb.demo.run import DemoOptions, run_demo

__all__ = ["DemoOptions", "run_demo"]

"""``brokerlb.sim`` stays light: no I/O library, no matplotlib, until a report is written."""

import subprocess
import sys

FORBIDDEN = [
    "asyncio",
    "kazoo",
    "httpx",
    "fastapi",
    "uvicorn",
    "pyspark",
    "matplotlib",
    "socket",
    "multiprocessing",
    "pandas",
]


def test_importing_the_simulator_pulls_in_no_io_library():
    code = (
        "import sys; before = set(sys.modules); import brokerlb.sim, brokerlb.sim.report; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN)
    assert not bad, bad


def test_public_names():
    import brokerlb.sim as sim

    assert {
        "run_scenario",
        "compare",
        "Scenario",
        "SimulationResult",
        "RecordedWorkload",
        "Simulation",
        "load_scenario",
        "list_scenarios",
    } <= set(sim.__all__)
    for name in sim.__all__:
        assert hasattr(sim, name), name

"""Run ``brokerlb pipeline`` commands in a driver process of their own, on one SparkSession of a master.

A JVM holds one SparkContext, and the test process's is ``local[2]``: a job on another master
(``local-cluster[...]``, ``spark://...``) runs in a fresh Python process that starts a session on
it and runs each command through the CLI (which reuses the active session), printing a separator
line after each command's JSON output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["run_on_master"]

_DRIVER = """
import json, sys
from brokerlb.cli.main import main
from brokerlb.pipeline.session import spark_session

spark = spark_session(sys.argv[1], conf=json.loads(sys.argv[3]))
try:
    assert spark.sparkContext.master == sys.argv[1], spark.sparkContext.master
    for args in json.loads(sys.argv[2]):
        try:
            main(args)
        except SystemExit as exit_:
            if exit_.code:
                raise
        print("\\x1e", flush=True)
finally:
    spark.stop()
"""


def run_on_master(
    master: str, commands: list[list[str]], conf: dict[str, str], *, timeout: float = 900
) -> tuple[list[str], str]:
    """``(outputs, stderr)``: each command's stdout, in order; raises ``AssertionError`` with the
    driver's stderr when it fails."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.pop("SPARK_HOME", None)  # the session points it at pyspark's install directory when needed
    done = subprocess.run(
        [sys.executable, "-c", _DRIVER, master, json.dumps(commands), json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = done.stdout.split("\x1e")
    return outputs[: len(commands)], done.stderr

"""A Spark standalone cluster on loopback, started from the ``pyspark`` installation, for tests and benchmarks.

pip's pyspark ships Spark's jars and ``bin/spark-class`` (not the ``sbin/start-*.sh`` daemon
scripts), which is all a standalone cluster needs::

    $SPARK_HOME/bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1 --port 7077 --webui-port 8090
    $SPARK_HOME/bin/spark-class org.apache.spark.deploy.worker.Worker --host 127.0.0.1 --cores 1 \\
        --memory 1g --work-dir /tmp/w1 spark://127.0.0.1:7077

(``SPARK_HOME`` = pyspark's install directory; ``spark-class`` ends in ``exec java``, so the
process started is the JVM.) :class:`SparkStandaloneCluster` runs one master and ``workers``
workers that way, in processes of their own, on free loopback ports, with a configuration
directory of its own (quiet logs; the master's REST submission server, which would take port
6066, off), waits until the master's web UI (``/json/``) lists every worker ``ALIVE``, and stops
them by PID -- SIGTERM, then SIGKILL after a grace period, then any executor JVM a worker left
behind, by the PIDs recorded while it ran -- never by name: other engineers run JVMs here.

>>> with SparkStandaloneCluster(workers=2) as cluster:            # doctest: +SKIP
...     spark = spark_session(cluster.master_url, conf=cluster.session_conf())
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from types import TracebackType

from brokerlb.testing.zookeeper import free_port

__all__ = ["SparkStandaloneCluster", "spark_home"]

_LOG4J = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
"""

_DEFAULTS = """\
spark.master.rest.enabled false
spark.ui.showConsoleProgress false
"""


def spark_home() -> Path:
    """pyspark's install directory (it holds ``bin/spark-class`` and ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).parent


class SparkStandaloneCluster:
    """A master and ``workers`` workers (``cores`` cores, ``memory`` each) on 127.0.0.1 (module docstring)."""

    def __init__(
        self, workers: int = 2, *, cores: int = 1, memory: str = "1g", start_timeout: float = 180.0
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.start_timeout = start_timeout
        self.master_port = 0
        self.ui_port = 0
        self.master: subprocess.Popen[bytes] | None = None
        self.worker_processes: list[subprocess.Popen[bytes]] = []
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        #: (PID, start time) of executor JVMs seen under the workers (killed if a worker leaves one behind).
        self._executors: set[tuple[int, float]] = set()

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def directory(self) -> Path:
        assert self._tmp is not None, "not started"
        return Path(self._tmp.name)

    def session_conf(self, executor_memory: str = "512m") -> dict[str, str]:
        """Settings for a driver of this cluster: one executor per worker, its cores, ``executor_memory``."""
        return {
            "spark.executor.memory": executor_memory,
            "spark.executor.cores": str(self.cores),
            "spark.cores.max": str(self.cores * self.workers),
            "spark.sql.shuffle.partitions": str(2 * self.cores * self.workers),
            "spark.default.parallelism": str(2 * self.cores * self.workers),
        }

    # ------------------------------------------------------------------ start
    def start(self) -> SparkStandaloneCluster:
        self._tmp = tempfile.TemporaryDirectory(prefix="brokerlb-spark-")
        conf = self.directory / "conf"
        conf.mkdir()
        (conf / "log4j2.properties").write_text(_LOG4J, encoding="utf-8")
        (conf / "spark-defaults.conf").write_text(_DEFAULTS, encoding="utf-8")
        try:
            self.master_port, self.ui_port = free_port(), free_port()
            self.master = self._launch(
                "master",
                "org.apache.spark.deploy.master.Master",
                ["--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.ui_port)],
            )
            self._wait(lambda state: state.get("status") == "ALIVE", "the master")
            for i in range(self.workers):
                work = self.directory / f"work-{i}"
                work.mkdir()
                self.worker_processes.append(
                    self._launch(
                        f"worker-{i}",
                        "org.apache.spark.deploy.worker.Worker",
                        [
                            "--host",
                            "127.0.0.1",
                            "--port",
                            str(free_port()),
                            "--webui-port",
                            str(free_port()),
                            "--cores",
                            str(self.cores),
                            "--memory",
                            self.memory,
                            "--work-dir",
                            str(work),
                            self.master_url,
                        ],
                    )
                )
            self._wait(lambda state: state.get("aliveworkers") == self.workers, f"{self.workers} workers")
        except BaseException:
            self.stop()
            raise
        return self

    def _launch(self, name: str, main_class: str, args: list[str]) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(self.directory / "conf"),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOG_DIR": str(self.directory),
            "SPARK_PID_DIR": str(self.directory),
        }
        with open(self.directory / f"{name}.log", "wb") as log:
            return subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def state(self) -> dict[str, object]:
        """The master's ``/json/`` document (workers, applications, status)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as answer:
            doc = json.loads(answer.read())
        return doc if isinstance(doc, dict) else {}

    def _wait(self, ready: object, what: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        last: object = None
        while time.monotonic() < deadline:
            for proc in [self.master, *self.worker_processes]:
                if proc is not None and proc.poll() is not None:
                    raise RuntimeError(f"a Spark process exited with {proc.returncode}:\n{self.log_tail()}")
            try:
                state = self.state()
                if ready(state):  # type: ignore[operator]
                    return
                last = state.get("status"), state.get("aliveworkers")
            except (OSError, ValueError) as exc:
                last = exc
            time.sleep(0.2)
        raise TimeoutError(f"{what} not up within {self.start_timeout} s (last: {last}):\n{self.log_tail()}")

    def log_tail(self, lines: int = 20) -> str:
        out = []
        for log in sorted(self.directory.glob("*.log")):
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"== {log.name}\n" + "\n".join(text))
        return "\n".join(out)

    # ------------------------------------------------------------------ stop
    def _note_executors(self) -> None:
        import psutil

        for proc in self.worker_processes:
            with contextlib.suppress(psutil.Error):
                self._executors.update(
                    (c.pid, c.create_time()) for c in psutil.Process(proc.pid).children(recursive=True)
                )

    def stop(self, grace: float = 20.0) -> None:
        """Workers, then the master: SIGTERM, SIGKILL after ``grace`` s; then executors left behind."""
        self._note_executors()
        for proc in [*self.worker_processes, self.master]:
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in [*self.worker_processes, self.master]:
            if proc is None:
                continue
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        self._kill_left_executors()
        self.worker_processes.clear()
        self.master = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def _kill_left_executors(self) -> None:
        """SIGKILL an executor still running after its worker stopped -- the same process (PID and
        start time), never a later one that reused the PID."""
        import psutil

        for pid, started in self._executors:
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                if proc.create_time() == started:
                    proc.kill()
        self._executors.clear()

    def __enter__(self) -> SparkStandaloneCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

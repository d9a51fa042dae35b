"""Run a command with a real pseudo-terminal as its stderr (what a person at a terminal sees there).

:func:`run_with_terminal_stderr` starts the command with stdout on a pipe and stderr on the slave
side of a pty, reads the master side until the command ends, and returns ``(exit code, stdout,
stderr as the terminal received it)``. For tests of progress output, which a command shows only
on a terminal. Nothing here imports pytest.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from collections.abc import Mapping, Sequence

__all__ = ["run_with_terminal_stderr"]


def run_with_terminal_stderr(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 120.0
) -> tuple[int, str, str]:
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, *args] if args and args[0] == "-m" else list(args),
            stdout=subprocess.PIPE,
            stderr=slave,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "COLUMNS": "160", "TERM": "xterm", **(env or {})},
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise TimeoutError(f"{args} wrote nothing on its terminal for {timeout} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # the slave side closed: the command ended
                break
            if not data:
                break
            chunks.append(data)
        out, _ = proc.communicate(timeout=timeout)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out.decode(errors="replace"), b"".join(chunks).decode(errors="replace")

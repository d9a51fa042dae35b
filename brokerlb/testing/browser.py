"""Real headless Chromium for tests of web pages, and a loopback HTTP server for static files.

Debian's ``chromium`` (installed by ``scripts/setup.sh``) driven by Playwright
(``playwright install`` does not work offline; the browser is launched from its path)::

    with serve_directory(report_dir) as base_url, headless_chromium() as browser:
        page = browser.new_page()
        page.goto(f"{base_url}/index.html")

Both stop what they started (server thread, browser process) on exit.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = [
    "CHROMIUM_ARGS",
    "chromium_path",
    "chromium_available",
    "serve_directory",
    "headless_chromium",
    "async_headless_chromium",
    "artifacts_dir",
]

#: flags for a headless, offline, sandbox-less Chromium (as the setup notes verified)
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium_path() -> str | None:
    """``$BROKERLB_CHROMIUM``, else ``/usr/bin/chromium`` if present, else ``chromium`` on the PATH."""
    configured = os.environ.get("BROKERLB_CHROMIUM")
    if configured:
        return configured
    if os.path.exists("/usr/bin/chromium"):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def chromium_available() -> bool:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return False
    return chromium_path() is not None


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - signature of the base class
        pass


@contextmanager
def serve_directory(directory: str | os.PathLike[str]) -> Iterator[str]:
    """Serve ``directory`` on ``127.0.0.1`` (a free port) in a thread; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(Path(directory)))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="serve_directory", daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """A Playwright ``Browser`` on Debian's Chromium; closed (process stopped) on exit."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium found: run scripts/setup.sh (apt-get install chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            browser.close()


@asynccontextmanager
async def async_headless_chromium() -> AsyncIterator[Any]:
    """The same browser for tests that run servers on their own event loop (Playwright's async API)."""
    from playwright.async_api import async_playwright

    path = chromium_path()
    if path is None:
        raise RuntimeError("no chromium found: run scripts/setup.sh (apt-get install chromium)")
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=path, args=list(CHROMIUM_ARGS))
        try:
            yield browser
        finally:
            await browser.close()


def artifacts_dir(name: str) -> Path:
    """Where a test keeps what a person should be able to look at afterwards (screenshots):
    ``$BROKERLB_TEST_ARTIFACTS/name``, else ``out/test-artifacts/name`` in the checkout (ignored by git)."""
    root = os.environ.get("BROKERLB_TEST_ARTIFACTS") or str(
        Path(__file__).resolve().parents[2] / "out" / "test-artifacts"
    )
    path = Path(root) / name
    path.mkdir(parents=True, exist_ok=True)
    return path

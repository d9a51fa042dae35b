"""API fuzzing: schemathesis against a running broker's own OpenAPI document (``/openapi.json``).

Two brokers (``brokerlb standalone``, a separate process, so the fuzzer's blocking HTTP client and the
brokers do not share a loop), with authentication off, then on (the fuzzer sends a super-user's
token, so every handler is reached with the security layer in the path). Every operation of the
document, through schemathesis' three phases -- the documented examples, boundary and negative
cases (coverage), random cases (fuzzing) -- at most ``MAX_EXAMPLES`` each, deterministic (the same
cases every run): no 5xx, every status and content type documented, every JSON answer valid against
its documented schema.

A finding is fixed in the code or in the document, and kept as an explicit case in
``test_api_regressions.py``.
"""

from __future__ import annotations

import asyncio
import base64
import re
import subprocess
import sys
from pathlib import Path

import pytest

from brokerlb.security.tokens import create_secret_key, create_token, secret_key
from brokerlb.testing.standalone_process import StandaloneProcess

#: Test cases per operation and phase (about 2,000 requests a run, well within a minute each).
MAX_EXAMPLES = 20
CHECKS = ",".join(
    (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_schema_conformance",
    )
)
SECRET = create_secret_key()
ADMIN_TOKEN = create_token(secret_key(SECRET), "admin")

SECURED = {
    "authenticationEnabled": "true",
    "authorizationEnabled": "true",
    "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
    "tokenSecretKey": "data:;base64," + base64.b64encode(SECRET).decode(),
    "superUserRoles": "admin",
    "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
    "brokerClientAuthenticationParameters": "token:" + ADMIN_TOKEN,
}


def schemathesis(url: str, headers: dict[str, str], workdir: Path) -> subprocess.CompletedProcess[str]:
    args = [
        str(Path(sys.executable).parent / "st"),
        "run",
        f"{url}/openapi.json",
        "--checks",
        CHECKS,
        "--phases",
        "examples,coverage,fuzzing",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--generation-deterministic",
        "--suppress-health-check",
        "filter_too_much",  # path parameters that must not hold '/' filter many generated strings
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
    ]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    # in a temporary directory: schemathesis keeps a cache (.schemathesis/) where it runs
    return subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, cwd=workdir)


def counts(output: str) -> tuple[int, int]:
    """(operations tested, test cases generated) from schemathesis' summary."""
    operations = re.search(r"Tested: (\d+)", output)
    cases = re.search(r"(\d+) generated", output)
    assert operations and cases, output[-3000:]
    return int(operations.group(1)), int(cases.group(1))


@pytest.mark.parametrize("mode", ["open", "secured"])
def test_the_api_keeps_its_document(mode: str, tmp_path: Path) -> None:
    cluster = StandaloneProcess(2, SECURED if mode == "secured" else {})
    asyncio.run(cluster.start())
    try:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"} if mode == "secured" else {}
        result = schemathesis(cluster.urls[0], headers, tmp_path)
    finally:
        asyncio.run(cluster.stop())
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-20000:]
    operations, cases = counts(output)
    print(f"schemathesis ({mode}): {operations} operations, {cases} test cases, 0 failures")
    assert operations >= 76

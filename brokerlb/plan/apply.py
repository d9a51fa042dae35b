"""Apply a plan to a running cluster through the admin REST API (httpx).

Each operation becomes Pulsar's request (v2 namespaces; ``tenant/cluster/ns`` names use v1 paths)::

    split   PUT  /admin/v2/namespaces/{tenant}/{ns}/{bundle}/split
                 ?unload={true|false}&splitAlgorithmName=specified_positions_divide
                 body: [boundary, ...]            (JSON list of longs, Pulsar's splitBoundaries)
    merge   PUT  /admin/v2/namespaces/{tenant}/{ns}/merge
                 body: {"bundles": ["0x…_0x…", ...]}   (brokerlb extension: Pulsar cannot merge)
    unload  PUT  /admin/v2/namespaces/{tenant}/{ns}/{bundle}/unload[?destinationBroker=...]

With ``verify`` (default), the client reads ``GET .../bundles`` before each split or merge and
skips the operation when its bundles are not in the current layout (a stale plan must not split
whatever now has that name -- Pulsar #25031), then reads it again to report ``unchanged`` when
the broker accepted the request but found nothing to do (``specified_positions_divide`` does
not split a bundle with fewer than two topics). An unload of a child that an earlier split of the
run did not produce (its split ``unchanged``, or applied without that child) is not sent: it is
``unchanged`` too, naming that split -- the plan's transfer of a child after a split that did not
happen has nothing to move (the parent stays where it is). Redirects (307/308, to the bundle's owner or
the leader) are followed with the same method, body and headers, at most 5 times. The first
failure stops the run unless ``continue_on_error``; operations already applied stay applied.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from brokerlb.errors import InvalidInputError
from brokerlb.naming import NamespaceName
from brokerlb.plan.format import MergeOp, Plan, PlanOp, SplitOp, UnloadOp
from brokerlb.ring import SPECIFIED_POSITIONS_DIVIDE, NamespaceBundles

if TYPE_CHECKING:
    import httpx

__all__ = ["OpResult", "ApplyReport", "apply_plan", "namespace_path", "MAX_REDIRECTS"]

MAX_REDIRECTS = 5
#: Result statuses; the first three count as success.
APPLIED, UNCHANGED, PLANNED, SKIPPED, FAILED = "applied", "unchanged", "planned", "skipped", "failed"


@dataclass
class OpResult:
    index: int
    op: str
    target: str
    status: str
    detail: str = ""
    http_status: int | None = None
    requests: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status in (APPLIED, UNCHANGED, PLANNED)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "index": self.index,
            "op": self.op,
            "target": self.target,
            "status": self.status,
        }
        if self.detail:
            out["detail"] = self.detail
        if self.http_status is not None:
            out["httpStatus"] = self.http_status
        out["requests"] = self.requests
        return out


@dataclass
class ApplyReport:
    url: str
    results: list[OpResult] = field(default_factory=list)
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def to_json(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "dryRun": self.dry_run,
            "ok": self.ok,
            "results": [r.to_json() for r in self.results],
        }


def namespace_path(namespace: str) -> str:
    """``/admin/v2/namespaces/{tenant}/{ns}`` (v1: ``/admin/namespaces/{tenant}/{cluster}/{ns}``)."""
    ns = NamespaceName.parse(namespace)
    if ns.cluster is None:
        return f"/admin/v2/namespaces/{ns.tenant}/{ns.local_name}"
    return f"/admin/namespaces/{ns.tenant}/{ns.cluster}/{ns.local_name}"


class _OpFailed(Exception):
    def __init__(self, status: str, detail: str, http_status: int | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.http_status = http_status


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:500]
    if isinstance(body, dict) and isinstance(body.get("reason"), str):
        return body["reason"]
    return str(body)[:500]


class _Admin:
    """The HTTP side: requests with manual redirects, a log of what was sent."""

    def __init__(self, client: httpx.Client, base_url: str, log: Callable[[str], None]) -> None:
        self.client = client
        self.base = base_url.rstrip("/") + "/"
        self.log = log

    def request(
        self, method: str, path: str, *, params: dict[str, str] | None = None, json: Any = None
    ) -> httpx.Response:
        import httpx

        url = urljoin(self.base, path.lstrip("/"))
        for _ in range(MAX_REDIRECTS + 1):
            self.log(f"{method} {url}" + (f"?{httpx.QueryParams(params)}" if params else ""))
            try:
                response = self.client.request(method, url, params=params, json=json)
            except httpx.HTTPError as exc:
                raise _OpFailed(FAILED, f"{method} {url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code in (307, 308) and "location" in response.headers:
                url = urljoin(url, response.headers["location"])
                params = None  # the Location carries the query
                continue
            return response
        raise _OpFailed(FAILED, f"{method} {path}: more than {MAX_REDIRECTS} redirects")

    def checked(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = self.request(method, path, **kwargs)
        if not 200 <= response.status_code < 300:
            raise _OpFailed(
                FAILED,
                f"{method} {path}: HTTP {response.status_code}: {_reason(response)}",
                response.status_code,
            )
        return response

    def layout(self, namespace: str) -> NamespaceBundles:
        data = self.checked("GET", f"{namespace_path(namespace)}/bundles").json()
        try:
            return NamespaceBundles.from_json(namespace, data)
        except InvalidInputError as exc:
            raise _OpFailed(
                FAILED, f"GET {namespace_path(namespace)}/bundles: unusable BundlesData: {exc}"
            ) from exc


def _target(op: PlanOp) -> str:
    if isinstance(op, MergeOp):
        return f"{op.namespace}/{{{', '.join(op.bundles)}}}"
    return f"{op.namespace}/{op.bundle}"


def _stale(layout: NamespaceBundles, bundles: tuple[str, ...]) -> list[str]:
    return [b for b in bundles if b not in layout]


def _run(
    admin: _Admin, op: PlanOp, verify: bool, not_produced: dict[tuple[str, str], str]
) -> tuple[str, str]:
    """One operation. ``not_produced``: ``(namespace, child) -> why`` for the children that earlier
    splits of this run did not produce (filled here, read by later unloads)."""
    base = namespace_path(op.namespace)
    if isinstance(op, UnloadOp) and (why := not_produced.get((op.namespace, op.bundle))):
        return UNCHANGED, f"not sent: {op.bundle} {why}"
    if isinstance(op, UnloadOp):
        params = {"destinationBroker": op.destination_broker} if op.destination_broker else None
        admin.checked("PUT", f"{base}/{op.bundle}/unload", params=params)
        return APPLIED, ""
    wanted = (op.bundle,) if isinstance(op, SplitOp) else op.bundles
    before = admin.layout(op.namespace) if verify else None
    if before is not None and (missing := _stale(before, wanted)):
        raise _OpFailed(
            SKIPPED, f"stale plan: {', '.join(missing)} not in the current layout of {op.namespace}"
        )
    if isinstance(op, SplitOp):
        params = {"unload": str(op.unload).lower(), "splitAlgorithmName": SPECIFIED_POSITIONS_DIVIDE}
        admin.checked("PUT", f"{base}/{op.bundle}/split", params=params, json=list(op.boundaries))
    else:
        admin.checked("PUT", f"{base}/merge", json={"bundles": list(op.bundles)})
    if before is None:
        return APPLIED, ""
    after = admin.layout(op.namespace)
    expected = op.children if isinstance(op, SplitOp) else [op.merged]
    missing = [b for b in expected if b not in after]
    for child in expected:  # produced now, whatever an earlier split left
        not_produced.pop((op.namespace, child), None)
    if isinstance(op, SplitOp):
        for child in missing:
            not_produced[(op.namespace, child)] = (
                f"is a child of the split of {op.namespace}/{op.bundle}, which did not produce it"
            )
    if after == before:
        return UNCHANGED, "the broker accepted the request but the layout did not change"
    if missing:
        return APPLIED, f"layout changed, but {', '.join(missing)} is not in it"
    return APPLIED, ""


def apply_plan(
    plan: Plan,
    url: str,
    *,
    token: str | None = None,
    dry_run: bool = False,
    verify: bool = True,
    continue_on_error: bool = False,
    timeout: float = 30.0,
    transport: httpx.BaseTransport | None = None,
    on_result: Callable[[OpResult], None] | None = None,
) -> ApplyReport:
    """Run the plan's operations against the admin API at ``url`` (see the module docstring).

    ``dry_run`` sends nothing and lists the requests each operation would send. ``on_result`` is
    called after each operation (progress).
    """
    import httpx

    if not url.startswith(("http://", "https://")):
        raise InvalidInputError(f"Invalid admin URL {url!r}: expected http://host:port or https://...")
    report = ApplyReport(url, dry_run=dry_run)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    not_produced: dict[tuple[str, str], str] = {}
    with httpx.Client(
        headers=headers, timeout=timeout, follow_redirects=False, transport=transport
    ) as client:
        for index, op in enumerate(plan.operations):
            result = OpResult(index, op.op, _target(op), PLANNED)
            if dry_run:
                result.requests = _planned_requests(op)
                report.results.append(result)
                continue
            admin = _Admin(client, url, result.requests.append)
            try:
                result.status, result.detail = _run(admin, op, verify, not_produced)
            except _OpFailed as exc:
                result.status, result.detail, result.http_status = exc.status, exc.detail, exc.http_status
            report.results.append(result)
            if on_result is not None:
                on_result(result)
            if not result.ok and not continue_on_error:
                break
    return report


def _planned_requests(op: PlanOp) -> list[str]:
    base = namespace_path(op.namespace)
    if isinstance(op, SplitOp):
        bounds = ", ".join(str(b) for b in op.boundaries)
        return [
            f"PUT {base}/{op.bundle}/split?unload={str(op.unload).lower()}"
            f"&splitAlgorithmName={SPECIFIED_POSITIONS_DIVIDE} [{bounds}]"
        ]
    if isinstance(op, MergeOp):
        return [f'PUT {base}/merge {{"bundles": {list(op.bundles)}}}']
    suffix = f"?destinationBroker={op.destination_broker}" if op.destination_broker else ""
    return [f"PUT {base}/{op.bundle}/unload{suffix}"]

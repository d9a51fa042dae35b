"""``apply_plan`` against real HTTP servers on 127.0.0.1 that record every request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest

from brokerlb.cli.main import main
from brokerlb.errors import InvalidInputError
from brokerlb.plan import MergeOp, Plan, SplitOp, UnloadOp
from brokerlb.plan.apply import apply_plan
from brokerlb.ring import NamespaceBundles

NS = "public/default"


class FakeAdmin:
    """A recording admin API: Pulsar's paths for bundles, split and unload; brokerlb's merge."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.layouts = {NS: NamespaceBundles.create(NS, 4)}
        self.requests: list[tuple[str, str, dict, object, str | None]] = []
        self.noop_splits: set[str] = set()
        self.fail: dict[str, tuple[int, str]] = {}
        self.redirect_to = redirect_to
        admin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _reply(self, status: int, body: object = None, headers: dict | None = None) -> None:
                data = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                if data:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                admin.handle(self, "GET")

            def do_PUT(self):  # noqa: N802
                admin.handle(self, "PUT")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def handle(self, h, method: str) -> None:
        parts = urlsplit(h.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        length = int(h.headers.get("Content-Length") or 0)
        body = json.loads(h.rfile.read(length)) if length else None
        self.requests.append((method, parts.path, query, body, h.headers.get("Authorization")))
        segments = parts.path.split("/")[4:]  # after /admin/v2/namespaces
        ns = "/".join(segments[:2])
        rest = segments[2:]
        if self.redirect_to and method == "PUT":
            return h._reply(307, headers={"Location": f"{self.redirect_to}{h.path}"})
        if rest in (["__fail__"],) or (rest and rest[0] in self.fail):
            status, reason = self.fail[rest[0]]
            return h._reply(status, {"reason": reason})
        layout = self.layouts[ns]
        if method == "GET" and rest == ["bundles"]:
            return h._reply(200, layout.to_json())
        if method == "PUT" and len(rest) == 2 and rest[1] == "split":
            if rest[0] not in self.noop_splits:
                self.layouts[ns] = layout.split(rest[0], body)
            return h._reply(204)
        if method == "PUT" and rest == ["merge"]:
            self.layouts[ns] = layout.merge(body["bundles"])
            return h._reply(200, {"namespace": ns, "bundle": "merged"})
        if method == "PUT" and len(rest) == 2 and rest[1] == "unload":
            return h._reply(204)
        return h._reply(404, {"reason": "not found"})

    def __enter__(self) -> FakeAdmin:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


SPLIT = SplitOp(NS, "0x00000000_0x40000000", (0x10000000,), True)
MERGE = MergeOp(NS, ("0x80000000_0xc0000000", "0xc0000000_0xffffffff"))
UNLOAD = UnloadOp(NS, "0x40000000_0x80000000", "broker-2:8080")


def test_applies_split_merge_unload_with_pulsar_paths_and_verification():
    with FakeAdmin() as admin:
        report = apply_plan(Plan((SPLIT, MERGE, UNLOAD)), admin.url, token="s3cret")
        assert report.ok and [r.status for r in report.results] == ["applied", "applied", "applied"]
        assert admin.layouts[NS].boundaries == [0, 0x10000000, 0x40000000, 0x80000000, 0xFFFFFFFF]
        puts = [(p, q, b) for m, p, q, b, _ in admin.requests if m == "PUT"]
        assert puts == [
            (
                "/admin/v2/namespaces/public/default/0x00000000_0x40000000/split",
                {"unload": "true", "splitAlgorithmName": "specified_positions_divide"},
                [0x10000000],
            ),
            (
                "/admin/v2/namespaces/public/default/merge",
                {},
                {"bundles": ["0x80000000_0xc0000000", "0xc0000000_0xffffffff"]},
            ),
            (
                "/admin/v2/namespaces/public/default/0x40000000_0x80000000/unload",
                {"destinationBroker": "broker-2:8080"},
                None,
            ),
        ]
        gets = [p for m, p, *_ in admin.requests if m == "GET"]
        assert gets == ["/admin/v2/namespaces/public/default/bundles"] * 4  # before and after split and merge
        assert {auth for *_, auth in admin.requests} == {"Bearer s3cret"}


def test_stale_plan_is_skipped_and_stops_the_run():
    with FakeAdmin() as admin:
        stale = SplitOp(NS, "0x00000000_0x20000000", (0x100,))
        report = apply_plan(Plan((stale, UNLOAD)), admin.url)
        assert not report.ok and len(report.results) == 1
        assert report.results[0].status == "skipped" and "stale plan" in report.results[0].detail
        assert not [r for r in admin.requests if r[0] == "PUT"]
        report = apply_plan(Plan((stale, UNLOAD)), admin.url, continue_on_error=True)
        assert [r.status for r in report.results] == ["skipped", "applied"]


def test_broker_errors_and_noop_splits_are_reported():
    with FakeAdmin() as admin:
        admin.noop_splits.add("0x00000000_0x40000000")
        admin.fail["0x40000000_0x80000000"] = (412, "Split bundle failed due to invalid request")
        report = apply_plan(
            Plan((SPLIT, SplitOp(NS, "0x40000000_0x80000000", (0x50000000,)))),
            admin.url,
            verify=False,
            continue_on_error=True,
        )
        assert report.results[0].status == "applied"  # not verified: the broker said 204
        failed = report.results[1]
        assert failed.status == "failed" and failed.http_status == 412 and "invalid request" in failed.detail
        verified = apply_plan(Plan((SPLIT,)), admin.url)
        assert verified.results[0].status == "unchanged" and verified.ok


def test_unload_of_a_child_after_a_noop_split_is_not_sent():
    child = "0x10000000_0x40000000"
    plan = Plan((SPLIT, UnloadOp(NS, child, "broker-2:8080"), UNLOAD))
    with FakeAdmin() as admin:
        admin.noop_splits.add("0x00000000_0x40000000")
        report = apply_plan(plan, admin.url)
        assert report.ok, report.to_json()
        assert [r.status for r in report.results] == ["unchanged", "unchanged", "applied"]
        moot = report.results[1]
        assert moot.requests == [] and child in moot.detail
        assert "split of public/default/0x00000000_0x40000000" in moot.detail
        unloads = [p for m, p, *_ in admin.requests if m == "PUT" and p.endswith("/unload")]
        assert unloads == ["/admin/v2/namespaces/public/default/0x40000000_0x80000000/unload"]
    with FakeAdmin() as admin:  # the split happens: its child's unload is sent
        report = apply_plan(plan, admin.url)
        assert [r.status for r in report.results] == ["applied", "applied", "applied"]
        unloads = [p for m, p, *_ in admin.requests if m == "PUT" and p.endswith("/unload")]
        assert unloads[0] == f"/admin/v2/namespaces/public/default/{child}/unload"


def test_redirects_are_followed_with_method_body_and_token():
    with FakeAdmin() as owner, FakeAdmin(redirect_to=None) as front:
        front.redirect_to = owner.url
        report = apply_plan(Plan((SPLIT,)), front.url, token="t", verify=False)
        assert report.ok
        (put,) = [r for r in owner.requests if r[0] == "PUT"]
        assert (
            put[2]["splitAlgorithmName"] == "specified_positions_divide"
            and put[3] == [0x10000000]
            and put[4] == "Bearer t"
        )
        assert owner.layouts[NS].num_bundles == 5 and report.results[0].requests[0].startswith(
            f"PUT {front.url}"
        )


def test_unreachable_server_and_dry_run_and_bad_url():
    report = apply_plan(Plan((UNLOAD,)), "http://127.0.0.1:9", timeout=2)
    assert report.results[0].status == "failed" and "ConnectError" in report.results[0].detail
    dry = apply_plan(Plan((SPLIT, MERGE, UNLOAD)), "http://127.0.0.1:9", dry_run=True)
    assert dry.ok and dry.results[0].requests == [
        "PUT /admin/v2/namespaces/public/default/0x00000000_0x40000000/split"
        "?unload=true&splitAlgorithmName=specified_positions_divide [268435456]"
    ]
    with pytest.raises(InvalidInputError):
        apply_plan(Plan(()), "localhost:8080")


def test_cli_plan_apply(tmp_path, capsys):
    path = tmp_path / "plan.json"
    Plan((SPLIT, UNLOAD)).save(path)
    with FakeAdmin() as admin:
        with pytest.raises(SystemExit) as exit_:
            main(["plan", "apply", str(path), "--url", admin.url, "--json"])
        assert exit_.value.code == 0
        out = json.loads(capsys.readouterr().out)
        assert out["ok"] and [r["status"] for r in out["results"]] == ["applied", "applied"]
        with pytest.raises(SystemExit) as exit_:
            main(["plan", "apply", str(path), "--url", admin.url])  # the split is stale now
        assert exit_.value.code == 1
        assert "stale plan" in capsys.readouterr().out
    bad = tmp_path / "bad.json"
    bad.write_text('{"operations": [{"op": "nope"}]}', encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "apply", str(bad), "--url", "http://127.0.0.1:9"])
    assert exit_.value.code == 2

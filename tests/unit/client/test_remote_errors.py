"""A broker's error answer becomes the error tree's class for its status, at the one edge that reads it."""

from __future__ import annotations

import httpx
import pytest

from brokerlb.admin.client import _check
from brokerlb.errors import (
    BrokerLBError,
    ConflictError,
    NotFoundError,
    PreconditionFailedError,
    RemoteBrokerError,
    RemoteConflictError,
    RemoteNotFoundError,
    RemotePreconditionFailedError,
    RemoteUnavailableError,
    ServiceUnavailableError,
    remote_error,
)


def answer(status: int, reason: str) -> httpx.Response:
    request = httpx.Request("DELETE", "http://127.0.0.1:8080/admin/v2/persistent/public/default/t")
    return httpx.Response(status, json={"reason": reason}, request=request)


@pytest.mark.parametrize(
    ("status", "remote", "local"),
    [
        (404, RemoteNotFoundError, NotFoundError),
        (409, RemoteConflictError, ConflictError),
        (412, RemotePreconditionFailedError, PreconditionFailedError),
        (503, RemoteUnavailableError, ServiceUnavailableError),
    ],
)
def test_an_answered_status_is_the_trees_class_for_it(status, remote, local) -> None:
    with pytest.raises(local) as caught:
        _check(answer(status, "Topic not found"), "DELETE")
    error = caught.value
    assert type(error) is remote and isinstance(error, RemoteBrokerError)
    assert (error.status, error.http_status, error.reason) == (status, status, "Topic not found")
    assert error.retriable is (status == 503)
    assert error.method == "DELETE" and error.url.endswith("/persistent/public/default/t")
    assert error.to_json() == {"reason": "Topic not found"}  # relayed as the broker answered it


@pytest.mark.parametrize("status", [400, 401, 403, 405, 500, 502])
def test_other_statuses_stay_plain_remote_errors(status) -> None:
    error = remote_error(status, "no", "GET", "http://b:8080/x")
    assert type(error) is RemoteBrokerError and error.http_status == status and not error.retriable
    assert not isinstance(error, (NotFoundError, ConflictError, ServiceUnavailableError))
    assert isinstance(error, BrokerLBError)


def test_a_success_raises_nothing() -> None:
    _check(answer(204, ""), "DELETE")

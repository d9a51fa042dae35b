"""kazoo's exceptions all map into brokerlb's tree, with the right retriable flag."""

from __future__ import annotations

import inspect

import pytest

kazoo_exceptions = pytest.importorskip("kazoo.exceptions")

from kazoo.handlers.threading import KazooTimeoutError  # noqa: E402

from brokerlb.coordination.zookeeper import KAZOO_ERROR_MAP, map_kazoo_error  # noqa: E402
from brokerlb.errors import (  # noqa: E402
    BadVersionError,
    ConnectionLossError,
    InvalidStoreOperationError,
    MetadataStoreError,
    NodeExistsError,
    NoNodeError,
    OperationTimeoutError,
    SessionExpiredError,
    StoreAccessDeniedError,
    StoreClosedError,
)


def kazoo_exception_classes():
    return [
        cls
        for _, cls in inspect.getmembers(kazoo_exceptions, inspect.isclass)
        if issubclass(cls, kazoo_exceptions.KazooException)
    ] + [KazooTimeoutError]


def test_every_kazoo_exception_has_an_explicit_entry():
    missing = [cls.__name__ for cls in kazoo_exception_classes() if cls not in KAZOO_ERROR_MAP]
    assert missing == []


def test_every_server_error_code_is_covered():
    codes = {code: cls for code, cls in kazoo_exceptions.EXCEPTIONS.items()}
    assert codes and all(cls in KAZOO_ERROR_MAP for cls in codes.values())


@pytest.mark.parametrize(
    "kazoo_name, ours, retriable",
    [
        ("NoNodeError", NoNodeError, False),
        ("NodeExistsError", NodeExistsError, False),
        ("BadVersionError", BadVersionError, False),
        ("ConnectionLoss", ConnectionLossError, True),
        ("ConnectionDropped", ConnectionLossError, True),
        ("OperationTimeoutError", OperationTimeoutError, True),
        ("SessionExpiredError", SessionExpiredError, False),
        ("ConnectionClosedError", StoreClosedError, False),
        ("NoAuthError", StoreAccessDeniedError, False),
        ("NoChildrenForEphemeralsError", InvalidStoreOperationError, False),
    ],
)
def test_mapping(kazoo_name, ours, retriable):
    exc = getattr(kazoo_exceptions, kazoo_name)()
    mapped = map_kazoo_error(exc, "/some/path")
    assert type(mapped) is ours
    assert mapped.retriable is retriable
    assert mapped.path == "/some/path" and "/some/path" in str(mapped)
    assert mapped.__cause__ is exc


def test_unknown_errors_fall_back_to_the_base_class():
    class Strange(kazoo_exceptions.ZookeeperError):
        pass

    assert type(map_kazoo_error(Strange())) is MetadataStoreError
    assert type(map_kazoo_error(ValueError("path must start with /"))) is InvalidStoreOperationError
    assert type(map_kazoo_error(KazooTimeoutError())) is OperationTimeoutError

"""brokerlb errors as Pulsar's ``ServerError`` codes (what a binary-protocol client is told)."""

from __future__ import annotations

from brokerlb.errors import (
    AuthenticationError,
    AuthorizationError,
    BinaryProtocolError,
    BrokerLBError,
    ConsumerAssignError,
    ConsumerBusyError,
    InvalidNamespaceNameError,
    InvalidTopicNameError,
    MetadataStoreError,
    NotFoundError,
    OwnershipError,
    ServiceUnavailableError,
    StoreAccessDeniedError,
    TooManyRequestsError,
)
from brokerlb.messaging.topic import BacklogQuotaExceeded, ProducerBusyError
from brokerlb.messaging.wire import ServerError

__all__ = ["server_error_of"]


def server_error_of(exc: BaseException) -> ServerError:
    """The ``ServerError`` a client gets for ``exc`` (retriable errors map to ``ServiceNotReady``,
    which makes Pulsar's clients look the topic up again)."""
    if isinstance(exc, BinaryProtocolError):
        return ServerError[exc.server_error]
    table: tuple[tuple[type[BaseException], ServerError], ...] = (
        (AuthenticationError, ServerError.AuthenticationError),
        (AuthorizationError, ServerError.AuthorizationError),
        (ProducerBusyError, ServerError.ProducerBusy),
        (ConsumerBusyError, ServerError.ConsumerBusy),
        (ConsumerAssignError, ServerError.ConsumerAssignError),
        (BacklogQuotaExceeded, ServerError.ProducerBlockedQuotaExceededException),
        (InvalidTopicNameError, ServerError.InvalidTopicName),
        (InvalidNamespaceNameError, ServerError.InvalidTopicName),
        (NotFoundError, ServerError.TopicNotFound),
        (TooManyRequestsError, ServerError.TooManyRequests),
        (ServiceUnavailableError, ServerError.ServiceNotReady),
        (OwnershipError, ServerError.ServiceNotReady),
        (StoreAccessDeniedError, ServerError.AuthorizationError),
    )
    for cls, code in table:
        if isinstance(exc, cls):
            return code
    if isinstance(exc, BrokerLBError) and exc.retriable:
        return ServerError.ServiceNotReady
    if isinstance(exc, MetadataStoreError):
        return ServerError.MetadataError
    if isinstance(exc, ValueError):
        return ServerError.NotAllowedError
    return ServerError.UnknownError

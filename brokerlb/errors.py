"""The one exception tree of brokerlb.

Every error raised by brokerlb code derives from :class:`BrokerLBError`. Foreign
errors (kazoo, httpx, pyspark, json) are mapped to these classes at the edge that
meets them, with ``raise ... from exc``. Each class carries two pieces of data:

* ``retriable`` -- whether repeating the same operation later may succeed;
* ``http_status`` -- the status the REST layer answers with (Pulsar's codes).

::

    BrokerLBError
    ├── InvalidInputError (ValueError)           400  bad user input, nothing stored changed
    │   ├── InvalidTopicNameError                412  (Pulsar answers 412 for bad names)
    │   ├── InvalidNamespaceNameError            412
    │   ├── InvalidBundleRangeError              412
    │   ├── InvalidBundlesError                  400  bad bundle count / boundaries at creation
    │   ├── InvalidSplitError                    412  split boundaries / algorithm rejected
    │   ├── InvalidMergeError                    412
    │   ├── InvalidConfigError                   400  names the key and the value
    │   │   └── UnknownConfigKeyError (KeyError)  400  no such config key (suggests close names)
    │   ├── InvalidLoadDataError                 400  NaN, negative usage, broken report JSON
    │   ├── InvalidSnapshotError                 400
    │   ├── InvalidScenarioError                 400  simulator scenario: names the file and the field
    │   ├── NotAcceptableError                   406  a value out of range (e.g. partitions <= 0)
    │   ├── InvalidPlanError                     400  a bundle-operation plan file that does not parse
    │   ├── DataPathProtocolError                400  a data-path frame the broker cannot accept
    │   ├── BinaryProtocolError                  400  a binary-protocol frame or command the broker refuses
    │   └── UnknownStrategyError                 400
    │       └── StrategyNotAvailableError        400  registered, but its module is missing
    ├── AuthenticationError                      401  no credentials, or credentials that do not verify
    ├── AuthorizationError                       403  the role may not do this
    ├── RequestTooLargeError                     413  the body is larger than httpMaxRequestSize
    ├── UnsupportedMediaTypeError                415  a state-changing request whose body is not JSON
    ├── NotFoundError (LookupError)              404
    │   ├── NamespaceNotFoundError
    │   ├── BundleNotFoundError
    │   ├── BrokerNotFoundError
    │   └── TopicNotFoundError
    ├── ManagedLedgerError                       500  the storage tier failed an operation (retriable)
    │   ├── StorageUnavailableError              503  the storage engine is unreachable; outcome unknown
    │   └── LedgerFencedError                    409  another owner fenced the ledger / the hash range
    ├── ConflictError                            409  already exists / not empty
    │   ├── ConsumerBusyError                    409  exclusive subscription taken, consumer limit
    │   └── ConsumerAssignError                  409  Key_Shared hash range conflict / none left
    ├── ForbiddenError                           403  the request is refused for what it names (a
    │                                                   cluster a tenant does not allow)
    ├── PreconditionFailedError                  412
    ├── PipelineError                            500  a Spark job of the data pipeline failed
    ├── ServiceUnavailableError                  503  retriable
    │   ├── NoBrokerAvailableError
    │   ├── TooManyRequestsError
    │   ├── StaleBundleError                     the bundle was split or merged meanwhile
    │   └── BrokerUnreachableError               an HTTP call to a broker failed (connection, timeout)
    ├── RemoteBrokerError                        a broker answered an admin/lookup call with an error
    │   │                                             (``remote_error`` picks the class by status; each is
    │   │                                             also the local class of that status)
    │   ├── RemoteNotFoundError (NotFoundError)   404
    │   ├── RemoteConflictError (ConflictError)   409
    │   ├── RemotePreconditionFailedError         412  (PreconditionFailedError)
    │   └── RemoteUnavailableError                503  (ServiceUnavailableError), retriable
    ├── MetadataStoreError                       500/503 (see subclasses)
    │   ├── BadVersionError                      409  compare-and-set lost
    │   ├── NoNodeError                          404
    │   ├── NodeExistsError                      409
    │   ├── NotEmptyError                        409
    │   ├── LockBusyError                        409  an ephemeral held by another session
    │   ├── ConnectionLossError                  503  retriable
    │   ├── OperationTimeoutError                503  retriable
    │   ├── SessionExpiredError                  503
    │   ├── StoreClosedError                     503
    │   ├── InvalidStoreOperationError           400  bad path, child of an ephemeral, ...
    │   ├── StoreAccessDeniedError               403  ACL / authentication refused
    │   └── CorruptMetadataError                 500  a stored value is not the JSON expected
    ├── OwnershipError                           409
    │   ├── InvalidTransitionError               409  carries the bundle's story
    │   ├── BundleUnloadingError                 503  retriable ("is being unloaded")
    │   ├── OwnershipLostError                   503  retriable (session lost / node taken)
    │   └── LeadershipLostError                  503  retriable
    └── ClientError                                   data-path client (brokerlb.client)
        ├── ProducerSendError                         the broker answered a send with an error
        ├── SendTimeoutError                          no ack within sendTimeoutMs (retriable)
        ├── ProducerQueueIsFullError                  maxPendingMessages reached, not blocking
        └── ClientClosedError                         the producer / consumer / client is closed

Warnings (not errors; issued with :mod:`warnings`)::

    ConfigWarning (UserWarning)
    ├── UnknownConfigKeyWarning                  a config key brokerlb does not know (typo?)
    └── DeprecatedConfigKeyWarning               a deprecated key or alias was set
    SnapshotWarning (UserWarning)                a snapshot value accepted as Pulsar does, not used as
                                                 written (an unmodelled Pulsar key, numSamples > maxSamples)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BrokerLBError",
    "InvalidInputError",
    "InvalidTopicNameError",
    "InvalidNamespaceNameError",
    "InvalidBundleRangeError",
    "InvalidBundlesError",
    "InvalidSplitError",
    "InvalidMergeError",
    "InvalidConfigError",
    "UnknownConfigKeyError",
    "InvalidLoadDataError",
    "InvalidSnapshotError",
    "InvalidScenarioError",
    "NotAcceptableError",
    "InvalidPlanError",
    "DataPathProtocolError",
    "BinaryProtocolError",
    "UnknownStrategyError",
    "StrategyNotAvailableError",
    "AuthenticationError",
    "AuthorizationError",
    "RequestTooLargeError",
    "UnsupportedMediaTypeError",
    "NotFoundError",
    "NamespaceNotFoundError",
    "BundleNotFoundError",
    "BrokerNotFoundError",
    "TopicNotFoundError",
    "ConflictError",
    "ConsumerBusyError",
    "ConsumerAssignError",
    "PreconditionFailedError",
    "ForbiddenError",
    "PipelineError",
    "ServiceUnavailableError",
    "NoBrokerAvailableError",
    "TooManyRequestsError",
    "StaleBundleError",
    "BrokerUnreachableError",
    "RemoteBrokerError",
    "RemoteNotFoundError",
    "RemoteConflictError",
    "RemotePreconditionFailedError",
    "RemoteUnavailableError",
    "remote_error",
    "MetadataStoreError",
    "BadVersionError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "LockBusyError",
    "ConnectionLossError",
    "OperationTimeoutError",
    "SessionExpiredError",
    "StoreClosedError",
    "InvalidStoreOperationError",
    "StoreAccessDeniedError",
    "CorruptMetadataError",
    "OwnershipError",
    "InvalidTransitionError",
    "RecordConflictError",
    "BundleUnloadingError",
    "OwnershipLostError",
    "LeadershipLostError",
    "ManagedLedgerError",
    "StorageUnavailableError",
    "LedgerFencedError",
    "ClientError",
    "ProducerSendError",
    "SendTimeoutError",
    "ProducerQueueIsFullError",
    "ClientClosedError",
    "ConfigWarning",
    "UnknownConfigKeyWarning",
    "DeprecatedConfigKeyWarning",
    "SnapshotWarning",
]


class BrokerLBError(Exception):
    """Root of every brokerlb error."""

    #: Repeating the same operation later may succeed.
    retriable: bool = False
    #: HTTP status the REST layer answers with.
    http_status: int = 500

    def to_json(self) -> dict[str, Any]:
        """Pulsar's REST error body: ``{"reason": "..."}``."""
        return {"reason": str(self)}


# --------------------------------------------------------------------------- input


class InvalidInputError(BrokerLBError, ValueError):
    """Bad input from a user or a file; nothing stored was changed."""

    http_status = 400


class InvalidTopicNameError(InvalidInputError):
    http_status = 412

    def __init__(self, name: object, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"Invalid topic name '{name}': {why}")


class InvalidNamespaceNameError(InvalidInputError):
    http_status = 412

    def __init__(self, name: object, why: str) -> None:
        self.name = name
        self.why = why
        super().__init__(f"Invalid namespace name '{name}': {why}")


class InvalidBundleRangeError(InvalidInputError):
    http_status = 412


class InvalidBundlesError(InvalidInputError):
    http_status = 400


class InvalidSplitError(InvalidInputError):
    http_status = 412


class InvalidMergeError(InvalidInputError):
    http_status = 412


class InvalidConfigError(InvalidInputError):
    def __init__(self, key: str, value: object, why: str) -> None:
        self.key = key
        self.value = value
        self.why = why
        super().__init__(f"Invalid value {value!r} for config key '{key}': {why}")


class UnknownConfigKeyError(InvalidConfigError, KeyError):
    """A config key that does not exist; ``suggestions`` lists close known names."""

    def __init__(self, key: str, suggestions: Sequence[str] = ()) -> None:
        self.suggestions = list(suggestions)
        hint = f" (did you mean {', '.join(self.suggestions)}?)" if self.suggestions else ""
        super().__init__(key, None, f"unknown config key{hint}")
        self.args = (f"Unknown config key '{key}'{hint}",)

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class InvalidLoadDataError(InvalidInputError):
    """A load report or load-data value is unusable: NaN/inf, negative usage, wrong type, broken JSON.

    ``field`` names the offending field as a path in Pulsar's JSON names
    (e.g. ``cpu.usage`` or ``lastStats[t/ns/0x00000000_0x40000000].msgRateIn``)
    and ``value`` is what was found there; both are ``None`` when the error is
    about a whole document.
    """

    def __init__(self, message: str, *, field: str | None = None, value: Any = None) -> None:
        self.field = field
        self.value = value
        super().__init__(message)


class InvalidSnapshotError(InvalidInputError):
    """A cluster snapshot (planner input) is unusable.

    ``path`` names the bad field in the snapshot's JSON (e.g.
    ``brokers[b1:8080].localData.cpu.usage``), ``value`` is what was found there and
    ``why`` what is wrong with it; ``path`` is ``None`` for a whole-document problem.
    """

    _UNSET: Any = object()

    def __init__(self, why: str, *, path: str | None = None, value: Any = _UNSET) -> None:
        self.why = why
        self.path = path
        self.value = None if value is InvalidSnapshotError._UNSET else value
        where = f"{path}" if path else ""
        shown = "" if value is InvalidSnapshotError._UNSET else f" = {value!r}"
        super().__init__(f"Invalid snapshot: {where}{shown}: {why}" if where else f"Invalid snapshot: {why}")


class InvalidScenarioError(InvalidInputError):
    """A simulator scenario (YAML) or recorded workload is unusable.

    ``field`` is the path of the bad value in the scenario (e.g. ``events[2].at``),
    ``source`` the file it came from; either is ``None`` when not known.
    """

    def __init__(self, why: str, *, field: str | None = None, source: str | None = None) -> None:
        self.why = why
        self.field = field
        self.source = source
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"scenario {where}: {why}" if where else f"scenario: {why}")


class NotAcceptableError(InvalidInputError):
    """A well-formed value the request cannot accept (Pulsar answers 406 Not Acceptable)."""

    http_status = 406


class InvalidPlanError(InvalidInputError):
    """A plan of bundle operations (``docs/plan-format.md``) is malformed; names the operation and field."""


class DataPathProtocolError(InvalidInputError):
    """A data-path (WebSocket) frame the broker cannot accept.

    ``code`` is Pulsar's ``WebSocketError`` code (3 = bad JSON, 7 = bad payload encoding);
    ``context`` is the producer's context of the frame, when it could be read.
    """

    def __init__(self, code: int, message: str, context: str | None = None) -> None:
        super().__init__(message)
        self.code = int(code)
        self.context = context


class BinaryProtocolError(InvalidInputError):
    """A binary-protocol frame or command that cannot be accepted.

    ``server_error`` is the name of Pulsar's ``ServerError`` the broker answers with
    (``UnknownError`` for a frame it cannot read, ``ChecksumError``, ``NotAllowedError``,
    ``InvalidTopicName`` ...); ``fatal`` means the connection cannot go on (the byte stream
    is no longer framed) and is closed after the error is sent.
    """

    def __init__(self, server_error: str, message: str, *, fatal: bool = False) -> None:
        super().__init__(message)
        self.server_error = server_error
        self.fatal = fatal


class UnknownStrategyError(InvalidInputError):
    def __init__(self, name: str, kind: str, known: Sequence[str] = ()) -> None:
        self.name = name
        self.kind = kind
        self.known = list(known)
        hint = f"; known: {', '.join(self.known)}" if self.known else ""
        super().__init__(f"Unknown {kind} strategy '{name}'{hint}")


class StrategyNotAvailableError(UnknownStrategyError):
    """A registered strategy whose implementation cannot be loaded (its module is missing)."""

    def __init__(self, name: str, kind: str, why: str) -> None:
        super().__init__(name, kind)
        self.why = why
        self.args = (f"The {kind} strategy '{name}' is registered but not available: {why}",)


# --------------------------------------------------------------------------- access and request shape


class AuthenticationError(BrokerLBError):
    """No credentials where they are required, or credentials that do not verify (HTTP 401)."""

    http_status = 401


class AuthorizationError(BrokerLBError):
    """The authenticated role is not allowed to do this (HTTP 403)."""

    http_status = 403


class RequestTooLargeError(BrokerLBError):
    """The request body is larger than ``httpMaxRequestSize`` (HTTP 413)."""

    http_status = 413


class UnsupportedMediaTypeError(BrokerLBError):
    """A state-changing request whose body is not declared JSON (HTTP 415)."""

    http_status = 415


# --------------------------------------------------------------------------- not found


class NotFoundError(BrokerLBError, LookupError):
    http_status = 404


class NamespaceNotFoundError(NotFoundError):
    pass


class BundleNotFoundError(NotFoundError):
    pass


class BrokerNotFoundError(NotFoundError):
    pass


class TopicNotFoundError(NotFoundError):
    pass


# --------------------------------------------------------------------------- request state


class ConflictError(BrokerLBError):
    http_status = 409


class ConsumerBusyError(ConflictError):
    """Pulsar's ``ConsumerBusyException``: the subscription cannot take this consumer."""


class ConsumerAssignError(ConflictError):
    """Pulsar's ``ConsumerAssignException``: a Key_Shared consumer cannot be given hash ranges."""


class ForbiddenError(BrokerLBError):
    """403: refused for what the request names (e.g. a cluster the tenant does not allow)."""

    http_status = 403


class PreconditionFailedError(BrokerLBError):
    http_status = 412


class PipelineError(BrokerLBError):
    """A Spark job of the data pipeline failed (the Spark error is the ``__cause__``)."""

    http_status = 500


class ServiceUnavailableError(BrokerLBError):
    http_status = 503
    retriable = True


class NoBrokerAvailableError(ServiceUnavailableError):
    pass


class TooManyRequestsError(ServiceUnavailableError):
    pass


class StaleBundleError(ServiceUnavailableError):
    """A bundle named by a request was split or merged meanwhile; ask again."""


class BrokerUnreachableError(ServiceUnavailableError):
    """An HTTP request to a broker failed before an answer came (refused, reset, timed out)."""


class RemoteBrokerError(BrokerLBError):
    """A broker answered an HTTP call with an error status; ``status`` and ``reason`` are its answer.

    ``http_status`` is the remote status, so a broker relaying the answer gives the client the
    same code. ``retriable`` is true for 503.
    """

    def __init__(self, status: int, reason: str, method: str = "", url: str = "") -> None:
        self.status = status
        self.http_status = status
        self.retriable = status == 503
        self.reason = reason
        self.method = method
        self.url = url
        where = f" ({method} {url})" if method else ""
        super().__init__(f"HTTP {status}: {reason}{where}")

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason}


class RemoteNotFoundError(RemoteBrokerError, NotFoundError):
    """A broker answered 404: what the call named does not exist there."""


class RemoteConflictError(RemoteBrokerError, ConflictError):
    """A broker answered 409 (already exists, busy, a superseded leader's command refused)."""


class RemotePreconditionFailedError(RemoteBrokerError, PreconditionFailedError):
    """A broker answered 412 (e.g. a name it refuses)."""


class RemoteUnavailableError(RemoteBrokerError, ServiceUnavailableError):
    """A broker answered 503: not now (retriable)."""


_REMOTE_BY_STATUS: dict[int, type[RemoteBrokerError]] = {
    404: RemoteNotFoundError,
    409: RemoteConflictError,
    412: RemotePreconditionFailedError,
    503: RemoteUnavailableError,
}


def remote_error(status: int, reason: str, method: str = "", url: str = "") -> RemoteBrokerError:
    """A broker's error answer as this tree's class for its status (the edge's one mapping): a
    caller catches :class:`NotFoundError`, :class:`ConflictError`, ... whether the error was
    raised here or answered by another broker; any other status is a plain :class:`RemoteBrokerError`."""
    return _REMOTE_BY_STATUS.get(status, RemoteBrokerError)(status, reason, method, url)


# --------------------------------------------------------------------------- metadata store


class MetadataStoreError(BrokerLBError):
    """A metadata-store operation failed. ``path`` names the node when known.

    In a multi-operation transaction, ``op_index`` is the index of the operation
    that failed (the whole transaction was rolled back).
    """

    http_status = 500
    #: Index of the failing operation of a transaction, else ``None``.
    op_index: int | None = None

    def __init__(self, message: str = "", path: str | None = None) -> None:
        self.path = path
        text = message or type(self).__name__
        if path is not None and path not in text:
            text = f"{text} (path {path})"
        super().__init__(text)


class BadVersionError(MetadataStoreError):
    http_status = 409


class NoNodeError(MetadataStoreError):
    http_status = 404


class NodeExistsError(MetadataStoreError):
    http_status = 409


class NotEmptyError(MetadataStoreError):
    http_status = 409


class LockBusyError(MetadataStoreError):
    """An ephemeral node (lock, registration, ownership) is held by another session.

    ``owner_session`` is the holder's session id when known.
    """

    http_status = 409

    def __init__(self, message: str = "", path: str | None = None, owner_session: int | None = None) -> None:
        self.owner_session = owner_session
        super().__init__(message, path)


class ConnectionLossError(MetadataStoreError):
    http_status = 503
    retriable = True


class OperationTimeoutError(MetadataStoreError):
    http_status = 503
    retriable = True


class SessionExpiredError(MetadataStoreError):
    http_status = 503


class StoreClosedError(MetadataStoreError):
    http_status = 503


class InvalidStoreOperationError(MetadataStoreError):
    """The request itself is wrong: a malformed path, a child under an ephemeral node, ..."""

    http_status = 400


class StoreAccessDeniedError(MetadataStoreError):
    http_status = 403


class CorruptMetadataError(MetadataStoreError):
    """A stored value cannot be decoded as the record expected at its path."""

    http_status = 500


# --------------------------------------------------------------------------- storage tier


class ManagedLedgerError(BrokerLBError):
    """The storage tier failed an operation on a managed ledger (Pulsar's ``ManagedLedgerException``)."""

    retriable = True
    http_status = 500


class StorageUnavailableError(ManagedLedgerError):
    """The storage engine cannot be reached or failed mid-operation (the outcome of a write may be
    unknown: the managed ledger recovers from storage before it writes again)."""

    http_status = 503


class LedgerFencedError(ManagedLedgerError):
    """Another owner fenced the topic's ledger or its bundle's hash range: this broker may no longer
    append to it or move its cursors (Pulsar's ``ManagedLedgerFencedException``)."""

    retriable = False
    http_status = 409


# --------------------------------------------------------------------------- ownership


class OwnershipError(BrokerLBError):
    http_status = 409


class InvalidTransitionError(OwnershipError):
    """A bundle state change that the transition table forbids; carries the story."""

    def __init__(self, message: str, story: Sequence[Any] = ()) -> None:
        self.story = list(story)
        super().__init__(message)


class RecordConflictError(OwnershipError, ConflictError):
    """A bundle's ownership record changed since it was read (a lost compare-and-set): read it again.
    Pulsar's table view swallows its ``ConflictException``; the new record arrives through the view."""

    http_status = 409
    retriable = True


class BundleUnloadingError(OwnershipError):
    http_status = 503
    retriable = True


class OwnershipLostError(OwnershipError):
    """This broker no longer owns the bundle (session lost, node deleted or taken)."""

    http_status = 503
    retriable = True


class LeadershipLostError(OwnershipError):
    http_status = 503
    retriable = True


# --------------------------------------------------------------------------- data-path client


class ClientError(BrokerLBError):
    """An operation of the data-path client (:mod:`brokerlb.client`) failed."""


class ProducerSendError(ClientError):
    """The broker answered a send with an error: ``result`` is its ``send-error:<code>``."""

    def __init__(self, message: str, result: str = "send-error:8") -> None:
        super().__init__(message)
        self.result = result


class SendTimeoutError(ProducerSendError):
    """No ack arrived within the producer's ``sendTimeoutMs`` (Pulsar's ``TimeoutException``)."""

    retriable = True

    def __init__(self, message: str) -> None:
        super().__init__(message, "timeout")


class ProducerQueueIsFullError(ProducerSendError):
    """``maxPendingMessages`` sends are pending and the producer does not block (Pulsar's name)."""

    retriable = True

    def __init__(self, message: str) -> None:
        super().__init__(message, "queue-full")


class ClientClosedError(ClientError):
    """The producer, consumer or client was closed (Pulsar's ``AlreadyClosedException``)."""


# --------------------------------------------------------------------------- warnings


class ConfigWarning(UserWarning):
    """Something in a configuration looks wrong but does not stop loading it."""


class UnknownConfigKeyWarning(ConfigWarning):
    """A key brokerlb neither models nor knows as an ignored Pulsar key (a typo?)."""


class DeprecatedConfigKeyWarning(ConfigWarning):
    """A deprecated key or a deprecated alias of a key was set."""


class SnapshotWarning(UserWarning):
    """A snapshot holds something Pulsar accepts but brokerlb does not use as written (a Pulsar
    config key brokerlb does not model, a window with more samples than its size)."""

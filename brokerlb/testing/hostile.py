"""Tools to attack a broker process as a hostile or careless client would, and to watch it meanwhile.

* :class:`RawConnection` -- a hand-driven binary-protocol connection (optionally from another
  loopback address, so per-address limits see a different client), which may stop reading;
* :func:`rss_bytes` / :func:`peak_rss_bytes` -- a process's resident memory now and its peak
  (``VmRSS`` / ``VmHWM`` of ``/proc/<pid>/status``);
* :class:`Bystanders` -- an innocent client working during the attack: HTTP lookups and
  produce-and-receipt round trips on the binary protocol, each counted as served or failed.

Used by the hostile-client tests (``tests/integration/hostile``) against ``brokerlb standalone``
processes (:class:`~brokerlb.testing.standalone_process.StandaloneProcess`).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass, field
from typing import Any

from brokerlb.messaging.frames import FrameDecoder, payload_frame, payload_section, simple_frame
from brokerlb.messaging.wire import (
    CommandConnect,
    CommandConnected,
    CommandLookupTopic,
    CommandLookupTopicResponse,
    CommandPing,
    CommandPong,
    CommandProducer,
    CommandProducerSuccess,
    CommandSend,
    CommandSendReceipt,
    Message,
    MessageMetadata,
)

__all__ = ["RawConnection", "Bystanders", "rss_bytes", "peak_rss_bytes", "host_port", "token_auth_settings"]

#: guards against hanging (never a timing assertion)
GUARD = 60.0
TCP_ESTABLISHED = 1
MB = 1024 * 1024


def _status_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(name + ":"):
                return int(line.split()[1]) * 1024
    raise LookupError(f"{name} not in /proc/{pid}/status")


def rss_bytes(pid: int) -> int:
    """The process's resident memory now (``VmRSS``)."""
    return _status_field(pid, "VmRSS")


def peak_rss_bytes(pid: int) -> int:
    """The highest resident memory the process has had (``VmHWM``)."""
    return _status_field(pid, "VmHWM")


def token_auth_settings(secret: bytes, **extra: object) -> dict[str, object]:
    """broker.conf settings of token authentication with HS256 ``secret`` (super-user ``admin``, the
    brokers' own calls as ``admin``), plus ``extra``."""
    import base64

    from brokerlb.security.tokens import create_token, secret_key

    return {
        "authenticationEnabled": True,
        "authenticationProviders": "org.apache.pulsar.broker.authentication.AuthenticationProviderToken",
        "tokenSecretKey": "data:;base64," + base64.b64encode(secret).decode(),
        "superUserRoles": "admin",
        "brokerClientAuthenticationPlugin": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
        "brokerClientAuthenticationParameters": "token:" + create_token(secret_key(secret), "admin"),
        **extra,
    }


def host_port(url: str) -> tuple[str, int]:
    """``(host, port)`` of ``pulsar://host:port`` or ``http://host:port``."""
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    return host, int(port)


class RawConnection:
    """One hand-driven binary-protocol connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder(64 * MB)
        self.frames: list[Any] = []

    @classmethod
    async def open(
        cls, url: str, *, source: str | None = None, connect: bool = True, limit: int = 64 * 1024
    ) -> RawConnection:
        """Connect to ``url`` (``pulsar://host:port``), from loopback address ``source`` if given.
        ``limit`` is the reader's buffer: a small one and no reads make a client that does not drain."""
        host, port = host_port(url)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(
                host, port, local_addr=(source, 0) if source is not None else None, limit=limit
            ),
            GUARD,
        )
        raw = cls(reader, writer)
        if connect:
            raw.send(CommandConnect("hostile-test", protocol_version=21))
            answer = await raw.next()
            if not isinstance(answer, CommandConnected):
                raise ConnectionError(f"CONNECT answered {answer!r}")
        return raw

    async def lookup(self, topic: str) -> str:
        """LOOKUP ``topic`` until a broker owns it: its ``pulsar://`` URL. Redirects are followed (on
        connections of their own, closed after), "not ready" answers retried."""
        request, authoritative, conn = 1000, False, self
        try:
            async with asyncio.timeout(GUARD):
                while True:
                    request += 1
                    conn.send(CommandLookupTopic(topic, request, authoritative))
                    answer = await conn.next()
                    if isinstance(answer, CommandLookupTopicResponse) and answer.response == 1:
                        return str(answer.brokerServiceUrl)
                    if isinstance(answer, CommandLookupTopicResponse) and answer.response == 0:
                        if conn is not self:
                            conn.close()
                        conn = await RawConnection.open(str(answer.brokerServiceUrl))
                        authoritative = bool(answer.authoritative)
                        continue
                    await asyncio.sleep(0.05)
        finally:
            if conn is not self:
                conn.close()

    async def produce(self, topic: str, count: int, size: int, producer_id: int = 1) -> list[tuple[int, int]]:
        """Create a producer and publish ``count`` messages of ``size`` bytes, each acknowledged; their
        ``(ledger id, entry id)``."""
        await self.lookup(topic)
        self.send(CommandProducer(topic, producer_id, producer_id))
        answer = await self.next()
        if not isinstance(answer, CommandProducerSuccess):
            raise ConnectionError(f"PRODUCER answered {answer!r}")
        payload = b"x" * size
        for n in range(count):
            section = payload_section(MessageMetadata(f"p{producer_id}", n, 1), payload)
            self.send(payload_frame(CommandSend(producer_id, n), section))
        ids = []
        for _ in range(count):
            receipt = await self.next()
            if not isinstance(receipt, CommandSendReceipt) or receipt.message_id is None:
                raise ConnectionError(f"SEND answered {receipt!r}")
            ids.append((receipt.message_id.ledgerId, receipt.message_id.entryId))
        return ids

    def send(self, command: Message | bytes) -> None:
        self.writer.write(command if isinstance(command, bytes) else simple_frame(command))

    async def next(self, guard: float = GUARD) -> Any:
        """The next command the broker sends (its keep-alive PINGs are answered, not returned), or
        ``None`` once it closed the connection."""
        while True:
            while not self.frames:
                try:
                    data = await asyncio.wait_for(self.reader.read(1 << 20), guard)
                except (ConnectionError, OSError):
                    return None
                if not data:
                    return None
                self.frames += self.decoder.feed(data)
            command = self.frames.pop(0).command
            if isinstance(command, CommandPing):
                self.send(CommandPong())
                continue
            return command

    async def closed_by_broker(self, guard: float = GUARD) -> bool:
        """Read until the broker closes the connection (``True``); ``False`` if it did not within ``guard``."""
        try:
            async with asyncio.timeout(guard):
                while True:
                    try:
                        data = await self.reader.read(1 << 20)
                    except (ConnectionError, OSError):
                        return True
                    if not data:
                        return True
        except TimeoutError:
            return False

    def tcp_state(self) -> int:
        """The socket's TCP state (``tcpi_state``: 1 established, 7 closed by a reset, 8 close-wait)."""
        sock = self.writer.get_extra_info("socket")
        return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 1)[0])

    async def dropped_by_broker(self, guard: float = GUARD) -> bool:
        """Wait, without reading, until the broker closed or reset the connection (``False`` if it
        did not within ``guard``)."""
        try:
            async with asyncio.timeout(guard):
                while self.tcp_state() == TCP_ESTABLISHED:
                    await asyncio.sleep(0.05)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.transport.abort()


@dataclass
class Bystanders:
    """An innocent client during an attack: HTTP lookups and binary produce round trips, in turn.

    ``served`` counts answers as expected; ``failures`` lists what went wrong. Start with
    :meth:`start`, stop with :meth:`stop`; :meth:`check` asserts some work was served and none failed.
    """

    web_url: str
    pulsar_url: str
    topic: str
    failures: list[str] = field(default_factory=list)
    served: int = 0
    _task: asyncio.Task[None] | None = None
    _stopping: bool = False

    async def start(self) -> Bystanders:
        self._task = asyncio.ensure_future(self._run())
        await self.serve_more(1)  # it works before the attack starts
        return self

    async def _run(self) -> None:
        import httpx

        local = self.topic.split("://", 1)[1]
        sequence = 0
        async with httpx.AsyncClient(timeout=GUARD) as http:
            try:
                producer = await self._producer()
            except Exception as exc:
                self.failures.append(f"creating the producer: {type(exc).__name__}: {exc}")
                return
            try:
                while not self._stopping:
                    try:
                        answer = await http.get(f"{self.web_url}/lookup/v2/topic/persistent/{local}")
                        if answer.status_code != 200:
                            self.failures.append(f"lookup: HTTP {answer.status_code} {answer.text[:200]}")
                        else:
                            self.served += 1
                        section = payload_section(MessageMetadata("bystander", sequence, 1), b"innocent")
                        producer.send(payload_frame(CommandSend(1, sequence), section))
                        receipt = await producer.next()
                        if not isinstance(receipt, CommandSendReceipt) or receipt.sequence_id != sequence:
                            self.failures.append(f"send {sequence}: {receipt!r}")
                            return
                        self.served += 1
                        sequence += 1
                    except Exception as exc:
                        self.failures.append(f"{type(exc).__name__}: {exc}")
                        return
                    await asyncio.sleep(0.02)
            finally:
                producer.close()

    async def _producer(self) -> RawConnection:
        probe = await RawConnection.open(self.pulsar_url)
        owner = await probe.lookup(self.topic)
        probe.close()
        producer = await RawConnection.open(owner)
        producer.send(CommandProducer(self.topic, 1, 1))
        answer = await producer.next()
        if not isinstance(answer, CommandProducerSuccess):
            raise ConnectionError(f"PRODUCER answered {answer!r}")
        return producer

    async def serve_more(self, count: int = 3) -> None:
        """Wait until ``count`` more requests were served (the attack is going on meanwhile)."""
        target = self.served + count
        async with asyncio.timeout(GUARD):
            while self.served < target:
                if self.failures or (self._task is not None and self._task.done()):
                    raise AssertionError(f"bystanders failed: {self.failures[:5]}")
                await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self._stopping = True
        if self._task is not None:
            await asyncio.wait_for(self._task, GUARD)

    def check(self) -> None:
        assert not self.failures, self.failures[:5]
        assert self.served > 0

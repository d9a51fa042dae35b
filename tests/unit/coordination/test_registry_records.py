"""A broker's registration is read through two decoded records, each made once per version of its node."""

from __future__ import annotations

import logging

from brokerlb.coordination import DRAINING_KEY, BrokerRegistry
from brokerlb.model import LocalBrokerData
from brokerlb.testing.waiting import eventually


def registration(num_bundles: int, **extra: object) -> dict[str, object]:
    report = LocalBrokerData(
        web_service_url="http://b1:8080", pulsar_service_url="pulsar://b1:6650", num_bundles=num_bundles
    )
    return {**report.to_json(), **extra}


async def test_urls_draining_and_the_report_each_decoded_once_per_version(store) -> None:
    registry = await BrokerRegistry(store).start()
    await registry.register("b1:8080", registration(2))
    await registry.wait_for(lambda ids: ids == ["b1:8080"])
    registered = registry.broker("b1:8080")
    assert registered is not None and not registered.draining
    assert (registered.web_service_url, registered.pulsar_service_url) == (
        "http://b1:8080",
        "pulsar://b1:6650",
    )
    report = registry.report("b1:8080")
    assert report is not None and report.num_bundles == 2
    assert registry.report("b1:8080") is report  # the same object until the broker writes again

    await registry.update(registration(3, **{DRAINING_KEY: True}))
    await eventually(lambda: registry.report("b1:8080") is not report, message="the update seen")
    assert registry.report("b1:8080").num_bundles == 3  # type: ignore[union-attr]
    assert registry.broker("b1:8080").draining  # type: ignore[union-attr]

    await registry.unregister()
    await registry.wait_for(lambda ids: ids == [])
    assert registry.broker("b1:8080") is None and registry.report("b1:8080") is None
    await registry.close()


async def test_a_registration_that_is_not_a_report_keeps_its_urls_and_has_no_report(store, caplog) -> None:
    registry = await BrokerRegistry(store).start()
    await registry.register("b1:8080", {"webServiceUrl": "http://b1:8080", "numBundles": -1})
    await registry.wait_for(lambda ids: ids == ["b1:8080"])
    with caplog.at_level(logging.WARNING, logger="brokerlb.coordination.registry"):
        assert registry.report("b1:8080") is None
        assert registry.report("b1:8080") is None  # logged once for this version
    assert [r.getMessage() for r in caplog.records if "unreadable load report" in r.getMessage()] == [
        caplog.records[0].getMessage()
    ]
    assert "numBundles" in caplog.records[0].getMessage()
    assert registry.broker("b1:8080").web_service_url == "http://b1:8080"  # type: ignore[union-attr]
    await registry.close()

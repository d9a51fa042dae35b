"""Regressions for Apache Pulsar #24478 and #25379: ownership across ZooKeeper and broker restarts.

* **#24478** (two brokers load the same topic after a ZooKeeper restart): after the ZooKeeper
  servers were restarted, one broker's session was lost; it re-registered, timed out waiting for an
  owner and answered with itself while another broker had loaded the topic -- both served it and a
  ledger was lost. Here: a broker is frozen across a ZooKeeper restart until its session expires
  after the restart (its bundles go to others), twice, then ZooKeeper is restarted once more with
  every broker running; clients produce and consume throughout.
* **#25379** (bundles stuck ``Assigning`` after a restart): a broker restarted while a bundle was
  being assigned to it ignored that assignment, and lookups of the bundle were blocked until a
  monitor ran a minute later. Here: bundles are transferred to a broker that is SIGKILLed at that
  moment and restarted on its port, three times.

Both run as scripted fault campaigns (:class:`~brokerlb.testing.chaos.Campaign`) on a real ZooKeeper
with broker processes, and the ownership-history checker proves: no instant at which two brokers
accepted publishes for one topic; every bundle of the frozen/killed broker that a topic uses served
again; no bundle left in a transition (disabled) longer than the watchdog bound.
"""

from __future__ import annotations

import json

import pytest

from brokerlb.testing.chaos import Campaign, CampaignConfig

pytestmark = [pytest.mark.zookeeper, pytest.mark.slow]


async def _scripted(script: list[str], seed: int):
    result = await Campaign(CampaignConfig(faults=len(script), seed=seed, time_limit=120.0)).run(
        script=script
    )
    print(json.dumps(result.summary(), indent=1))
    return result


async def test_pulsar_24478_no_two_brokers_serve_a_topic_after_zookeeper_restarts() -> None:
    result = await _scripted(["zk-restart-pause", "zk-restart-pause", "zk-restart"], seed=24478)
    v = result.verdict
    assert result.faults["zk-restart-pause"] == 2 and result.faults["zk-restart"] == 1, result.errors
    assert v.double_serving == 0, v.overlaps[:5]
    assert v.reownership_ns, "the frozen brokers held bundles that others had to take"
    assert v.not_reowned == [], v.not_reowned
    assert v.unserved_at_end == [], v.unserved_at_end
    assert v.stuck_transitions == [], v.stuck_transitions


async def test_pulsar_25379_no_bundle_stuck_after_its_destination_restarted() -> None:
    result = await _scripted(["kill-transfer-destination"] * 3, seed=25379)
    v = result.verdict
    assert result.faults["kill-transfer-destination"] == 3, result.errors
    assert v.double_serving == 0, v.overlaps[:5]
    assert v.not_reowned == [], v.not_reowned
    assert v.unserved_at_end == [], v.unserved_at_end
    assert v.stuck_transitions == [], v.stuck_transitions

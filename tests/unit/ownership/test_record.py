"""The ownership record: Pulsar's JSON, the conflict resolver's rules, and bad stored records."""

from __future__ import annotations

import json

import pytest

from brokerlb.errors import CorruptMetadataError, InvalidTransitionError
from brokerlb.ownership import BundleState
from brokerlb.ownership.record import OwnershipRecord, check_next, record_from_bytes, record_from_json

S = BundleState


def test_the_json_has_pulsars_field_names_and_round_trips():
    r = OwnershipRecord(
        S.SPLITTING,
        src="b1:8080",
        children=("0x00000000_0x7fffffff", "0x7fffffff_0xffffffff"),
        version=4,
        src_session=9,
    )
    data = r.to_json()
    assert list(data) == [
        "state",
        "dstBroker",
        "sourceBroker",
        "splitServiceUnitToDestBroker",
        "force",
        "timestamp",
        "versionId",
        "dstBrokerSessionId",
        "sourceBrokerSessionId",
    ]
    assert data["state"] == "Splitting"
    assert data["splitServiceUnitToDestBroker"] == {
        "0x00000000_0x7fffffff": None,
        "0x7fffffff_0xffffffff": None,
    }
    assert record_from_bytes(r.to_bytes()) == r
    # what Pulsar writes (no session fields) reads too
    pulsar = {
        "state": "Owned",
        "dstBroker": "b2:8080",
        "sourceBroker": None,
        "force": False,
        "timestamp": 5,
        "versionId": 2,
    }
    assert record_from_json(pulsar) == OwnershipRecord(S.OWNED, dst="b2:8080", timestamp=5, version=2)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (b"[1]", "must be a JSON object"),
        (b"{not json", "not JSON"),
        (b'{"state": "Gone", "versionId": 1}', "unknown ownership state"),
        (b'{"state": "Owned", "versionId": 1}', "must name a broker"),
        (b'{"state": "Owned", "dstBroker": "b", "versionId": "1"}', "versionId must be an integer"),
        (b'{"state": "Owned", "dstBroker": 3, "versionId": 1}', "dstBroker must be a string"),
        (
            b'{"state": "Splitting", "sourceBroker": "b", "versionId": 1, "splitServiceUnitToDestBroker": []}',
            "must be an object",
        ),
    ],
)
def test_a_bad_stored_record_is_a_clear_error_naming_the_path(raw, why):
    with pytest.raises(CorruptMetadataError, match=why) as info:
        record_from_bytes(raw, "/service_unit_state/t/ns/0x00000000_0xffffffff")
    assert "/service_unit_state/t/ns/0x00000000_0xffffffff" in str(info.value)


def owned(dst="b1", version=2, session=1):
    return OwnershipRecord(S.OWNED, dst=dst, version=version, dst_session=session)


@pytest.mark.parametrize(
    ("prev", "new", "commit", "why"),
    [
        (None, OwnershipRecord(S.ASSIGNING, dst="b1", version=2), False, "versionId 2 does not follow"),
        (
            None,
            OwnershipRecord(S.OWNED, dst="b1", version=1, dst_session=1),
            False,
            "Init -> Owned is not a valid",
        ),
        (owned(), OwnershipRecord(S.ASSIGNING, dst="b2", version=3), False, "Owned -> Assigning"),
        (owned(), OwnershipRecord(S.RELEASING, src="b2", version=3), False, "names the owner"),
        (owned(), OwnershipRecord(S.RELEASING, src="b1", dst="b1", version=3), False, "another broker"),
        (owned(), OwnershipRecord(S.SPLITTING, src="b1", dst="b1", version=3), False, "made by the owner"),
        (
            OwnershipRecord(S.ASSIGNING, dst="b1", version=1),
            OwnershipRecord(S.OWNED, dst="b1", version=2),
            False,
            "names its session",
        ),
        (
            OwnershipRecord(S.ASSIGNING, dst="b1", version=1),
            OwnershipRecord(S.OWNED, dst="b2", version=2, dst_session=1),
            False,
            "as it was assigned",
        ),
        (None, OwnershipRecord(S.ASSIGNING, dst="b1", src="b2", version=1), False, "no source"),
        (
            OwnershipRecord(S.DELETED, src="b1", version=5),
            OwnershipRecord(S.OWNED, dst="b2", version=6, dst_session=1, force=True),
            False,
            "no override brings it back",
        ),
        (owned(), OwnershipRecord(S.FREE, src="b1", version=3), True, "not a split or merge commit"),
    ],
)
def test_the_conflict_resolver_refuses(prev, new, commit, why):
    with pytest.raises(InvalidTransitionError, match=why):
        check_next(prev, new, commit=commit)


def test_the_conflict_resolver_accepts_pulsars_flows_and_the_commits():
    assign = OwnershipRecord(S.ASSIGNING, dst="b1", version=1)
    check_next(None, assign)
    take = OwnershipRecord(S.OWNED, dst="b1", version=2, dst_session=7)
    check_next(assign, take)
    transfer = OwnershipRecord(S.RELEASING, src="b1", dst="b2", version=3, src_session=7)
    check_next(take, transfer)
    check_next(transfer, OwnershipRecord(S.ASSIGNING, src="b1", dst="b2", version=4))
    unload = OwnershipRecord(S.RELEASING, src="b1", version=3, src_session=7)
    check_next(unload, OwnershipRecord(S.FREE, src="b1", version=4))
    # brokerlb: an unload whose topics' state went to a broker goes on to it (the hand-off's rule)
    check_next(unload, OwnershipRecord(S.ASSIGNING, src="b1", dst="b3", version=4))
    split = OwnershipRecord(S.SPLITTING, src="b1", children=("a", "b"), version=3, src_session=7)
    check_next(take, split)
    check_next(split, OwnershipRecord(S.DELETED, src="b1", version=4), commit=True)
    check_next(None, OwnershipRecord(S.OWNED, dst="b1", version=1, dst_session=7), commit=True)
    check_next(take, OwnershipRecord(S.DELETED, src="b1", version=3), commit=True)  # a merged part
    # the leader's override skips the table (not out of Deleted), tombstones end Free and Deleted
    check_next(split, OwnershipRecord(S.OWNED, dst="b2", version=4, dst_session=9, force=True))
    check_next(OwnershipRecord(S.FREE, src="b1", version=4), None)
    with pytest.raises(InvalidTransitionError):
        check_next(take, None)
    assert json.loads(take.to_bytes())["dstBrokerSessionId"] == 7

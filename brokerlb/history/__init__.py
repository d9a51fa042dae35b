"""Load history: the records brokers, the leader and the simulator write for the data pipeline.

Pulsar keeps load data only in the leader's memory, for the latest cycles. brokerlb also
writes it down, as JSON Lines day files that the Spark pipeline (``brokerlb pipeline
ingest``) turns into Parquet tables. This package is pure (no Spark, no I/O beyond the
files it writes); the formats are documented in ``docs/load-history.md``.

Who writes what::

    from brokerlb.history import BrokerSample, BundleBoundaries, HistoryWriter, TopicSample

    with HistoryWriter("/var/lib/brokerlb/history", writer_id="leader") as history:
        history.write(BrokerSample(now_ms, broker_id, local_broker_data))   # each report the leader reads
        history.write(BrokerSample.removed(now_ms, broker_id))               # a broker's registration vanished
        history.write(BundleBoundaries.of(now_ms, namespace_bundles))        # after create / split / merge
    # each broker, for its own topics (e.g. every loadBalancerReportUpdateMinIntervalMillis):
    history.write_all(topic_samples_from_broker_stats(broker_stats_topics_json, now_ms, broker_id))

* :class:`BrokerSample`, :class:`TopicSample`, :class:`BundleBoundaries` -- the records;
* :class:`HistoryWriter` -- ``write(record)``, ``roll()``, ``close()``; one file per UTC day
  and writer, published atomically;
* :func:`read_history` -- read the files back; :func:`replay_load_data` -- the leader's
  load data computed in-process from broker samples (the reference for the pipeline).
"""

from brokerlb.history.broker_stats import topic_samples_from_broker_stats
from brokerlb.history.hold import DepartureHold
from brokerlb.history.members import MEMBERS_FILE, read_members, write_members
from brokerlb.history.reader import history_files, read_history, read_history_file
from brokerlb.history.records import (
    BROKER_SAMPLES,
    BUNDLE_BOUNDARIES,
    KIND_PRODUCERS,
    MAX_TIMESTAMP_MS,
    RECORD_KINDS,
    TOPIC_SAMPLES,
    TOPIC_VALUE_KEYS,
    BrokerSample,
    BundleBoundaries,
    HistoryRecord,
    TopicSample,
    record_from_json,
)
from brokerlb.history.replay import (
    CYCLE_MODES,
    BrokerHistoryEntry,
    BundleHistoryEntry,
    ReplayedLoadData,
    replay_load_data,
)
from brokerlb.history.writer import DayFileWriter, HistoryWriter, safe_writer_id, utc_day

__all__ = [
    "BROKER_SAMPLES",
    "BUNDLE_BOUNDARIES",
    "CYCLE_MODES",
    "KIND_PRODUCERS",
    "MEMBERS_FILE",
    "MAX_TIMESTAMP_MS",
    "RECORD_KINDS",
    "TOPIC_SAMPLES",
    "TOPIC_VALUE_KEYS",
    "BrokerHistoryEntry",
    "BrokerSample",
    "BundleBoundaries",
    "BundleHistoryEntry",
    "DayFileWriter",
    "DepartureHold",
    "HistoryRecord",
    "HistoryWriter",
    "ReplayedLoadData",
    "TopicSample",
    "history_files",
    "read_history",
    "read_history_file",
    "read_members",
    "record_from_json",
    "replay_load_data",
    "safe_writer_id",
    "topic_samples_from_broker_stats",
    "utc_day",
    "write_members",
]

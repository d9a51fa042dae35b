"""The load-data pipeline on Spark (the ``pipeline`` extra: pyspark, pyarrow, pandas).

Jobs, each a function here and a command (``brokerlb pipeline ...``):

* :func:`ingest` -- history JSON Lines (:mod:`brokerlb.history`) → Parquet tables by date,
  incremental (Structured Streaming, ``availableNow``, checkpointed), bad rows → ``rejects``;
* :func:`load_data` -- the leader's load data at scale (bundle short/long-term averages over
  report cycles, broker time averages), equal to the in-process model;
* :func:`recommend` -- a plan of balanced splits (hot topics alone), merges of cold bundles and
  bundle-count advice, for ``brokerlb plan apply``;
* :func:`backtest` -- a grid (:class:`BacktestGrid`) of strategies and settings replayed on
  the recorded topic traffic through the simulator, one Spark task per configuration;
* :func:`spark_session` -- a session configured for all of them (``local[*]`` by default).

Only the Spark modules import pyspark, and only when used: ``import brokerlb.pipeline`` is
cheap, and the pure parts (:mod:`~brokerlb.pipeline.advisor`,
:mod:`~brokerlb.pipeline.running_average`, :mod:`~brokerlb.pipeline.bundle_index`) work without it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BacktestGrid",
    "BacktestResult",
    "IngestResult",
    "LoadDataResult",
    "backtest",
    "ingest",
    "load_data",
    "load_data_json",
    "recommend",
    "spark_session",
]

_LAZY = {
    "BacktestGrid": "brokerlb.pipeline.backtest_grid",
    "BacktestResult": "brokerlb.pipeline.backtest",
    "backtest": "brokerlb.pipeline.backtest",
    "IngestResult": "brokerlb.pipeline.ingest",
    "ingest": "brokerlb.pipeline.ingest",
    "LoadDataResult": "brokerlb.pipeline.loaddata",
    "load_data": "brokerlb.pipeline.loaddata",
    "load_data_json": "brokerlb.pipeline.loaddata",
    "recommend": "brokerlb.pipeline.recommend",
    "spark_session": "brokerlb.pipeline.session",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'brokerlb.pipeline' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)

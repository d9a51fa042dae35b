"""Topic → bundle at scale: ``crc32`` in Spark, a range lookup against the layout valid at each sample's time.

1. The ``bundle_boundaries`` table is small; it is collected into a
   :class:`~brokerlb.pipeline.bundle_index.BoundaryIndex` on the driver (one version per record).
2. Each topic sample gets the ``versionId`` valid at its ``timestamp`` by a broadcast join on
   the namespace and the version's ``[validFrom, validTo)``.
3. Spark's ``crc32(topic)`` is the ring's hash (``zlib.crc32`` of the UTF-8 name, unsigned).
   The bundle is found by a second broadcast join, on ``(versionId, bucket)`` where ``bucket``
   is the hash's top 8 bits, against every version's bundles listed once per bucket they
   overlap (:func:`bundle_ranges_frame`, about versions x (256 + bundles) rows), keeping the
   one with ``lower <= hash < upper`` (the last bundle includes ``0xffffffff``). Everything
   stays in the JVM: no shuffle of the samples, no Python per row.
4. ``bundle`` is the looked-up bundle; a sample whose namespace had no layout yet keeps the bundle
   the broker recorded (``bundleSource = "recorded"``); with neither it stays unmapped (null).
   A recorded bundle that disagrees with the layout is counted in ``bundleMismatch``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from brokerlb.pipeline.bundle_index import BoundaryIndex

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "boundary_index",
    "versions_frame",
    "bundle_ranges_frame",
    "assign_bundles",
    "bundle_sums",
    "candidate_ranges_frame",
    "SUMMED",
    "bundle_name_from_range",
    "unmapped_reason",
]


def boundary_index(layouts: DataFrame | None, *, until: int | None = None) -> BoundaryIndex:
    """The layouts of a ``bundle_boundaries`` table (records after ``until`` left out)."""
    if layouts is None:
        return BoundaryIndex([])
    from pyspark.sql import functions as F

    if until is not None:
        layouts = layouts.where(F.col("timestamp") <= until)
    rows = layouts.select("namespace", "timestamp", "boundaries").collect()
    return BoundaryIndex((r["namespace"], r["timestamp"], r["boundaries"]) for r in rows)


def versions_frame(spark: SparkSession, index: BoundaryIndex) -> DataFrame:
    """``(namespace, versionId, validFrom, validTo)`` of every layout version."""
    rows = [(v.namespace, v.version_id, v.valid_from, v.valid_to) for v in index.versions]
    return spark.createDataFrame(rows, "namespace string, versionId long, validFrom long, validTo long")


#: The hash's top bits form the bucket of the bundle join (256 buckets).
BUCKET_SHIFT = 24


def bundle_ranges_frame(spark: SparkSession, index: BoundaryIndex) -> DataFrame:
    """``(versionId, bucket, bundleLower, bundleUpper, upperExclusive)``: every bundle of every
    version, once per hash bucket it overlaps (``upperExclusive`` is ``2**32`` for the last bundle)."""
    rows = []
    for v in index.versions:
        last = len(v.boundaries) - 2
        for i, (lower, upper) in enumerate(zip(v.boundaries[:-1], v.boundaries[1:], strict=True)):
            exclusive = upper + 1 if i == last else upper
            for bucket in range(lower >> BUCKET_SHIFT, ((exclusive - 1) >> BUCKET_SHIFT) + 1):
                rows.append((v.version_id, bucket, lower, upper, exclusive))
    return spark.createDataFrame(
        rows, "versionId long, bucket long, bundleLower long, bundleUpper long, upperExclusive long"
    )


def candidate_ranges_frame(spark: SparkSession, index: BoundaryIndex) -> DataFrame:
    """``(namespace, bucket, validFrom, validTo, bundleLower, bundleUpper, upperExclusive)``: every bundle
    of every layout version, once per hash bucket it overlaps -- the one small table
    :func:`bundle_sums` joins against. Built from Arrow, so Spark reads it from the plan (no Python
    worker runs for it, however often it is broadcast)."""
    import pyarrow as pa

    columns: dict[str, list[int | str | None]] = {
        name: []
        for name in (
            "namespace",
            "bucket",
            "validFrom",
            "validTo",
            "bundleLower",
            "bundleUpper",
            "upperExclusive",
        )
    }
    for v in index.versions:
        last = len(v.boundaries) - 2
        for i, (lower, upper) in enumerate(zip(v.boundaries[:-1], v.boundaries[1:], strict=True)):
            exclusive = upper + 1 if i == last else upper
            for bucket in range(lower >> BUCKET_SHIFT, ((exclusive - 1) >> BUCKET_SHIFT) + 1):
                for name, value in (
                    ("namespace", v.namespace),
                    ("bucket", bucket),
                    ("validFrom", v.valid_from),
                    ("validTo", v.valid_to),
                    ("bundleLower", lower),
                    ("bundleUpper", upper),
                    ("upperExclusive", exclusive),
                ):
                    columns[name].append(value)
    table = pa.table(
        {
            name: pa.array(values, type=pa.string() if name == "namespace" else pa.int64())
            for name, values in columns.items()
        }
    )
    return spark.createDataFrame(table)


#: The per-bundle sums of topic samples (``bundle_sums``).
SUMMED = ("msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "consumerCount", "producerCount")


def bundle_sums(spark: SparkSession, samples: DataFrame, index: BoundaryIndex) -> DataFrame:
    """Topic samples summed per ``(timestamp, broker, namespace, bundleLower, bundleUpper,
    recordedBundle)``, with ``topics`` (their count): the layout lookup and the sums in one pass.

    One broadcast join on ``(namespace, bucket)`` against :func:`candidate_ranges_frame` keeps the
    candidate whose version is valid at the sample's time and whose range holds its hash (at most
    one); a sample without one keeps null bounds (its ``recordedBundle``, if any, names it). No
    bundle name is built per sample: the result is small (dumps x bundles).
    """
    from pyspark.sql import functions as F

    if "topicHash" not in samples.columns:
        samples = samples.withColumn("topicHash", F.crc32(F.col("topic")))
    s = samples.select(
        "timestamp",
        "broker",
        "namespace",
        "topicHash",
        F.col("bundle").alias("recordedBundle"),
        *SUMMED,
        F.shiftright(F.col("topicHash"), BUCKET_SHIFT).alias("bucket"),
    ).alias("s")
    if len(index) == 0:
        mapped = s.withColumn("bundleLower", F.lit(None).cast("long")).withColumn(
            "bundleUpper", F.lit(None).cast("long")
        )
    else:
        r = candidate_ranges_frame(spark, index).alias("r")
        hit = (
            (F.col("s.namespace") == F.col("r.namespace"))
            & (F.col("s.bucket") == F.col("r.bucket"))
            & (F.col("s.timestamp") >= F.col("r.validFrom"))
            & (F.col("r.validTo").isNull() | (F.col("s.timestamp") < F.col("r.validTo")))
            & (F.col("s.topicHash") >= F.col("r.bundleLower"))
            & (F.col("s.topicHash") < F.col("r.upperExclusive"))
        )
        mapped = s.join(F.broadcast(r), hit, "left").select("s.*", "r.bundleLower", "r.bundleUpper")
    return mapped.groupBy(
        "timestamp", "broker", "namespace", "bundleLower", "bundleUpper", "recordedBundle"
    ).agg(*(F.sum(name).alias(name) for name in SUMMED), F.count(F.lit(1)).alias("topics"))


def assign_bundles(spark: SparkSession, samples: DataFrame, index: BoundaryIndex) -> DataFrame:
    """``samples`` (``topic_samples`` columns) plus ``versionId``, ``bundleLower``, ``bundleUpper``,
    ``bundle``, ``bundleSource`` and ``bundleMismatch`` (see the module docstring)."""
    from pyspark.sql import functions as F

    if "topicHash" not in samples.columns:
        samples = samples.withColumn("topicHash", F.crc32(F.col("topic")))
    samples = samples.withColumnRenamed("bundle", "recordedBundle")
    if len(index) == 0:
        versioned = samples.withColumn("versionId", F.lit(None).cast("long"))
        mapped = versioned.withColumn("bundleLower", F.lit(None).cast("long")).withColumn(
            "bundleUpper", F.lit(None).cast("long")
        )
    else:
        v = versions_frame(spark, index).alias("v")
        s = samples.alias("s")
        cond = (
            (F.col("s.namespace") == F.col("v.namespace"))
            & (F.col("s.timestamp") >= F.col("v.validFrom"))
            & (F.col("v.validTo").isNull() | (F.col("s.timestamp") < F.col("v.validTo")))
        )
        versioned = s.join(F.broadcast(v), cond, "left").select("s.*", F.col("v.versionId"))
        versioned = versioned.withColumn("bucket", F.shiftright(F.col("topicHash"), BUCKET_SHIFT)).alias("s")
        r = bundle_ranges_frame(spark, index).alias("r")
        in_range = (
            (F.col("s.versionId") == F.col("r.versionId"))
            & (F.col("s.bucket") == F.col("r.bucket"))
            & (F.col("s.topicHash") >= F.col("r.bundleLower"))
            & (F.col("s.topicHash") < F.col("r.upperExclusive"))
        )
        mapped = (
            versioned.join(F.broadcast(r), in_range, "left")
            .select("s.*", F.col("r.bundleLower"), F.col("r.bundleUpper"))
            .drop("bucket")
        )
    computed = bundle_name_from_range()
    recorded = F.col("recordedBundle")
    return (
        mapped.withColumn("bundle", F.coalesce(computed, recorded))
        .withColumn(
            "bundleSource",
            F.when(computed.isNotNull(), F.lit("layout")).when(recorded.isNotNull(), F.lit("recorded")),
        )
        .withColumn("bundleMismatch", computed.isNotNull() & recorded.isNotNull() & (computed != recorded))
    )


def bundle_name_from_range():  # type: ignore[no-untyped-def]
    """``namespace/0x..._0x...`` of the looked-up ``bundleLower``/``bundleUpper`` (null without one)."""
    from pyspark.sql import functions as F

    from brokerlb.pipeline.parse import bundle_range_name

    return F.when(
        F.col("bundleLower").isNotNull(),
        F.concat_ws("/", F.col("namespace"), bundle_range_name(F.col("bundleLower"), F.col("bundleUpper"))),
    )


def unmapped_reason():  # type: ignore[no-untyped-def]
    """The reject reason of a sample left without a bundle."""
    from pyspark.sql import functions as F

    return F.format_string(
        "no bundle for topic %s: namespace %s has no bundle-boundaries record at or before %s and the sample "
        "names no bundle",
        F.col("topic"),
        F.col("namespace"),
        F.col("timestamp").cast("string"),
    )

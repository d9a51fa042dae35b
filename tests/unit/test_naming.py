import pytest

from brokerlb import NamespaceName, TopicName
from brokerlb.errors import InvalidNamespaceNameError, InvalidTopicNameError
from brokerlb.naming import (
    broker_of_heartbeat_namespace,
    broker_of_sla_namespace,
    heartbeat_namespace,
    heartbeat_namespace_v2,
    is_system_service_namespace,
    sla_monitor_namespace,
)


@pytest.mark.parametrize(
    "given, full",
    [
        ("my-topic", "persistent://public/default/my-topic"),
        ("tenant/ns/t", "persistent://tenant/ns/t"),
        ("persistent://tenant/ns/t", "persistent://tenant/ns/t"),
        ("non-persistent://tenant/ns/t", "non-persistent://tenant/ns/t"),
        ("PERSISTENT://tenant/ns/t", "persistent://tenant/ns/t"),
        ("persistent://tenant/cluster/ns/t", "persistent://tenant/cluster/ns/t"),
        ("persistent://tenant/cluster/ns/a/b", "persistent://tenant/cluster/ns/a/b"),
    ],
)
def test_parse_forms(given, full):
    t = TopicName.parse(given)
    assert str(t) == full
    assert TopicName.parse(str(t)) == t


def test_attributes_v2():
    t = TopicName.parse("non-persistent://acme/orders/eu-partition-12")
    assert t.domain == "non-persistent"
    assert t.tenant == "acme"
    assert isinstance(t.namespace, NamespaceName)
    assert str(t.namespace) == "acme/orders"
    assert t.local_name == "eu-partition-12"
    assert t.partition_index == 12
    assert t.is_partitioned and not t.is_persistent and t.is_v2
    assert str(t.partitioned_topic_name) == "non-persistent://acme/orders/eu"
    assert t.lookup_name == "non-persistent/acme/orders/eu-partition-12"


def test_attributes_v1():
    t = TopicName.parse("persistent://acme/us-west/orders/t1")
    assert t.cluster == "us-west"
    assert str(t.namespace) == "acme/us-west/orders"
    assert not t.is_v2
    assert t.partition_index == -1
    assert t.lookup_name == "persistent/acme/us-west/orders/t1"


@pytest.mark.parametrize(
    "local, index",
    [
        ("t-partition-0", 0),
        ("t-partition-7", 7),
        ("t-partition-01", -1),
        ("t-partition--1", -1),
        ("t-partition-x", -1),
        ("t", -1),
        ("a-partition-1-partition-2", 2),
        ("t-partition-99999999999", -1),
    ],
)
def test_partition_index_rules(local, index):
    assert TopicName.parse(f"persistent://a/b/{local}").partition_index == index


def test_partition_of_base_and_of_partition():
    base = TopicName.parse("a/b/t")
    assert str(base.partition(3)) == "persistent://a/b/t-partition-3"
    assert base.partition(-1) is base
    p3 = base.partition(3)
    assert p3.partition(3) is p3
    assert p3.partitioned_topic_name == base


def test_lookup_name_is_url_encoded_like_java():
    t = TopicName.parse("persistent://a/b/my topic~é")
    assert t.lookup_name == "persistent/a/b/my+topic%7E%C3%A9"


@pytest.mark.parametrize(
    "bad, why",
    [
        ("", "non-empty"),
        ("a/b", "short topic name"),
        ("a/b/c/d", "short topic name"),
        ("kafka://a/b/c", "unknown domain"),
        ("persistent://a/b", "expected domain://"),
        ("persistent://a/b/", "local name is empty"),
        ("persistent://a b/ns/t", "tenant"),
        ("persistent:///ns/t", "empty"),
        ("persistent://t/n$s/x", "namespace"),
    ],
)
def test_invalid_topic_names_say_why(bad, why):
    with pytest.raises(InvalidTopicNameError) as info:
        TopicName.parse(bad)
    assert why in str(info.value)
    assert info.value.http_status == 412


def test_non_string_rejected():
    with pytest.raises(InvalidTopicNameError):
        TopicName.parse(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "a", "a/b/c/d", "a//b", "/b", "a/", "a b/c", "t/n!s"])
def test_invalid_namespace_names(bad):
    with pytest.raises(InvalidNamespaceNameError):
        NamespaceName.parse(bad)


def test_namespace_v1_v2():
    assert NamespaceName.parse("t/ns").is_v2
    n1 = NamespaceName.parse("t/c/ns")
    assert not n1.is_v2 and n1.cluster == "c" and str(n1) == "t/c/ns"
    assert str(NamespaceName.parse("t/ns").topic("x")) == "persistent://t/ns/x"


def test_system_namespaces():
    assert str(heartbeat_namespace("c1", "10.0.0.1:8080")) == "pulsar/c1/10.0.0.1:8080"
    assert str(heartbeat_namespace_v2("10.0.0.1:8080")) == "pulsar/10.0.0.1:8080"
    assert str(sla_monitor_namespace("c1", "h:8080")) == "sla-monitor/c1/h:8080"
    assert broker_of_heartbeat_namespace("pulsar/c1/10.0.0.1:8080") == "10.0.0.1:8080"
    assert broker_of_heartbeat_namespace("pulsar/10.0.0.1:8080") == "10.0.0.1:8080"
    assert broker_of_sla_namespace("sla-monitor/c1/h:8080") == "h:8080"
    assert broker_of_heartbeat_namespace("public/default") is None
    assert is_system_service_namespace("pulsar/system")
    assert is_system_service_namespace("pulsar/h:1")
    assert not is_system_service_namespace("pulsar/other")
    assert not is_system_service_namespace("public/default")


# Pulsar rule (TopicName.get / TopicName.toFullTopicName since apache/pulsar#23691): a local name
# that is blank -- only whitespace as Java's Character.isWhitespace sees it -- is "blank local
# topic", an IllegalArgumentException; brokerlb raises InvalidTopicNameError (HTTP 412).
@pytest.mark.parametrize(
    "blank",
    [
        " ",
        "   ",
        "\t",
        "\n",
        " \t\r\n",
        "\u3000",  # ideographic space (a Unicode space separator: Java whitespace)
        "\u2028",  # line separator
        "\x1f",  # unit separator (Java whitespace)
        "/ ",  # short form: StringUtils.split drops the empty part -> public/default/" "
        "t/ns/ ",
        "t/ns/\t",
        "persistent://t/ns/ ",
        "non-persistent://t/ns/  ",
        "persistent://t/cluster/ns/ ",
        "persistent://t/cluster/ns/\t\t",
    ],
)
def test_blank_local_names_are_rejected_as_pulsar_does(blank):
    with pytest.raises(InvalidTopicNameError) as info:
        TopicName.parse(blank)
    assert "blank local topic" in str(info.value) and info.value.http_status == 412


@pytest.mark.parametrize(
    "accepted, local",
    [
        (" a ", " a "),  # surrounding spaces are part of the name
        ("t/ns/ x", " x"),
        ("persistent://t/ns/a b", "a b"),
        ("\xa0", "\xa0"),  # no-break space: not Java whitespace, so not blank
        ("persistent://t/ns/\u202f", "\u202f"),
        ("\x85", "\x85"),  # NEL: Python whitespace, not Java's
    ],
)
def test_names_pulsar_accepts_stay_accepted(accepted, local):
    assert TopicName.parse(accepted).local_name == local


def test_a_blank_full_name_is_rejected_on_the_lookup_fast_path_too():
    from brokerlb import NamespaceBundles

    bundles = NamespaceBundles.create("public/default", 4)
    with pytest.raises(InvalidTopicNameError):
        bundles.find_bundle("persistent://public/default/ ")
    assert bundles.find_bundle("persistent://public/default/\xa0") == bundles.find_bundle(
        TopicName.parse("\xa0")
    )


def test_is_blank_is_commons_lang_is_blank():
    from brokerlb.naming import is_blank

    assert is_blank("") and is_blank(" ") and is_blank("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
    assert not is_blank("\xa0") and not is_blank("\u2007") and not is_blank("\u202f") and not is_blank("\x85")
    assert not is_blank(" x")


def test_partition_index_of_any_string_as_pulsars_static_get_partition_index():
    # Pulsar: substringAfterLast("-partition-"), Integer.parseInt, -1 when negative or when the
    # text is longer than the number written out (a sign, leading zeros); parseInt takes any
    # Unicode decimal digits, so an Arabic-Indic three is partition 3
    of = TopicName.partition_index_of
    assert of("persistent://myprop/myns/mytopic-partition-4") == 4
    assert [of(n) for n in ("t-partition--1", "t-partition-00", "t-partition-012", "t-partition-+5")] == [
        -1
    ] * 4
    assert of("t-partition-\u0663") == 3 and of("t-partition-2147483648") == -1 and of("t") == -1


def test_a_topic_of_another_namespace_is_not_found_in_a_ring() -> None:
    from brokerlb import NamespaceBundles
    from brokerlb.errors import BundleNotFoundError

    nb = NamespaceBundles.create("public/default", 4)
    with pytest.raises(BundleNotFoundError, match="not in namespace public/default"):
        nb.find_bundle(TopicName.parse("persistent://public/other/a"))
    # an equal namespace that is another object still matches
    ns = NamespaceName("public", "default")
    assert nb.find_bundle(TopicName("persistent", ns, "a")) == nb.find_bundle("persistent://public/default/a")
    assert TopicName("persistent", ns, "a").ring_hash == TopicName.parse("public/default/a").ring_hash

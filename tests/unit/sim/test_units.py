import math

import pytest

from brokerlb.sim.units import format_duration, parse_duration, parse_quantity, parse_size


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("500ms", 0.5),
        ("90s", 90),
        ("5m", 300),
        ("5min", 300),
        ("2h", 7200),
        ("1d", 86400),
        ("1h30m", 5400),
        (" 2 h ", 7200),
        (45, 45),
        (2.5, 2.5),
        ("1.5h", 5400),
        ("0", 0),
        ("12.5", 12.5),
    ],
)
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "5x", "h", "-5s", -1, math.nan, True, [1], "5m junk"])
def test_bad_durations_name_the_value(bad):
    with pytest.raises(ValueError):
        parse_duration(bad)


def test_sizes_and_quantities():
    assert parse_size("1KB") == 1000 and parse_size("1KiB") == 1024 and parse_size("2 MB") == 2e6
    assert parse_quantity("120k") == 120_000 and parse_quantity("1.5M") == 1.5e6 and parse_quantity(3) == 3
    with pytest.raises(ValueError, match="not a size"):
        parse_size("1 XB")
    with pytest.raises(ValueError, match="not a number"):
        parse_quantity("lots")


def test_format_duration():
    assert format_duration(0.25) == "250ms"
    assert format_duration(3661) == "1h1m1s"
    assert format_duration(86400) == "1d"

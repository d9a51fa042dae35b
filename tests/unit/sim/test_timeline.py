from brokerlb.sim.timeline import Timeline


def test_time_order_then_schedule_order():
    tl = Timeline()
    tl.schedule(3000, "c")
    tl.schedule(1000, "a", 1)
    tl.schedule(1000, "b", 2)
    assert [(t, k) for t, k, _ in tl.pop_due(2000)] == [(1000, "a"), (1000, "b")]
    assert tl.next_time() == 3000


def test_items_scheduled_while_draining_run_if_due():
    tl = Timeline()
    tl.schedule(100, "first")
    seen = []
    for t, kind, _ in tl.pop_due(500):
        seen.append(kind)
        if kind == "first":
            tl.schedule(t + 100, "second")
            tl.schedule(t + 1000, "later")
    assert seen == ["first", "second"] and len(tl) == 1

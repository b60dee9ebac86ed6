"""bench/http_fairness.py's pure parts, on fixed inputs (nothing is run or timed here): the
staleness of an answering subscriber per update, and the figures printed from it."""
from tests.bench_modules import load_bench

http_fairness = load_bench("http_fairness")


def test_a_later_revision_counts_for_every_earlier_update():
    endpoint = http_fairness.Answering()
    try:
        endpoint.arrivals.extend([(1, 10.0), (3, 12.5), (2, 13.0)])
        assert endpoint.received_by(1) == 10.0
        assert endpoint.received_by(2) == 12.5  # revision 3 arrived first
        assert endpoint.received_by(4) is None
    finally:
        endpoint.close()


def test_figures_count_what_never_arrived_until_the_end_and_name_it():
    median, line = http_fairness.figures("phase", [0.5, 1.0, None, 2.0], end=40.0)
    assert median == 1.5
    assert line == ("phase: staleness median 1.50 s, p90 2.00 s, max 40.00 s over 4 "
                    "(subscriber, update) pairs, 1 never received")

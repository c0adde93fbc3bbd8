"""The page-load model of seed 001 (simulation.apps.pages): its mechanisms, and the grid's signs.

Signs are read over sites with a one-sided Wilcoxon signed-rank test, each site replayed
under both schedulers with the same losses (common random numbers), so a sign that holds here is
not one lucky draw.
"""

import numpy as np
import pytest
from scipy import stats

from simulation.apps import pages as pg
from simulation.hashing import hash2, str_key


def one_page(kinds, sizes, *, weight=None) -> pg.Pages:
    kinds = np.asarray(kinds, np.int8)
    sizes = np.asarray(sizes, float)
    w = np.zeros(len(kinds)) if weight is None else np.asarray(weight, float)
    return pg.Pages(
        n=1,
        page=np.zeros(len(kinds), np.int64),
        kind=kinds,
        size=sizes,
        weight=w,
        size_class=np.zeros(1, np.int8),
    )


def test_loss_flags_rate_and_bursts():
    rng = np.random.default_rng(3)
    n, width = 400, 5000
    for loss, burst in ((0.02, 1.0), (0.05, 10.0)):
        flags = pg.loss_flags(
            rng.random((n, width)), rng.random((n, 200)), np.full(n, loss), np.full(n, burst)
        )
        assert abs(flags.mean() - loss) < 0.15 * loss
        starts = flags[:, 1:] & ~flags[:, :-1]
        assert abs(flags[:, 1:].sum() / starts.sum() - burst) < 0.15 * burst  # mean burst length


def test_clock_repairs_a_loss_one_round_trip_and_three_packets_later():
    lost = np.zeros((1, 200), bool)
    lost[0, 20] = True
    rtt, unit = 100.0, 5.4  # 2 Mbit/s, 1350-byte packets
    c = pg.transmission_clock(
        np.array([60]),
        np.array([rtt]),
        np.array([unit]),
        np.array([18.5]),
        np.array([10.0]),
        np.array([0.53]),
        np.array([0.7]),
        lost,
    )
    assert np.isinf(c.first[0, 20]) and np.isfinite(c.first[0, 19])
    delay = c.final[0, 20] - (c.first[0, 19] + unit)  # when it would have arrived
    assert (
        rtt + 2 * unit <= delay <= 2 * rtt + 4 * unit
    )  # a round trip (plus queue) and the dupacks
    assert np.all(np.diff(np.fmin(c.first[0], 1e9)[np.isfinite(c.first[0])]) > 0)  # FIFO bottleneck
    assert np.all(np.diff(c.sent[0]) >= 0)


def sched(page, rr, lost_at=()):
    units, per = pg.transmission_units(page, None)
    total = int(units.sum())
    lost = np.zeros((1, 2 * total + 64), bool)
    lost[0, list(lost_at)] = True
    path = pg.lab_path(1, 0.0, 100, 2000, 1)
    clock = pg.transmission_clock(
        np.array([total]),
        path.rtt_ms,
        per * pg.MSS * 8.0 / path.rate_kbps,
        path.buffer_pkts,
        path.iw_pkts,
        path.alpha,
        path.beta,
        lost,
    )
    dl = pg.schedule(page, units, clock, np.array([rr]), path.rtt_ms)
    return units, dl, pg.page_metrics(page, units, per * pg.MSS, dl)


def test_sequential_sends_in_priority_order_and_round_robin_interleaves():
    # the document, a visible image and two stylesheets (3 packets each), no loss
    page = one_page(
        [pg.HTML, pg.CSS, pg.CSS, pg.IMAGE_VISIBLE],
        [1350, 4050, 4050, 4050],
        weight=[0.3, 0, 0, 0.7],
    )
    _, dl, m = sched(page, False)
    css_a, css_b, img = (dl.slot[dl.resource == r] for r in (1, 2, 3))
    assert (
        css_a.max() < css_b.min() and css_b.max() < img.min()
    )  # one response at a time, by priority
    _, dl, m_rr = sched(page, True)
    css_a, css_b, img = (dl.slot[dl.resource == r] for r in (1, 2, 3))
    # the first image is the one low-priority request Chrome lets through with the stylesheets:
    # round-robin sends one packet of each requested response in turn
    assert css_a[0] < css_b[0] < img[0] < css_a[1] < css_b[1] < img[1]
    assert m_rr["first_paint_ms"][0] > m["first_paint_ms"][0]  # the stylesheets share the link
    assert m_rr["hol_bytes"][0] == m["hol_bytes"][0] == 0.0


def test_a_lost_packet_blocks_the_bytes_behind_it_in_its_stream_only():
    page = one_page([pg.HTML, pg.IMAGE_VISIBLE], [1350, 30 * 1350], weight=[0.3, 0.7])
    _, dl, m = sched(page, False, lost_at=[5])
    img = dl.resource == 1
    waiting = img & np.isfinite(dl.first) & (dl.first < dl.delivered - 1e-6)
    assert waiting.sum() > 0 and m["hol_bytes"][0] == waiting.sum() * pg.MSS
    assert np.all(np.diff(dl.delivered[img]) >= 0)  # in stream order
    assert (
        m["speed_index_ms"][0] > m["speed_index_unordered_ms"][0]
    )  # the wait costs visual progress


def test_pages_follow_the_web_almanac():
    rng = np.random.default_rng(11)
    classes = np.repeat(np.arange(3, dtype=np.int8), 400)
    p = pg.draw_pages(rng, classes)
    requests = p.resources
    weight = p.page_bytes
    med = np.array([np.median(requests[classes == c]) for c in range(3)])
    mb = np.array([np.median(weight[classes == c]) for c in range(3)]) / 1e6
    assert 55 <= med[1] <= 85 and med[0] < 35 and med[2] > 120  # 70 requests at the median page
    assert 1.3 <= mb[1] <= 2.8 and mb[0] < 0.8 and mb[2] > 4.0  # about 2 MB at the median page
    assert np.allclose(np.bincount(p.page, weights=p.weight, minlength=p.n), 1.0)
    # every page has its document, and render-blocking resources come with it
    assert np.all(np.bincount(p.page[p.kind == pg.HTML], minlength=p.n) == 1)


def test_home_site_class_is_a_stable_quarter_half_quarter_split():
    ids = hash2(np.arange(60_000, dtype=np.uint64), str_key("clients"))
    cls = pg.home_site_class(ids)
    assert np.array_equal(cls, pg.home_site_class(ids))
    share = np.bincount(cls, minlength=3) / len(cls)
    assert np.allclose(share, pg.CLASS_SHARES, atol=0.01)


#: sites and replays per class: small sites differ more among themselves relative to the effect,
#: so they need more sites for the same certainty (and cost least to simulate)
SITES = {"small": (256, 2), "medium": (64, 2), "large": (32, 3)}


def grid(size_class, loss, bw):
    sites, replays = SITES[size_class]
    return pg.page_grid(
        loss, 100, bw, 1, size_class=size_class, sites=sites, replays=replays, seed=5
    )


def positive_over_sites(deltas):
    """One-sided p-value that the sites' differences sit above zero (Wilcoxon signed-rank)."""
    d = deltas[np.isfinite(deltas)]
    return stats.wilcoxon(d, alternative="greater").pvalue


@pytest.fixture(scope="module")
def lab():
    out = {}
    for c in pg.SIZE_CLASSES:
        out[c, 0.0, 2000] = grid(c, 0.0, 2000)
        out[c, 0.02, 2000] = grid(c, 0.02, 2000)
        out[c, 0.0, 10_000] = grid(c, 0.0, 10_000)
    out["small", 0.05, 2000] = grid("small", 0.05, 2000)
    return out


@pytest.mark.parametrize("size_class", pg.SIZE_CLASSES)
def test_without_loss_round_robin_is_slower(lab, size_class):
    """2 Mbit/s, 100 ms, no loss: the render-blocking responses share the link with the first
    image and the rest of the document, and the text waits for them."""
    g = lab[size_class, 0.0, 2000]
    assert g["speed_index_delta_pct"] > 0
    # small sites: +1.0 to +1.8% (median) for six seeds, p between 6e-5 and 0.03 at 256 sites
    assert positive_over_sites(g["site_speed_index_delta_pct"]) < (
        0.05 if size_class == "small" else 0.001
    )


def test_small_sites_gain_nothing_from_round_robin_at_high_loss(lab):
    """5% loss: round-robin still costs small sites SpeedIndex (+0.9 to +1.9% for three seeds)."""
    g = lab["small", 0.05, 2000]
    assert g["speed_index_delta_pct"] > 0
    assert positive_over_sites(g["site_speed_index_delta_pct"]) < 0.05


def test_round_robin_cuts_hol_bytes_more_on_large_sites(lab):
    hol = {c: lab[c, 0.02, 2000]["hol_delta_pct"] for c in pg.SIZE_CLASSES}
    assert hol["large"] < hol["medium"] < hol["small"] < 0
    assert hol["large"] < -50


def test_differences_shrink_at_ten_megabit(lab):
    for c in pg.SIZE_CLASSES:
        slow, fast = lab[c, 0.0, 2000], lab[c, 0.0, 10_000]
        assert abs(fast["speed_index_delta_pct"]) < abs(slow["speed_index_delta_pct"]), c


def test_head_of_line_blocking_costs_the_speed_index_little(lab):
    """Why the seed's gain for large sites does not appear (docs/simulator.md): a hole delays only
    the bytes behind it in one stream, for one repair, so in-order delivery costs the sequential
    schedule well under 1% of its SpeedIndex while round-robin's order costs it about 2%."""
    rng = np.random.default_rng(2)
    pages = pg.repeat_pages(pg.draw_pages(rng, np.full(12, 2, np.int8)), 3)
    seq = pg.load_pages(
        pages,
        pg.lab_path(pages.n, 0.05, 100, 2000, 1),
        np.zeros(pages.n, bool),
        np.random.default_rng(4),
    )
    cost = np.median(seq["speed_index_ms"] / seq["speed_index_unordered_ms"] - 1.0)
    assert 0.0 < cost < 0.01
    assert lab["large", 0.0, 2000]["speed_index_delta_pct"] > 100 * cost

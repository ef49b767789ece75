"""`opprof report --html` rendered in headless Chromium (Debian's chromium, driven by Playwright): every chart
is drawn, the console shows no error, and the figures the page shows equal the database's, read here with
sqlite3. The profile is the committed microkernels fixture (an H200 capture with FLOP counters).

Skips only as tests/python/browser.py says.
OPPROF_REPORT_SCREENSHOT=PATH also saves a screenshot of the page there (docs/html_report.png)."""

import os
import re
import sqlite3

import pytest

from browser import launch, needs_browser
from report_fixtures import MICROKERNELS, REPO, attribute_fixture, run_engine

pytestmark = needs_browser

EXPECTED_CHARTS = {"chart-paths", "chart-phases", "chart-operators", "chart-modules", "chart-families",
                   "chart-roofline-operators", "chart-roofline-kernels"}
TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def shown_ns(text):
    """A time as the page shows it ("1.377 ms") in ns, and the rounding of its last digit."""
    m = re.fullmatch(r"(-?[0-9]+(?:\.([0-9]+))?) (ns|us|ms|s)", text)
    assert m, f"not a time: {text!r}"
    unit = TIME_UNITS[m.group(3)]
    digits = len(m.group(2) or "")
    return float(m.group(1)) * unit, 0.5 * unit * 10.0 ** -digits


def assert_time_shown(text, ns):
    value, tolerance = shown_ns(text)
    assert abs(value - ns) <= tolerance * 1.0001, f"{text!r} shown for {ns} ns"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("html")
    db = attribute_fixture(MICROKERNELS, out)
    html = out / "report.html"
    run_engine("report", db, "--html", html)
    return db, html


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module's pages (Playwright's sync API allows one instance at a time)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def open_page(browser, html):
    """The report at html, drawn; its console errors and requests for anything outside the file recorded."""
    pg = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = []
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # Offline: any request for something outside the file is a defect of the page.
    requests = []
    pg.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    pg.goto(html.as_uri())
    pg.wait_for_selector("body[data-opprof-ready='1']", timeout=20000)
    pg.errors, pg.requests = errors, requests
    return pg


@pytest.fixture(scope="module")
def page(report, browser):
    _, html = report
    pg = open_page(browser, html)
    shot = os.environ.get("OPPROF_REPORT_SCREENSHOT")
    if shot:  # the coverage and the rooflines
        pg.set_viewport_size({"width": 1400, "height": 1450})
        pg.screenshot(path=shot)
        pg.set_viewport_size({"width": 1400, "height": 1000})
    yield pg
    pg.close()


def rows(page, table_id, cols):
    """Each row of a table as {col: (data-value, text)}, in the order shown."""
    return page.evaluate(
        """([id, cols]) => Array.from(document.querySelectorAll('#' + id + ' tbody tr')).map((tr) => {
             const out = {key: tr.getAttribute('data-key')};
             for (const c of cols) {
               const td = tr.querySelector('td[data-col="' + c + '"]');
               out[c] = td ? [td.getAttribute('data-value'), td.textContent] : null;
             }
             return out;
           })""",
        [table_id, cols])


def test_no_console_errors_and_nothing_fetched(page):
    assert page.errors == []
    assert page.requests == []


def test_every_chart_is_drawn(page):
    charts = page.evaluate(
        """() => Array.from(document.querySelectorAll('canvas')).map((c) => {
             const chart = Chart.getChart(c);
             const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let inked = 0;
             for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
             return {id: c.id, chart: !!chart && window.opprofCharts[c.id] === chart, width: c.width, inked: inked,
                     points: chart ? chart.data.datasets.reduce((n, d) => n + d.data.length, 0) : 0};
           })""")
    assert {c["id"] for c in charts} == EXPECTED_CHARTS
    for c in charts:
        assert c["chart"], c
        assert c["width"] > 0 and c["inked"] > 1000, c
        assert c["points"] > 0, c


def test_operators_families_and_kernels_equal_the_database(page, report):
    db, _ = report
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    for table, sql in (("table-operators", "SELECT key, kernels, time_ns, bottleneck FROM operators ORDER BY id"),
                       ("table-families", "SELECT key, kernels, time_ns, bottleneck FROM kernel_families ORDER BY id")):
        expected = con.execute(sql).fetchall()
        shown = rows(page, table, ["name", "kernels", "time_ns", "bottleneck"])
        assert len(shown) == len(expected), table
        for row, (key, kernels, time_ns, bottleneck) in zip(shown, expected):
            assert row["key"] == key and row["name"][1] == key
            assert row["kernels"] == [str(kernels), str(kernels)]
            assert int(row["time_ns"][0]) == time_ns
            assert_time_shown(row["time_ns"][1], time_ns)
            assert row["bottleneck"][1] == (bottleneck or "")
    # Per kernel name, counted from the kernels themselves.
    expected = con.execute("SELECT name, count(*), sum(duration_ns) FROM kernel_view WHERE kind = 'kernel' "
                           "GROUP BY name ORDER BY sum(duration_ns) DESC, name").fetchall()
    shown = rows(page, "table-kernels", ["kernels", "time_ns"])
    assert [(r["key"], int(r["kernels"][0]), int(r["time_ns"][0])) for r in shown] == expected
    for r, (_, _, ns) in zip(shown, expected):
        assert_time_shown(r["time_ns"][1], ns)


def test_coverage_and_capture_equal_the_database(page, report):
    db, _ = report
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    kernel_time, kernels, *paths = con.execute(
        "SELECT kernel_time_ns, kernels, path_none_ns, path_correlation_ns, path_enclosure_ns, path_fusion_ns "
        "FROM coverage").fetchone()
    assert_time_shown(page.text_content("#card-kernel-time .v"), kernel_time)
    assert page.text_content("#card-kernels .v") == str(kernels)
    shown = {r["key"]: int(r["ns"][0]) for r in rows(page, "table-coverage", ["ns"])}
    for name, ns in zip(("none", "correlation", "enclosure", "fusion"), paths):
        assert shown[f"path: {name}"] == ns
    gpu = con.execute("SELECT value FROM meta WHERE key = 'timeline.device.0.name'").fetchone()[0]
    capture = {r["key"]: r["value"][1] for r in rows(page, "table-capture", ["value"])}
    assert capture["GPU"] == gpu
    meta = dict(con.execute("SELECT key, value FROM meta"))
    shown_meta = {r["key"]: r["value"][0] for r in rows(page, "table-metadata", ["value"])}
    assert shown_meta == meta


def test_module_tree_inclusive_time_equals_the_database(page, report):
    db, _ = report
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    modules = con.execute("SELECT key, time_ns FROM modules WHERE key != '[no module]'").fetchall()
    shown = rows(page, "table-module-tree", ["inclusive_ns", "self_ns"])
    assert shown, "the module tree is empty"
    for r in shown:
        if r["key"] == "[no module]":
            continue
        path = r["key"]
        inclusive = sum(ns for key, ns in modules if key == path or key.startswith(path + "."))
        own = sum(ns for key, ns in modules if key == path)
        assert int(r["inclusive_ns"][0]) == inclusive, path
        assert int(r["self_ns"][0]) == own, path
        assert_time_shown(r["inclusive_ns"][1], inclusive)


def test_module_tree_opens_and_tables_sort(page):
    hidden = page.evaluate("() => Array.from(document.querySelectorAll('#table-module-tree tbody tr'))"
                           ".filter((tr) => tr.style.display === 'none').length")
    toggles = page.locator("#table-module-tree .toggle:text('\u25B8')")
    if hidden:
        toggles.first.click()
        after = page.evaluate("() => Array.from(document.querySelectorAll('#table-module-tree tbody tr'))"
                              ".filter((tr) => tr.style.display === 'none').length")
        assert after < hidden
    page.click("#table-operators th[data-col='kernels']")
    counts = [int(r["kernels"][0]) for r in rows(page, "table-operators", ["kernels"])]
    assert counts == sorted(counts, reverse=True)


def test_roofline_points_are_the_databases_figures(page, report):
    db, _ = report
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    expected = {
        "tensor cores": sorted((ai, g) for ai, g in con.execute(
            "SELECT arithmetic_intensity, tensor_gflops FROM operators WHERE tensor_gflops > 0 AND arithmetic_intensity > 0")),
        "FP32 CUDA cores": sorted((ai, g) for ai, g in con.execute(
            "SELECT arithmetic_intensity, fp32_gflops FROM operators WHERE fp32_gflops > 0 AND arithmetic_intensity > 0")),
    }
    assert expected["tensor cores"] and expected["FP32 CUDA cores"], "the fixture lost its FLOP counters"
    shown = page.evaluate("""() => Object.fromEntries(window.opprofCharts['chart-roofline-operators'].data.datasets
                               .map((d) => [d.label, d.data.map((p) => [p.x, p.y])]))""")
    for label, points in expected.items():
        got = sorted(tuple(p) for p in shown[label])
        assert len(got) == len(points), label
        for (x, y), (ex, ey) in zip(got, points):
            assert x == pytest.approx(ex, rel=1e-9) and y == pytest.approx(ey, rel=1e-9), label
    # The ceilings of the capture's GPU from the catalog: a DRAM slope and flat peaks.
    ceilings = [label for label in shown if "peak" in label]
    assert any(label.startswith("BF16/FP16 tensor peak 989") for label in ceilings), ceilings
    assert any(label.startswith("FP32 peak 67") for label in ceilings), ceilings


def test_a_single_process_profile_has_no_ranks_section(page):
    assert page.locator("#ranks").count() == 0
    assert page.locator("nav a[href='#ranks']").count() == 0


# A multi-process job: the 12-block GPT-2 DDP step of two gloo ranks (tests/fixtures/multiproc/README.md).
JOB = REPO / "tests" / "fixtures" / "multiproc" / "gpt2"


@pytest.fixture(scope="module")
def job_page(browser, tmp_path_factory):
    out = tmp_path_factory.mktemp("html_job")
    db, html = out / "job.db", out / "job.html"
    run_engine("attribute", "-q", "--job", JOB, "-o", db)
    run_engine("report", db, "--html", html)
    pg = open_page(browser, html)
    pg.db = db
    yield pg
    pg.close()


def test_ranks_section_shows_each_ranks_figures_from_the_database(job_page):
    assert job_page.errors == [] and job_page.requests == []
    con = sqlite3.connect(f"file:{job_page.db}?mode=ro", uri=True)
    expected = con.execute(
        "SELECT p.rank, p.pid, p.status, s.kernels, s.kernel_time_ns, s.communication_ns, s.overlap_ns, "
        "s.exposed_communication_ns, s.cpu_communication_ns, s.span_ns FROM processes p "
        "JOIN rank_summary s ON s.process_id = p.id WHERE p.status != 'idle' ORDER BY p.id").fetchall()
    assert len(expected) == 2
    cols = ["pid", "status", "kernels", "kernel_time_ns", "communication_ns", "overlapped", "exposed_communication_ns",
            "cpu_communication_ns", "span_ns"]
    shown = rows(job_page, "table-ranks", cols)
    assert [r["key"] for r in shown] == [f"rank {e[0]}" for e in expected]
    for r, (rank, pid, status, kernels, kernel_ns, comm_ns, overlap_ns, exposed_ns, cpu_ns, span_ns) in zip(shown, expected):
        assert int(r["pid"][0]) == pid and r["status"][1] == status and int(r["kernels"][0]) == kernels
        for col, ns in (("kernel_time_ns", kernel_ns), ("communication_ns", comm_ns), ("exposed_communication_ns", exposed_ns),
                        ("cpu_communication_ns", cpu_ns), ("span_ns", span_ns)):
            assert int(r[col][0]) == ns, (rank, col)
            assert_time_shown(r[col][1], ns)
        assert float(r["overlapped"][0]) == pytest.approx(overlap_ns / comm_ns, rel=1e-12)
    # torchrun's own process is named, not counted as a rank.
    assert "pid 1203" in job_page.text_content("#ranks-idle")
    assert job_page.text_content("#card-ranks .v") == "2"
    # The chart has one group per rank, each series the table's figure in ms.
    chart = job_page.evaluate("""() => { const c = window.opprofCharts['chart-ranks'];
        return {labels: c.data.labels, series: Object.fromEntries(c.data.datasets.map((d) => [d.label, d.data]))}; }""")
    assert chart["labels"] == ["rank 0", "rank 1"]
    assert chart["series"]["kernel time"] == pytest.approx([e[4] / 1e6 for e in expected], rel=1e-12)
    assert chart["series"]["CPU communication"] == pytest.approx([e[8] / 1e6 for e in expected], rel=1e-12)


def test_operators_that_differ_between_ranks_are_the_databases_rank_groups(job_page):
    con = sqlite3.connect(f"file:{job_page.db}?mode=ro", uri=True)
    ids = [i for (i,) in con.execute("SELECT id FROM processes WHERE status != 'idle' ORDER BY id")]
    cols = ["spread_ns"] + [f"process_{i}" for i in ids]
    shown = rows(job_page, "table-rank-operators", cols)
    assert shown and shown[0]["key"] == "aten::_foreach_div_"  # AdamW's division: 1.59 vs 2.81 ms
    for r in shown:
        times = [con.execute("SELECT COALESCE(SUM(time_ns), 0) FROM rank_groups WHERE group_kind = 'operator' "
                             "AND key = ? AND process_id = ?", (r["key"], i)).fetchone()[0] for i in ids]
        assert [int(r[f"process_{i}"][0]) for i in ids] == times, r["key"]
        assert int(r["spread_ns"][0]) == max(times) - min(times), r["key"]

"""`opprof optimize --html-from` rendered in headless Chromium (driven by Playwright), from the two H200 runs in
tests/fixtures/optimizer: both charts are drawn with a bar per measured state, the console shows no error, nothing
is fetched, and the trials table lists every trial of the JSON with its verdict.

Skips only as tests/python/browser.py says."""

import json

import pytest

from browser import launch, needs_browser
from report_fixtures import REPO, run_engine

FIXTURES = REPO / "tests" / "fixtures" / "optimizer"
RUNS = ("conv_exact", "lstm_tf32")

pytestmark = needs_browser


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="module", params=RUNS)
def run(request, browser, tmp_path_factory):
    """(the report's JSON, the loaded page with the console errors and outside requests it saw)."""
    report = FIXTURES / request.param / "optimize_report.json"
    html = tmp_path_factory.mktemp("optimize_html") / "optimize_report.html"
    run_engine("optimize", "--html-from", report, "-o", html)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors, requests = [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith("file:") else None)
    page.goto(html.as_uri())
    page.wait_for_selector("body[data-opprof-ready='1']", timeout=20000)
    page.errors, page.requests = errors, requests
    yield json.loads(report.read_text()), page
    page.close()


def test_no_console_errors_and_nothing_fetched(run):
    _, page = run
    assert page.errors == []
    assert page.requests == []


def test_both_charts_are_drawn_with_a_bar_per_measured_state(run):
    report, page = run
    charts = page.evaluate(
        """() => Array.from(document.querySelectorAll('canvas')).map((c) => {
             const chart = Chart.getChart(c);
             const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
             let inked = 0;
             for (let i = 3; i < px.length; i += 4) if (px[i] > 0) inked++;
             return {id: c.id, chart: !!chart && window.opprofCharts[c.id] === chart, inked: inked,
                     labels: chart ? chart.data.labels : [], values: chart ? chart.data.datasets[0].data : [],
                     plugins: chart ? chart.config.plugins.map((p) => p.id) : []};
           })""")
    assert {c["id"] for c in charts} == {"chart-kernel", "chart-wall"}
    measured = [t for t in report["trials"] if t["measured"]]
    states = [report["baseline"], *(t["measured"] for t in measured)]
    for c in charts:
        assert c["chart"] and c["inked"] > 1000, c
        assert c["labels"][0] == "baseline" and len(c["labels"]) == len(states), c
    by_id = {c["id"]: c for c in charts}
    assert by_id["chart-kernel"]["values"] == pytest.approx([s["kernel"]["ns_per_step"] / 1e3 for s in states])
    assert by_id["chart-wall"]["values"] == pytest.approx([s["wall"]["median_ms"] for s in states])
    assert "iqrWhiskers" in by_id["chart-wall"]["plugins"]


def test_the_trials_table_lists_every_trial_with_its_verdict(run):
    report, page = run
    shown = page.evaluate(
        """() => Array.from(document.querySelectorAll('#table-trials tbody tr')).map((tr) => ({
             rewrite: tr.getAttribute('data-rewrite'), verdict: tr.getAttribute('data-verdict'),
             badge: tr.querySelector('td[data-col="verdict"]').textContent,
             reason: tr.querySelector('td[data-col="reason"]').textContent}))""")
    assert [(s["rewrite"], s["verdict"], s["badge"], s["reason"]) for s in shown] == \
        [(t["rewrite"], t["verdict"], t["verdict"], t["reason"]) for t in report["trials"]]
    assert page.text_content("#applied") == "Applied: " + ", ".join(report["applied"])

"""Headless Chromium for the tests of opprof's HTML pages: Debian's chromium, driven by Playwright (which
downloads no browser of its own here). The tests skip only when chromium or Playwright is absent and
OPPROF_REQUIRE_CHROMIUM is unset or 0; `make test-python` sets it to 1, so that CI cannot skip them."""

import os
import shutil

import pytest

from report_fixtures import ENGINE

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _missing():
    if not ENGINE.is_file():
        return "build/opprof not built (make build)"
    if not CHROMIUM:
        return "chromium is not installed (scripts/install_deps.sh installs it)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (scripts/install_deps.sh installs it)"
    return None


MISSING = _missing()
if MISSING and os.environ.get("OPPROF_REQUIRE_CHROMIUM", "") not in ("", "0"):
    raise RuntimeError(f"OPPROF_REQUIRE_CHROMIUM is set but {MISSING}")
needs_browser = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


def launch(playwright):
    """The browser; --no-sandbox because CI runs as root, where Chromium refuses its sandbox."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])

"""Refresh ``docs/images/dashboard-overview.png``: the dashboard's overview in Debian's Chromium, as the browser
tests see it.

It reuses the browser tests' harness (``packages/ishiki-dashboard/tests/browser/conftest.py``, loaded by its
path): a real ``ishiki run`` on a fresh config directory with the fake model server, Chromium launched by
Playwright on ``/usr/bin/chromium``, signed in with the token. One chat turn first, so the overview has a
conversation to show. The tests never write into the repository; this one-off does, when run by hand:

    .venv/bin/python tools/screenshot_dashboard.py [--out docs/images/dashboard-overview.png]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
HARNESS = REPO / "packages" / "ishiki-dashboard" / "tests" / "browser" / "conftest.py"
OUT = REPO / "docs" / "images" / "dashboard-overview.png"


def harness() -> ModuleType:
    """The browser tests' conftest module, loaded from its file."""
    spec = importlib.util.spec_from_file_location("dashboard_browser_harness", HARNESS)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def screenshot(out: Path) -> None:
    """Start the host and the browser, sign in, chat once, and save the overview to ``out``."""
    from playwright.sync_api import expect, sync_playwright

    from ishiki_host.testing import FakeOpenAIServer, Reply

    h = harness()
    with tempfile.TemporaryDirectory(prefix="ishiki-shot-") as work, FakeOpenAIServer() as model:
        model.default = Reply(h.REPLY)
        host = h.HostProcess(h.write_host_config(Path(work) / "bot", model.base_url))
        try:
            host.wait_ready()
            with sync_playwright() as playwright:
                context = h.launch_chromium(playwright, Path(work) / "chromium-profile", host.url)
                page = context.new_page()
                h.login(page)
                page.goto("/dashboard/chat")
                page.locator("textarea[name=text], input[name=text]").first.fill("Hello!")
                page.keyboard.press("Enter")
                expect(page.get_by_text(h.REPLY).first).to_be_visible()
                page.goto("/dashboard/")
                expect(page.get_by_text(h.PROFILE, exact=True).first).to_be_visible()
                out.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(out), full_page=True)
                context.close()
        finally:
            host.stop()
    print(f"wrote {out}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: see the module's docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where to write the PNG (default {OUT})")
    args = parser.parse_args(argv)
    screenshot(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

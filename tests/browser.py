"""A real headless browser for the HTML report's tests: Debian's chromium (installed by
``scripts/install_browser.sh``, which ``scripts/setup.sh`` runs), driven by playwright
through its executable. Playwright's own browser download is not reachable from these
machines; a missing chromium fails the test (``PeerError``), never skips it."""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

from tests.peers import PeerError

# As root chromium needs --no-sandbox; the rest keeps a test's browser from reaching out
# (updates, sync, first-run pages) and from sharing a profile with another test's.
FLAGS = ("--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync")


@contextlib.contextmanager
def chromium(profile: Path) -> Iterator[object]:
    """A playwright ``Browser`` on Debian's chromium, headless, with a fresh profile in
    ``profile``."""
    from playwright.sync_api import sync_playwright

    exe = shutil.which("chromium")
    if exe is None:
        raise PeerError("chromium is not installed: run bash scripts/install_browser.sh (setup.sh runs it)")
    with sync_playwright() as p:
        # a persistent context is how playwright takes a --user-data-dir of the test's own
        context = p.chromium.launch_persistent_context(str(profile), executable_path=exe, headless=True,
                                                       args=list(FLAGS), viewport={"width": 1280, "height": 900})
        try:
            yield context
        finally:
            context.close()

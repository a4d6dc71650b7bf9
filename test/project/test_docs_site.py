"""The documentation site navigates when opened from the disk (issue 40): README says to open
build/site/index.html, and from file:// a link to a folder shows a listing, not its index.html.
So every link between pages names an .html file that the build wrote."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]
HREF = re.compile(r'(?:href|src)="([^"]*)"')


@pytest.mark.timeout(600)  # mkdocs builds the whole site first (up to 300 s under load)
def test_every_link_of_the_built_site_names_a_file_it_has(tmp_path: Path) -> None:
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", str(site)], cwd=ROOT,
                   check=True, timeout=300)
    broken = []
    for page in site.rglob("*.html"):
        if page.name == "404.html":
            continue  # a web server's error page: its links are absolute by design
        for link in HREF.findall(page.read_text(encoding="utf-8")):
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or not parts.path:
                continue  # another site, or an anchor on this page
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link}")
    assert not broken, broken[:10]
    assert (site / "getting-started.html").is_file()

"""`npu-emu bench --asv --record --publish` writes a dashboard that works without internet access
(npu_emu.cli.asv_dashboard): the CDN scripts and stylesheet of asv's pages point at copies from benchmarks/www/vendor/
with integrity hashes of those copies, and a headless Chromium that cannot resolve any host renders the grid and a
graph (the browser test runs only where a `chromium` binary exists; .ci/run installs it)."""

import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from npu_emu.cli.asv_dashboard import make_offline

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "benchmarks" / "www" / "vendor"

pytestmark = pytest.mark.skipif(not VENDOR.is_dir(), reason="needs the source checkout (benchmarks/www/vendor)")


def _asv_www():
    asv = pytest.importorskip("asv")
    www = Path(asv.__file__).parent / "www"
    if not (www / "index.html").is_file():
        pytest.skip("this asv has no www/index.html")
    return www


def _refs(html):
    return re.findall(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"[^>]*>", html)


def test_every_cdn_asset_of_asv_has_a_local_copy(tmp_path):
    www = _asv_www()
    html_dir = tmp_path / "html"
    shutil.copytree(www, html_dir)
    before = (html_dir / "index.html").read_text()
    assert any(r.startswith("https://") for r in _refs(before))       # what asv ships: CDN links
    assert make_offline(str(html_dir), str(VENDOR)) == []
    after = (html_dir / "index.html").read_text()
    for tag in re.findall(r"<(?:script|link)\b[^>]*>", after):
        ref = re.search(r"\b(?:src|href)=\"([^\"]+)\"", tag)
        if ref is None:
            continue
        assert not re.match(r"[a-z]+://|//", ref.group(1)), f"still remote: {tag}"
        local = html_dir / ref.group(1)
        sri = re.search(r'integrity="sha384-([^"]+)"', tag)
        if ref.group(1).startswith("vendor/"):              # (the others are asv's own files or publish's)
            assert local.is_file(), f"{ref.group(1)} is not in the dashboard folder"
            want = base64.b64encode(hashlib.sha384(local.read_bytes()).digest()).decode()
            assert sri is not None and sri.group(1) == want, tag
            assert "crossorigin" not in tag
    # running it again (a second publish) gives the same page
    assert make_offline(str(html_dir), str(VENDOR)) == []
    assert (html_dir / "index.html").read_text() == after


def test_an_unknown_cdn_url_is_reported_and_left_alone(tmp_path):
    (tmp_path / "index.html").write_text('<script src="https://cdn.example/lib/other.js"></script>\n')
    assert make_offline(str(tmp_path), str(VENDOR)) == ["https://cdn.example/lib/other.js"]
    assert "https://cdn.example/lib/other.js" in (tmp_path / "index.html").read_text()


# ---- the browser test --------------------------------------------------------------------------------------------

_BENCH = '''
class Sweep:
    params = ([1, 2], ["a", "b"])
    param_names = ["n", "mode"]

    def time_sum(self, n, mode):
        sum(range(1000 * n))

    def track_ratio(self, n, mode):
        return 1.0 + n / 10
'''


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run(cmd, cwd, timeout=600):
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _published_dashboard(tmp_path):
    """A one-benchmark asv project, recorded twice (two commits) and published with npu-emu's offline step."""
    proj = tmp_path / "proj"
    (proj / "benchmarks").mkdir(parents=True)
    (proj / "benchmarks" / "__init__.py").write_text("")
    (proj / "benchmarks" / "bench_demo.py").write_text(_BENCH)
    conf = {"version": 1, "project": "demo", "repo": ".", "branches": ["HEAD"], "environment_type": "virtualenv",
            "benchmark_dir": "benchmarks", "env_dir": ".asv/env", "results_dir": ".asv/results",
            "html_dir": ".asv/html"}
    (proj / "asv.conf.json").write_text(json.dumps(conf))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    _run(["git", "init", "-q"], proj)
    asv = [sys.executable, "-m", "asv"]
    _run(asv + ["machine", "--yes", "--machine", "box"], proj)
    for i in range(2):
        (proj / "version.txt").write_text(str(i))
        _run(git + ["add", "-A"], proj)
        _run(git + ["commit", "-q", "-m", f"c{i}"], proj)
        head = _run(["git", "rev-parse", "HEAD"], proj).strip()
        _run(asv + ["run", "--python=same", "--quick", f"--set-commit-hash={head}", "--machine", "box"], proj)
    _run(asv + ["publish"], proj)
    html = proj / ".asv" / "html"
    shutil.copytree(html, tmp_path / "as_published")      # asv's own page, for the control below
    assert make_offline(str(html), str(VENDOR)) == []
    return html


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def _serve(folder):
    handler = lambda *a, **k: _Quiet(*a, directory=str(folder), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _browse(chromium, url, out_png, tmp_path):
    """(DOM after the page's scripts ran, screenshot path) in a headless Chromium that resolves no host name
    but 127.0.0.1: a CDN reference would fail as it does on an offline machine."""
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--no-first-run", "--hide-scrollbars", f"--user-data-dir={tmp_path / 'chromium-profile'}",
              "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--virtual-time-budget=15000",
              "--window-size=1280,900"]
    dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True, timeout=300).stdout
    subprocess.run(common + [f"--screenshot={out_png}", url], capture_output=True, text=True, timeout=300)
    return dom


@pytest.mark.skipif(_chromium() is None, reason="no chromium here (apt-get install chromium); .ci/run installs it")
def test_published_dashboard_renders_offline(tmp_path):
    chromium = _chromium()
    html = _published_dashboard(tmp_path)
    index = (html / "index.html").read_text()
    assert not [r for r in _refs(index) if "://" in r]
    server = _serve(html)
    shots = Path(os.environ.get("NPU_EMU_SCREENSHOT_DIR", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/index.html"
        grid = _browse(chromium, base, shots / "asv_grid.png", tmp_path)
        assert "continental origin of swallow" not in grid
        # the summary grid: one tile per benchmark, each with its plot
        assert "bench_demo.Sweep.time_sum" in grid and "bench_demo.Sweep.track_ratio" in grid
        graph = _browse(chromium, base + "#bench_demo.Sweep.time_sum", shots / "asv_graph.png", tmp_path)
        assert "continental origin of swallow" not in graph
        assert "flot-base" in graph                      # flot drew its canvas: the graph is there
        assert "n" in graph and "mode" in graph          # the parameter selectors of the graph page
    finally:
        server.shutdown()
    # control: asv's page as published, in the same offline browser, does not render (so the checks above can fail)
    server = _serve(tmp_path / "as_published")
    try:
        raw = _browse(chromium, f"http://127.0.0.1:{server.server_address[1]}/index.html", tmp_path / "raw.png",
                      tmp_path)
        assert "continental origin of swallow" in raw and "bench_demo.Sweep.time_sum" not in raw
    finally:
        server.shutdown()
    for png in ("asv_grid.png", "asv_graph.png"):
        data = (shots / png).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000, f"{png}: {len(data)} bytes, a blank page?"

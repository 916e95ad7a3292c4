"""The asv dashboard without internet access: ``npu-emu bench --asv --record --publish`` calls :func:`make_offline`
after ``asv publish``.

asv 0.6's index.html loads jQuery, flot (and its time, selection, categories and orderBars plugins), stupidtable,
blueimp-md5 and Bootstrap from public CDNs; offline (as on most Ascend clusters) the page shows only asv's
"Can not determine continental origin of swallow". The same libraries, from their npm packages, sit in
benchmarks/www/vendor/ (benchmarks/www/README.md lists package, version and licence); this copies them next to
the dashboard and points every CDN ``<script>`` / ``<link>`` at the copy, with a new ``integrity`` hash of the
file served. A CDN URL that has no local copy is left alone and reported.
"""

import base64
import hashlib
import os
import re
import shutil

# CDN URL (as in asv 0.6.x's index.html) -> file under benchmarks/www/vendor/, matched by the URL's file name
# and library, so that asv's minor version changes of a CDN path still find the copy.
LOCAL = {
    "jquery": "js/jquery.min.js",
    "jquery.flot.min.js": "js/jquery.flot.js",
    "jquery.flot.time.min.js": "js/jquery.flot.time.js",
    "jquery.flot.selection.min.js": "js/jquery.flot.selection.js",
    "jquery.flot.categories.min.js": "js/jquery.flot.categories.js",
    "jquery.flot.orderBars.js": "js/jquery.flot.orderBars.js",
    "stupidtable.min.js": "js/stupidtable.min.js",
    "md5.min.js": "js/md5.min.js",
    "bootstrap.min.js": "js/bootstrap.min.js",
    "bootstrap.min.css": "css/bootstrap.min.css",
}

_TAG = re.compile(r"<(script|link)\b[^>]*?\b(src|href)=\"(https?://[^\"]+)\"[^>]*>", re.I)
_DROP = re.compile(r"\s+(integrity|crossorigin|referrerpolicy)=\"[^\"]*\"", re.I)


def _local_name(url):
    base = url.rsplit("/", 1)[-1]
    if re.fullmatch(r"jquery-[\d.]+(\.min)?\.js", base):
        return LOCAL["jquery"]
    return LOCAL.get(base)


def _sri(path):
    digest = hashlib.sha384(open(path, "rb").read()).digest()
    return "sha384-" + base64.b64encode(digest).decode()


def make_offline(html_dir, vendor_dir, prefix="vendor"):
    """Copy ``vendor_dir`` to ``html_dir/prefix`` and rewrite the CDN references of every .html file of
    ``html_dir`` to it. Returns the CDN URLs left as they were (no local copy); [] when the page is self-contained."""
    dest = os.path.join(html_dir, prefix)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    shutil.copytree(vendor_dir, dest, ignore=shutil.ignore_patterns("licenses"))
    missing = []
    for name in sorted(os.listdir(html_dir)):
        if not name.endswith(".html"):
            continue
        path = os.path.join(html_dir, name)
        text = open(path, encoding="utf-8").read()

        def swap(m):
            url = m.group(3)
            local = _local_name(url)
            if local is None:
                missing.append(url)
                return m.group(0)
            tag = _DROP.sub("", m.group(0)).replace(url, f"{prefix}/{local}")
            sri = _sri(os.path.join(dest, local))
            return tag[:-1].rstrip("/ ") + f' integrity="{sri}"' + (" />" if tag.endswith("/>") else ">")

        new = _TAG.sub(swap, text)
        if new != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    return sorted(set(missing))

#!/usr/bin/env python3
"""Make a published asv dashboard work offline: local copies of the JavaScript and CSS it loads from CDNs.

``asv publish`` writes an index.html whose <script>/<link> tags load jQuery, flot and friends from
code.jquery.com, cdnjs and jsDelivr. This script fetches the same libraries as npm packages (``npm pack``, an
ordinary registry client; the tarballs' sha512 is pinned below and checked), unpacks the needed files into
``<html_dir>/vendor/``, rewrites the tags to point there (dropping the CDN's ``integrity``/``crossorigin``
attributes, which describe the CDN's bytes) and then checks that no page of the dashboard still loads anything
from another host. Nothing third-party is committed to the repository: the tarballs live in a cache directory
outside the repository (``~/.cache/mpt-engine/asv-assets``, see :func:`default_cache_dir`), so only the first run
on a machine needs the npm registry and every later one, from any clone, is offline; the copies live only in the
published HTML directory.

What it replaces (asv 0.6's index.html; any other remote <script>/<link> is an error, naming the URL to add):

    https://code.jquery.com/jquery-3.3.1.min.js                    npm jquery@3.3.1            dist/jquery.min.js
    https://cdnjs.cloudflare.com/.../flot/0.8.3/jquery.flot.min.js  npm flot@0.8.3            jquery.flot.js
      ... jquery.flot.time.min.js, .selection.min.js, .categories.min.js (same package, unminified files)
    https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js
                                                                   npm flot-orderbars@1.0.0   js/jquery.flot.orderBars.js
    https://cdnjs.cloudflare.com/.../stupidtable/1.0.1/stupidtable.min.js
                                                                   npm stupid-table-plugin@1.1.3  stupidtable.min.js
      (1.0.1 was never published to npm; 1.1.x keeps the ``$(table).stupidtable()`` call asv makes)
    https://cdnjs.cloudflare.com/.../blueimp-md5/2.19.0/js/md5.min.js  npm blueimp-md5@2.19.0  js/md5.min.js
    https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js    npm bootstrap@3.1.1
    https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css  (plus dist/fonts/*, which the CSS
                                                                              loads from ../fonts/)

Usage: ``python asv_bench/offline_assets.py HTML_DIR [--cache-dir DIR]``; ``--list`` prints the table above
from the data below; ``--fetch`` only fills the cache (CI does this before the dashboard test, which never
fetches anything itself and skips while the cache is incomplete). Python standard library only; needs ``npm`` unless the cache already holds the tarballs
(copy them there by hand on a machine without npm).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

VENDOR = "vendor"


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    integrity: str  # the registry's dist.integrity of the tarball (sha512)

    @property
    def spec(self) -> str:
        return "%s@%s" % (self.name, self.version)

    @property
    def tarball(self) -> str:
        return "%s-%s.tgz" % (self.name, self.version)

    @property
    def dirname(self) -> str:
        return "%s-%s" % (self.name, self.version)


JQUERY = Package("jquery", "3.3.1",
                 "sha512-Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93lR6nPXyUFwzN3ZSOQI0wRJNdGg==")
FLOT = Package("flot", "0.8.3",
               "sha512-xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ==")
ORDERBARS = Package("flot-orderbars", "1.0.0",
                    "sha512-Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA==")
STUPIDTABLE = Package("stupid-table-plugin", "1.1.3",
                      "sha512-2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSOGvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg==")
MD5 = Package("blueimp-md5", "2.19.0",
              "sha512-DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLpr+GZV8rHG8tK766FGYBwRbu8pELTt+w==")
BOOTSTRAP = Package("bootstrap", "3.1.1",
                    "sha512-TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5tiu+Ie2iBLrzEG34t4Rf465cigqg==")

_CDNJS = "https://cdnjs.cloudflare.com/ajax/libs/"
_JSDELIVR = "https://cdn.jsdelivr.net/npm/"

REPLACEMENTS: Dict[str, Tuple[Package, str]] = {
    # CDN URL in asv's index.html -> (npm package, file inside the package)
    "https://code.jquery.com/jquery-3.3.1.min.js": (JQUERY, "dist/jquery.min.js"),
    _CDNJS + "flot/0.8.3/jquery.flot.min.js": (FLOT, "jquery.flot.js"),
    _CDNJS + "flot/0.8.3/jquery.flot.time.min.js": (FLOT, "jquery.flot.time.js"),
    _CDNJS + "flot/0.8.3/jquery.flot.selection.min.js": (FLOT, "jquery.flot.selection.js"),
    _CDNJS + "flot/0.8.3/jquery.flot.categories.min.js": (FLOT, "jquery.flot.categories.js"),
    _JSDELIVR + "flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": (ORDERBARS, "js/jquery.flot.orderBars.js"),
    _CDNJS + "stupidtable/1.0.1/stupidtable.min.js": (STUPIDTABLE, "stupidtable.min.js"),
    _CDNJS + "blueimp-md5/2.19.0/js/md5.min.js": (MD5, "js/md5.min.js"),
    _JSDELIVR + "bootstrap@3.1.1/dist/js/bootstrap.min.js": (BOOTSTRAP, "dist/js/bootstrap.min.js"),
    _JSDELIVR + "bootstrap@3.1.1/dist/css/bootstrap.min.css": (BOOTSTRAP, "dist/css/bootstrap.min.css"),
}

# Files that a replaced file loads in turn (relative URLs inside it), copied along at the same relative place.
COMPANIONS: Dict[Tuple[str, str], List[str]] = {
    (BOOTSTRAP.name, "dist/css/bootstrap.min.css"): [
        "dist/fonts/glyphicons-halflings-regular.eot",
        "dist/fonts/glyphicons-halflings-regular.svg",
        "dist/fonts/glyphicons-halflings-regular.ttf",
        "dist/fonts/glyphicons-halflings-regular.woff",
    ],
}

# Attributes that describe the CDN's copy (subresource integrity) or cross-origin fetching: meaningless locally.
_DROP_ATTRS = re.compile(r'\s+(?:integrity|crossorigin|referrerpolicy)(?:\s*=\s*(?:"[^"]*"|\'[^\']*\'|[^\s>]+))?',
                         re.I)
_TAG = re.compile(r"<(script|link)\b[^>]*>", re.I)
_URL_ATTR = re.compile(r'\b(src|href)\s*=\s*("([^"]*)"|\'([^\']*)\')', re.I)
_REMOTE = re.compile(r"^(?:https?:)?//", re.I)


class OfflineError(RuntimeError):
    pass


# ---------------------------------------------------------------------------------------------------------------
# Fetching
# ---------------------------------------------------------------------------------------------------------------

def _sri(path: str) -> str:
    h = hashlib.sha512()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return "sha512-" + base64.b64encode(h.digest()).decode()


PACKAGES: List[Package] = sorted({package for package, _ in REPLACEMENTS.values()}, key=lambda p: p.name)


def missing_tarballs(cache_dir: str) -> List[str]:
    """The tarballs the dashboard needs that cache_dir lacks (no registry is asked)."""
    return [p.tarball for p in PACKAGES if not os.path.isfile(os.path.join(cache_dir, p.tarball))]


def fetch(packages: Sequence[Package], cache_dir: str, npm: str = "npm") -> Dict[str, str]:
    """Path of each package's tarball in cache_dir (npm pack'ed when missing), its sha512 checked."""
    os.makedirs(cache_dir, exist_ok=True)
    missing = [p for p in packages if not os.path.exists(os.path.join(cache_dir, p.tarball))]
    if missing:
        if shutil.which(npm) is None:
            raise OfflineError("npm is not installed and %s lacks %s (the first run on a machine fetches the "
                               "dashboard's JavaScript/CSS from the npm registry; later runs use this cache)"
                               % (cache_dir, ", ".join(p.tarball for p in missing)))
        with tempfile.TemporaryDirectory(prefix="npm-pack-") as tmp:
            cmd = [npm, "pack", "--silent", "--ignore-scripts"] + [p.spec for p in missing]
            print("offline_assets: %s" % " ".join(cmd), file=sys.stderr)
            # cwd=tmp: npm pack writes the tarballs into the working directory.
            try:
                subprocess.run(cmd, cwd=tmp, check=True, stdout=subprocess.DEVNULL)
            except subprocess.CalledProcessError as e:
                raise OfflineError("`%s` failed (exit %d): the first run on a machine needs the npm registry for "
                                   "the dashboard's JavaScript/CSS; later runs use %s offline"
                                   % (" ".join(cmd), e.returncode, cache_dir)) from e
            for p in missing:
                shutil.move(os.path.join(tmp, p.tarball), os.path.join(cache_dir, p.tarball))
    paths = {}
    for p in packages:
        path = os.path.join(cache_dir, p.tarball)
        got = _sri(path)
        if got != p.integrity:
            raise OfflineError("%s: sha512 mismatch (got %s, want %s); delete it to fetch it again" % (path, got, p.integrity))
        paths[p.name] = path
    return paths


def _extract(tarball: str, member: str, dest: str) -> None:
    with tarfile.open(tarball, "r:gz") as tar:
        try:
            info = tar.getmember("package/" + member)
        except KeyError:
            raise OfflineError("%s has no %s" % (os.path.basename(tarball), member)) from None
        if not info.isfile():
            raise OfflineError("%s: %s is not a regular file" % (tarball, member))
        src = tar.extractfile(info)
        assert src is not None
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as out:
            shutil.copyfileobj(src, out)


def local_path(package: Package, member: str) -> str:
    """Where a package file goes, relative to the HTML directory (URL form)."""
    return "%s/%s/%s" % (VENDOR, package.dirname, member)


# ---------------------------------------------------------------------------------------------------------------
# Rewriting and checking
# ---------------------------------------------------------------------------------------------------------------

def remote_references(html: str) -> List[str]:
    """URLs on other hosts that the page's <script src> and <link href> tags load (anchors are not loads)."""
    found = []
    for tag in _TAG.finditer(html):
        for m in _URL_ATTR.finditer(tag.group(0)):
            url = m.group(3) if m.group(3) is not None else m.group(4)
            if _REMOTE.match(url):
                found.append(url)
    return found


def rewrite_html(html: str) -> Tuple[str, List[Tuple[str, str]]]:
    """html with every known CDN <script>/<link> pointed at its local copy; (new html, [(cdn url, local)])."""
    done: List[Tuple[str, str]] = []
    unknown: List[str] = []

    def fix_tag(tag_match: "re.Match[str]") -> str:
        tag = tag_match.group(0)
        for m in _URL_ATTR.finditer(tag):
            url = m.group(3) if m.group(3) is not None else m.group(4)
            if not _REMOTE.match(url):
                continue
            key = "https:" + url if url.startswith("//") else url
            if key not in REPLACEMENTS:
                unknown.append(url)
                return tag
            package, member = REPLACEMENTS[key]
            local = local_path(package, member)
            done.append((url, local))
            tag = tag[:m.start()] + '%s="%s"' % (m.group(1), local) + tag[m.end():]
            return _DROP_ATTRS.sub("", tag)
        return tag

    out = _TAG.sub(fix_tag, html)
    if unknown:
        raise OfflineError("no local copy known for %s: add it to REPLACEMENTS in %s"
                           % (", ".join(unknown), os.path.basename(__file__)))
    return out, done


_CSS_REMOTE = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])((?:https?:)?//[^'")\s]+)""", re.I)


def check_offline(html_dir: str) -> List[str]:
    """Remote loads left anywhere in the published pages and stylesheets (empty when the dashboard is offline)."""
    problems = []
    for dirpath, _dirs, files in os.walk(html_dir):
        for name in files:
            path = os.path.join(dirpath, name)
            if name.endswith((".html", ".htm")):
                with open(path, encoding="utf-8", errors="replace") as f:
                    urls = remote_references(f.read())
            elif name.endswith(".css"):
                with open(path, encoding="utf-8", errors="replace") as f:
                    urls = _CSS_REMOTE.findall(f.read())
            else:
                continue
            problems += ["%s: %s" % (os.path.relpath(path, html_dir), u) for u in urls]
    return problems


def make_offline(html_dir: str, cache_dir: str, npm: str = "npm") -> List[Tuple[str, str]]:
    """Vendor the assets into html_dir and rewrite its pages; returns the (cdn url, local path) replaced."""
    pages = []
    for dirpath, _dirs, files in os.walk(html_dir):
        if os.path.relpath(dirpath, html_dir).split(os.sep)[0] == VENDOR:
            continue
        pages += [os.path.join(dirpath, n) for n in files if n.endswith((".html", ".htm"))]
    if not pages:
        raise OfflineError("no HTML page in %s (run `asv publish` first)" % html_dir)

    wanted = sorted({pkg for pkg, _ in REPLACEMENTS.values()}, key=lambda p: p.name)
    tarballs = fetch(wanted, cache_dir, npm)
    shutil.rmtree(os.path.join(html_dir, VENDOR), ignore_errors=True)
    manifest = {}
    for package, member in REPLACEMENTS.values():
        for m in [member] + COMPANIONS.get((package.name, member), []):
            local = local_path(package, m)
            _extract(tarballs[package.name], m, os.path.join(html_dir, *local.split("/")))
        manifest[package.spec] = {"tarball_integrity": package.integrity}

    replaced: List[Tuple[str, str]] = []
    for page in pages:
        with open(page, encoding="utf-8") as f:
            html = f.read()
        new, done = rewrite_html(html)
        # Pages below html_dir (none in asv 0.6) need the vendor path relative to themselves.
        rel = os.path.relpath(os.path.dirname(page), html_dir)
        depth = 0 if rel == os.curdir else len(rel.split(os.sep))
        if depth:
            for _url, local in done:
                new = new.replace('"%s"' % local, '"%s%s"' % ("../" * depth, local))
        if new != html:
            with open(page, "w", encoding="utf-8") as f:
                f.write(new)
        replaced += done

    with open(os.path.join(html_dir, VENDOR, "MANIFEST.json"), "w") as f:
        json.dump({"replaced": sorted(set(replaced)), "packages": manifest}, f, indent=1)
    problems = check_offline(html_dir)
    if problems:
        raise OfflineError("remote loads left in the dashboard:\n  " + "\n  ".join(problems))
    return replaced


def _table() -> str:
    lines = []
    for url, (package, member) in REPLACEMENTS.items():
        lines.append("%s\n    -> npm %s  %s  =>  %s" % (url, package.spec, member, local_path(package, member)))
        for extra in COMPANIONS.get((package.name, member), []):
            lines.append("    +  %s  =>  %s" % (extra, local_path(package, extra)))
    return "\n".join(lines)


def default_cache_dir() -> str:
    """Where the npm tarballs are kept: outside the repository, so that a fresh clone (or ``git clean``) still
    finds them and only the very first run on a machine needs the npm registry. MPT_ASV_ASSETS_CACHE overrides
    it; else ``$XDG_CACHE_HOME/mpt-engine/asv-assets`` (``~/.cache/...`` by default)."""
    explicit = os.environ.get("MPT_ASV_ASSETS_CACHE")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mpt-engine", "asv-assets")


def main(argv: Sequence[str] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("html_dir", nargs="?", help="the directory `asv publish` wrote")
    ap.add_argument("--cache-dir", default=default_cache_dir(),
                    help="where the npm tarballs are kept (default: $MPT_ASV_ASSETS_CACHE, else "
                         "$XDG_CACHE_HOME/mpt-engine/asv-assets, i.e. ~/.cache/mpt-engine/asv-assets)")
    ap.add_argument("--npm", default="npm", help="the npm executable")
    ap.add_argument("--list", action="store_true", help="print what is replaced by what, and exit")
    ap.add_argument("--fetch", action="store_true",
                    help="only fill the cache (npm pack what it lacks, check every sha512), and exit")
    args = ap.parse_args(argv)
    if args.list:
        print(_table())
        return 0
    if args.fetch:
        try:
            fetch(PACKAGES, args.cache_dir, args.npm)
        except (OfflineError, subprocess.CalledProcessError) as e:
            print("offline_assets: error: %s" % e, file=sys.stderr)
            return 1
        print("offline_assets: the dashboard's assets are in %s" % args.cache_dir, file=sys.stderr)
        return 0
    if not args.html_dir:
        ap.error("html_dir is required")
    try:
        replaced = make_offline(args.html_dir, args.cache_dir, args.npm)
    except (OfflineError, subprocess.CalledProcessError) as e:
        print("offline_assets: error: %s" % e, file=sys.stderr)
        return 1
    print("offline_assets: %d tags now load local copies from %s/%s/" % (len(replaced), args.html_dir, VENDOR),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

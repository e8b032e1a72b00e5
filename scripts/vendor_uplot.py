"""Refresh the dashboard's vendored charting library (uPlot), pinned by version and digest.

Run by a maintainer, never on a user's machine: ``python scripts/vendor_uplot.py``.
It asks npm's own client for the package's tarball (``npm pack``), checks the
tarball against the pinned sha512, and copies the minified script, its
stylesheet and its licence into the package's static files, which are
committed and shipped in the wheel. To move to a new version, change both
pins (``npm view uplot@VERSION dist.integrity`` gives the digest).
"""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "1.6.32"
INTEGRITY = "sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="  # noqa: E501
#: Tarball member -> the file it becomes under the vendor folder.
FILES = {
    "package/dist/uPlot.iife.min.js": "uPlot.iife.min.js",
    "package/dist/uPlot.min.css": "uPlot.min.css",
    "package/LICENSE": "uPlot.LICENSE",
}
VENDOR = Path(__file__).resolve().parent.parent / "coscheduler" / "dashboard" / "static" / "vendor"


def main() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        subprocess.run(
            ["npm", "pack", f"uplot@{VERSION}", "--pack-destination", scratch],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        tarball = next(Path(scratch).glob("*.tgz"))
        digest = (
            "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
        )
        if digest != INTEGRITY:
            sys.exit(f"uplot {VERSION}: digest {digest} is not the pinned {INTEGRITY}")
        with tarfile.open(tarball) as archive:
            for member, target in FILES.items():
                source = archive.extractfile(member)
                if source is None:
                    sys.exit(f"uplot {VERSION}: {member} missing from the tarball")
                (VENDOR / target).write_bytes(source.read())
    (VENDOR / "VERSION").write_text(f"uplot {VERSION} {INTEGRITY}\n")
    print(f"uplot {VERSION} vendored into {VENDOR}")


if __name__ == "__main__":
    main()

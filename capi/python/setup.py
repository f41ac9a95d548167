"""The build step of pydablooms that pyproject.toml cannot declare: build
libdablooms.so from the Go module (go build -buildmode=c-shared ./capi) into
the package, and tag the wheel for this platform, since it holds a native
library (it does not depend on the Python version: ctypes loads it).

Needs Go (1.25 or newer) and a C compiler on PATH, and the repository around
this directory: build from a clone, "pip install ./capi/python".
"""

import os
import shutil
import subprocess

NEEDS = (
    "pydablooms: building it needs setuptools (61 or newer) and, with setuptools "
    "older than 70.1, wheel. Where the package index is reachable, pip installs "
    "them itself: run pip install ./capi/python without --no-build-isolation. "
    "Offline, install them from the system (Debian: apt-get install "
    "python3-setuptools python3-wheel), then in a venv made with "
    "--system-site-packages: pip install --no-build-isolation ./capi/python "
    "(README.md, From Python)")

try:
    from setuptools import setup
    from setuptools.command.build_py import build_py
    from setuptools.dist import Distribution
except ImportError as e:
    raise SystemExit("%s; missing: %s" % (NEEDS, e.name))

try:
    from setuptools.command.bdist_wheel import bdist_wheel  # setuptools >= 70.1
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        raise SystemExit("%s; missing: wheel (this setuptools is older than 70.1)" % NEEDS)

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "module github.com/dablooms/dablooms"


def module_root():
    """The directory of the Go module this directory belongs to."""
    d = HERE
    while True:
        try:
            with open(os.path.join(d, "go.mod")) as f:
                if f.readline().strip() == MODULE:
                    return d
        except OSError:
            pass
        parent = os.path.dirname(d)
        if parent == d:
            raise SystemExit(
                "pydablooms: the Go module github.com/dablooms/dablooms is not around %s: "
                "build pydablooms from a clone of the repository (pip install ./capi/python)" % HERE)
        d = parent


class BuildWithLibrary(build_py):
    """build_py, then libdablooms.so into the built package."""

    def run(self):
        super().run()
        go = shutil.which("go")
        if go is None:
            raise SystemExit("pydablooms: building it needs Go on PATH (https://go.dev/dl/) and a C compiler")
        out = os.path.join(os.path.abspath(self.build_lib), "pydablooms", "libdablooms.so")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        env = dict(os.environ, CGO_ENABLED="1")
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./capi"]
        self.announce("running %s" % " ".join(cmd), level=2)
        subprocess.run(cmd, cwd=module_root(), env=env, check=True)
        # cgo's generated header is not the API (capi/dablooms.h is): not shipped.
        header = os.path.splitext(out)[0] + ".h"
        if os.path.exists(header):
            os.remove(header)


class PlatformWheel(bdist_wheel):
    """A wheel for any Python 3 on this platform: the library is native, the
    module pure Python."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, plat = super().get_tag()
        return "py3", "none", plat


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True  # installed into platlib, like any package with a native part


setup(cmdclass={"build_py": BuildWithLibrary, "bdist_wheel": PlatformWheel}, distclass=BinaryDistribution)

"""pydablooms's build backend: setuptools's own (setuptools.build_meta), or,
where setuptools is missing, an error that says what to install (pip's own
says only that the backend cannot be imported)."""

try:
    from setuptools.build_meta import *  # noqa: F401,F403
    from setuptools.build_meta import __all__  # noqa: F401
except ImportError as e:
    raise ImportError(
        "pydablooms: building it needs setuptools (61 or newer) and, with setuptools "
        "older than 70.1, wheel (missing: %s). Where the package index is reachable, "
        "pip installs them itself: run pip install ./capi/python without "
        "--no-build-isolation. Offline, install them from the system (Debian: apt-get "
        "install python3-setuptools python3-wheel), then in a venv made with "
        "--system-site-packages: pip install --no-build-isolation ./capi/python "
        "(README.md, From Python)" % e.name, name=e.name) from None

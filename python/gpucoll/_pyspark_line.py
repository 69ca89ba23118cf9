"""The PySpark lines this package is built and tested for, and a warning on any other."""

import warnings

# The Spark lines of the jar (README's compatibility table; CompatibilityTableTest keeps them equal).
SUPPORTED = ("3.5", "4.0", "4.1", "4.2")


def installed_pyspark():
    """PySpark's version as installed in this environment, or None (not installed, or on PYTHONPATH only)."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # Python < 3.8
        return None
    try:
        return version("pyspark")
    except PackageNotFoundError:
        return None


def check(found=None):
    """Warns when the PySpark found is of a line outside SUPPORTED; returns whether it is supported."""
    found = installed_pyspark() if found is None else found
    if found is None:
        return True
    line = ".".join(found.split(".")[:2])
    if line in SUPPORTED:
        return True
    warnings.warn("gpucoll supports PySpark %s; this environment has PySpark %s. Install a supported one, e.g. "
                  "pip install 'gpucoll[spark]' (PySpark %s)" % (", ".join(SUPPORTED), found, SUPPORTED[-1]),
                  stacklevel=3)
    return False

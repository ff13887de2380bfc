"""The version of mpt: the one place it is written.

``mpt.__version__``, the distribution's metadata (pyproject.toml reads this file through setuptools' dynamic
``attr:`` without importing the package) and the header of ``python -m mpt.bench`` all come from here.
Bump it together with a new heading in CHANGELOG.md (tests/test_packaging.py checks that they agree).
"""

__version__ = "0.1.0"

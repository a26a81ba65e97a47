"""rp1's version, in a module of its own that imports nothing: the package's ``rp1.__version__``,
what ``rp1 --version`` prints and a run's ``environment.json`` records."""

__version__ = "0.2.0"

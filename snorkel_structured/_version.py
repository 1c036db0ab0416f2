"""The library's version, in a leaf module that imports nothing.

``snorkel_structured.__version__`` re-exports it; internal modules that stamp files
with the version (``_persistence``) read it here, so that they never import the
package's ``__init__`` (an upward import from a low layer).
"""

__version__ = "0.1.0"

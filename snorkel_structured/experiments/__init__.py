"""Reproduction of the paper's experiments (``snorkel-structured reproduce ...``).

Uses only the public API; nothing in the library imports this package.
"""

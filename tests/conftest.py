"""Shared pytest setup."""

# Registers the hypothesis profiles used by tests/test_fuzz.py before pytest reads
# --hypothesis-profile (e.g. pytest tests/test_fuzz.py --hypothesis-profile=long).
import fuzz_strategies  # noqa: F401

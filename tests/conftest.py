"""Shared pytest setup."""

# Registers the hypothesis profiles used by tests/differential/test_fuzz.py before pytest reads
# --hypothesis-profile (e.g. pytest tests/differential/test_fuzz.py --hypothesis-profile=long).
import fuzz_strategies  # noqa: F401

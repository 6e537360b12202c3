"""The worker's confinement, now ``tcopy_cli.process.confine``; this name stays for older imports."""

from tcopy_cli.process.confine import Confinement, available, confine, missing

__all__ = ["Confinement", "available", "confine", "missing"]

"""``python -m tcopy_cli``."""

from tcopy_cli.cli import main

if __name__ == "__main__":
    main()

"""``python -m benchmarks ...``: every benchmark command (see ``python -m benchmarks --help``)."""

from benchmarks.cli import main

if __name__ == "__main__":
    main()

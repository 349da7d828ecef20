"""``python -m servegate``."""

from servegate.cli import main

main()

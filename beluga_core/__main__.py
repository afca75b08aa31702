"""``python -m beluga_core`` is ``beluga``."""

from beluga_core.cli.app import main

main()

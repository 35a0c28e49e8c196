"""``python -m zpi_host`` is the ``zpi-host`` command."""

from .cli import main

raise SystemExit(main())

"""``python -m kafkette``: the same CLI as the ``kafkette`` console script."""

from kafkette.cli import main

raise SystemExit(main())

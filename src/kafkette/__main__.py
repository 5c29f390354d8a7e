"""``python -m kafkette``: the same CLI as the ``kafkette`` console script."""

from kafkette.command import main

raise SystemExit(main())

"""`python -m jobs`: see `jobs.cli`."""

from jobs.cli import main

raise SystemExit(main())

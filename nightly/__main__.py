"""`python -m nightly`: see `nightly.cli`."""

from nightly.cli import main

raise SystemExit(main())

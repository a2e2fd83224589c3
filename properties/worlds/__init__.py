"""The first stage: what an example is. World specs (`specs`), the strategies that draw them, the
worlds built from them (`world`), fault plans, and the corners a world can be aimed at. Imports only
the root modules (`properties.config`, `impl`, `tolerance`, `behaviours`)."""

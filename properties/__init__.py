"""The property suite: strategies, the side-by-side harness, the checks, the properties P1-P10.
Hand-built cases import from `properties.api`; old module names still import for one release
(`properties.moved`)."""

from properties.moved import install

install()

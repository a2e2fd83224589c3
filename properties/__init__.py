"""Hypothesis strategies, the side-by-side harness, the comparator and the properties P1-P8."""

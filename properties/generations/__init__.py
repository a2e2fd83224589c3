"""Whole generations (P9): two engines side by side, their checks, oracle and reports."""

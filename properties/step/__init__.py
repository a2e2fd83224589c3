"""The single-step properties P1-P8 and the step's regression cases."""

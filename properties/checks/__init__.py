"""The comparators: worlds, calls, logs, the replay oracle, what a step may not change."""

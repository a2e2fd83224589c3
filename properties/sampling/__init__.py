"""The oracles of samplers with their own randomness: the distribution oracle (`test_distribution`),
its statistic (`statistics`), its draws (`draws`), its rows (`rows`), and the measurements of its
power (`power`) and false-alarm rate (`false_alarms`)."""

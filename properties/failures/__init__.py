"""The fourth stage: what a failure leaves. The report a person acts on (`report`), the replay file
and its command (`replay`), and promotion of a failure to a permanent regression case (`promote`,
`regression_files`). Imports the root, `worlds`, `sides` and `checks`."""

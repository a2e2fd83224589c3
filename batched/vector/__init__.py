"""The fully batched step: step, model, sampling, passes, attention."""

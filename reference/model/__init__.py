"""The tiny hybrid MTP model: paged attention, a recurrent layer with slots and checkpoints, and a
DeepSeek-V3-style drafter with its own paged KV."""

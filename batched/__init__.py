"""The batched MTP bootstrap step and the batched model operations it calls."""

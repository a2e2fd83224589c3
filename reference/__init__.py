"""The per-sequence MTP bootstrap step and the world it runs in: the specification.

Nothing here imports `batched` or `properties`.
"""

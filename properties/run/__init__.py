"""The last stage: how the suite runs. The pytest plugin and its options (`plugin`), the verification
job (`verify`) and its summary (`summary_plugin`), one property's examples spread over pytest cases
and workers (`shards`, `shard_budget`), the example database, fresh processes and GPU pinning,
stopping a child's process group (`stopping`) and the generated blocks of the docs (`doc_blocks`).
Imports every earlier stage."""

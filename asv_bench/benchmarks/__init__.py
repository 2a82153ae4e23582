"""asv benchmarks for nbgrad (see ../asv.conf.json and docs/benchmarks.md)."""

"""asv benchmarks for nbgrad (see ../asv.conf.json).  Each benchmark is parametrised by library
("nbgrad", and "torch" when PyTorch is importable) so asv reports both side by side."""

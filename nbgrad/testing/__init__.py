"""``nbgrad.testing``: ``assert_close`` (torch.testing's), and the test support shared by
nbgrad's own tests (the op table ``op_db``, numeric checks, the fuzzer)."""

from ._compare import assert_close

__all__ = ["assert_close"]

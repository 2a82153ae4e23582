"""nbgrad.testing.assert_close: torch.testing.assert_close's rules and messages."""

import math

import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.testing import assert_close

CASES = [
    ([1.0, 2.0], [1.0, 2.1], {}),
    ([1.0, 2.0], [1.0, 2.0 + 1e-7], {}),
    ([1.0, math.nan], [1.0, math.nan], {}),
    ([1.0, math.nan], [1.0, math.nan], {"equal_nan": True}),
    ([1.0, 2.0], [1.0, 2.5], {"rtol": 0.0, "atol": 0.6}),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 5.0]], {}),
]


@pytest.mark.parametrize("a,b,kw", CASES)
def test_close_and_not_close(a, b, kw):
    x, y = nbgrad.tensor(a), nbgrad.tensor(b)
    import numpy as np

    with np.errstate(invalid="ignore"):
        expect_ok = bool(
            np.isclose(
                a,
                b,
                rtol=kw.get("rtol", 1.3e-6),
                atol=kw.get("atol", 1e-5),
                equal_nan=kw.get("equal_nan", False),
            ).all()
        )
    if expect_ok:
        assert_close(x, y, **kw)
    else:
        with pytest.raises(AssertionError, match="Tensor-likes are not close!"):
            assert_close(x, y, **kw)


def test_shape_dtype_and_scalars():
    with pytest.raises(AssertionError, match="attribute 'shape' do not match"):
        assert_close(nbgrad.ones(2), nbgrad.ones(3))
    with pytest.raises(AssertionError, match="attribute 'dtype' do not match"):
        assert_close(nbgrad.ones(2), nbgrad.ones(2, dtype=nbgrad.int64))
    assert_close(nbgrad.ones(2), nbgrad.ones(2, dtype=nbgrad.int64), check_dtype=False)
    with pytest.raises(AssertionError, match="Scalars are not close!"):
        assert_close(1.0, 1.1)
    assert_close([nbgrad.ones(2), {"a": 1.0}], [nbgrad.ones(2), {"a": 1.0}])
    with pytest.raises(AssertionError, match="custom"):
        assert_close(nbgrad.ones(1), nbgrad.zeros(1), msg="custom")
    with pytest.raises(ValueError, match="Both 'rtol' and 'atol'"):
        assert_close(nbgrad.ones(1), nbgrad.ones(1), rtol=0.1)


@needs_torch
@pytest.mark.parametrize("a,b,kw", CASES)
def test_messages_match_torch(a, b, kw):
    def message(lib):
        try:
            (assert_close if lib is nbgrad else torch.testing.assert_close)(
                lib.tensor(a, dtype=lib.float64), lib.tensor(b, dtype=lib.float64), **kw
            )
        except AssertionError as e:
            return str(e)
        return None

    assert message(nbgrad) == message(torch)

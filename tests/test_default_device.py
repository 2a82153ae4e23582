"""set_default_device / get_default_device / is_inference at the top level (PyTorch's)."""

import pytest

import nbgrad


@pytest.fixture(autouse=True)
def _restore():
    yield
    nbgrad.set_default_device(None)


def test_default_device_round_trip():
    assert str(nbgrad.get_default_device()) == "cpu"
    nbgrad.set_default_device("cpu")
    assert nbgrad.get_default_device() == nbgrad.device("cpu")
    assert nbgrad.zeros(2).device == nbgrad.device("cpu")
    nbgrad.set_default_device(None)
    assert str(nbgrad.get_default_device()) == "cpu"


def test_bad_default_device():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        nbgrad.set_default_device("foo")


@pytest.mark.skipif(nbgrad.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_default_fails_at_creation_without_a_gpu():
    nbgrad.set_default_device("cuda")  # allowed, as in PyTorch: creating a tensor is what fails
    with pytest.raises(RuntimeError, match="CUDA"):
        nbgrad.zeros(2)


def test_is_inference():
    assert not nbgrad.is_inference(nbgrad.ones(1))
    with nbgrad.inference_mode():
        x = nbgrad.ones(1)
    assert nbgrad.is_inference(x)

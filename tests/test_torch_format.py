"""PyTorch checkpoints: nbgrad.load reads torch.save's zip format under torch.load(weights_only=
True)'s rules, nbgrad.save(format="torch") writes what torch.load reads; hostile files raise and
never run code or allocate what they claim.  Also safetensors (nbgrad.utils.safetensors)."""

import collections
import io
import pickle
import struct
import zipfile

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad import _torch_format as tf, nn

DTYPES = ["float16", "float32", "float64", "complex64", "complex128"]
DTYPES += ["int8", "int16", "int32", "int64", "uint8", "bool"]


def to_torch_file(obj):
    buf = io.BytesIO()
    nbgrad.save(obj, buf, format="torch")
    return buf.getvalue()


def load_bytes(raw, **kw):
    return nbgrad.load(io.BytesIO(raw), **kw)


def make_zip(pkl, records=(), prefix="archive/", compress=zipfile.ZIP_STORED):
    """A torch.save-shaped archive from a hand-made data.pkl (for hostile files)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compress) as zf:
        zf.writestr(prefix + "data.pkl", pkl)
        zf.writestr(prefix + "byteorder", b"little")
        for name, data in records:
            zf.writestr(prefix + name, data)
        zf.writestr(prefix + "version", b"3\n")
    return buf.getvalue()


def pkl_of(raw):
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        names = zf.namelist()
        return zf.read([n for n in names if n.endswith("data.pkl")][0]), [
            (n.split("/", 1)[1], zf.read(n)) for n in names if "/data/" in n
        ]


# ------------------------------------------------------------------------------------------
# round trips within nbgrad (no PyTorch needed)


@pytest.mark.parametrize("dtype", DTYPES)
def test_roundtrip_every_dtype(dtype):
    x = nbgrad.tensor([[1, 0], [3, 4]]).to(getattr(nbgrad, dtype))
    y = load_bytes(to_torch_file({"x": x}))["x"]
    assert y.dtype == x.dtype and y.tolist() == x.tolist() and y.stride() == x.stride()


def test_roundtrip_objects():
    b = nbgrad.arange(12.0).reshape(3, 4)
    p = nn.Parameter(nbgrad.ones(2))
    obj = {
        "base": b,
        "view": b.t()[1:],
        "expanded": nbgrad.ones(3).expand(2, 3),
        "empty": nbgrad.zeros(0, 3),
        "scalar": nbgrad.tensor(2.5, requires_grad=True),
        "param": p,
        "frozen": nn.Parameter(nbgrad.ones(1), requires_grad=False),
        "again": p,
        "od": collections.OrderedDict(a=1),
        "misc": [None, True, -7, 2**70, 1.5, float("nan"), 1 + 2j, "s", b"\x00\xff", (1,)],
        "more": (bytearray(b"xy"), {3, 4}, nbgrad.float16, nbgrad.device("cpu")),
        "size": nbgrad.Size([2, 3]),
        "ints": {1: "one", (2, 3): "pair"},
    }
    obj["od"]._metadata = {"": {"version": 1}}
    r = load_bytes(to_torch_file(obj))
    assert r.keys() == obj.keys()
    r["base"][0, 1] = 99.0  # views saved together share their storage, as torch.load's
    assert r["view"][0, 0].item() == 99.0
    assert r["view"].stride() == (1, 4) and r["expanded"].stride() == (0, 1)
    assert r["empty"].shape == (0, 3) and r["scalar"].requires_grad and r["scalar"].dim() == 0
    assert type(r["param"]) is nn.Parameter and r["param"].requires_grad
    assert r["param"] is r["again"] and not r["frozen"].requires_grad
    assert type(r["od"]) is collections.OrderedDict and r["od"]._metadata == {"": {"version": 1}}
    misc = r["misc"]
    assert misc[:5] == [None, True, -7, 2**70, 1.5] and misc[5] != misc[5]
    assert misc[6:] == [1 + 2j, "s", b"\x00\xff", (1,)]
    assert r["more"] == (bytearray(b"xy"), {3, 4}, nbgrad.float16, nbgrad.device("cpu"))
    assert type(r["size"]) is nbgrad.Size and r["size"] == (2, 3)
    assert r["ints"] == {1: "one", (2, 3): "pair"}


def test_unsupported_objects_are_refused_before_writing(tmp_path):
    for bad in (np.ones(2), object(), frozenset([1]), np.float64(1.0)):
        with pytest.raises(TypeError, match="cannot save an object of type"):
            nbgrad.save({"x": bad}, tmp_path / "f.pt", format="torch")
    with pytest.raises(ValueError, match="format must be"):
        nbgrad.save({}, io.BytesIO(), format="pickle")


def test_records_are_aligned_like_torch_saves():
    raw = to_torch_file({"a": nbgrad.ones(3), "b": nbgrad.zeros(5, dtype=nbgrad.int8)})
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        names = zf.namelist()
        assert names[0] == "archive/data.pkl" and "archive/byteorder" in names
        for info in zf.infolist():
            h = info.header_offset
            n, e = struct.unpack("<HH", raw[h + 26 : h + 30])
            assert (h + 30 + n + e) % 64 == 0, info.filename


def test_load_never_uses_pickle(monkeypatch):
    raw = to_torch_file({"w": nbgrad.ones(2), "n": [1, 2.0, "x"]})

    def boom(*a, **k):
        raise AssertionError("pickle used during load")

    for name in ("loads", "load", "Unpickler", "_Unpickler"):
        monkeypatch.setattr(pickle, name, boom)
    assert load_bytes(raw)["n"] == [1, 2.0, "x"]


def test_non_seekable_streams():
    raw = to_torch_file({"w": nbgrad.arange(3.0)})

    class Pipe(io.RawIOBase):
        def __init__(self, data):
            self.src = io.BytesIO(data)

        def readable(self):
            return True

        def readinto(self, b):
            return self.src.readinto(b)

    assert nbgrad.load(Pipe(raw))["w"].tolist() == [0.0, 1.0, 2.0]


# ------------------------------------------------------------------------------------------
# against PyTorch


def torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.Flatten(), torch.nn.Linear(8, 3)
    )


def nbgrad_model():
    return nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.Flatten(), nn.Linear(8, 3))


@needs_torch
def test_a_pytorch_state_dict_loads_into_an_nbgrad_model(tmp_path):
    tm = torch_model()
    tm(torch.randn(4, 1, 4, 4))  # running stats move
    tm.eval()
    torch.save(tm.state_dict(), tmp_path / "m.pt")
    sd = nbgrad.load(tmp_path / "m.pt")
    assert type(sd) is collections.OrderedDict and list(sd) == list(tm.state_dict())
    assert sd._metadata == tm.state_dict()._metadata
    for k, v in tm.state_dict().items():
        assert str(sd[k].dtype).split(".")[1] == str(v.dtype).split(".")[1]
        np.testing.assert_array_equal(sd[k].numpy(), v.numpy())
    m = nbgrad_model()
    m.load_state_dict(sd)
    m.eval()
    x = np.random.default_rng(0).standard_normal((2, 1, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(
        m(nbgrad.tensor(x)).detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5
    )


@needs_torch
def test_pytorch_objects_load_as_torch_load_gives_them(tmp_path):
    b = torch.arange(6.0).reshape(2, 3)
    obj = {
        "view": b.t(),
        "base": b,
        "param": torch.nn.Parameter(torch.ones(2)),
        "rg": torch.ones(2, requires_grad=True),
        "size": torch.Size([2, 3]),
        "dtype": torch.float16,
        "device": torch.device("cpu"),
        "misc": [b"ab", {1, 2}, 1 + 2j, 2**70, -1.5, (1,), bytearray(b"q")],
        "expanded": torch.ones(3).expand(2, 3),
        "strided": torch.arange(10.0)[1::3],
        "empty": torch.zeros(0, 3),
        "counter": collections.Counter("aab"),
    }
    for d in DTYPES:
        obj[d] = torch.tensor([[1, 0], [2, 3]]).to(getattr(torch, d))
    torch.save(obj, tmp_path / "o.pt")
    ours, theirs = nbgrad.load(tmp_path / "o.pt"), torch.load(tmp_path / "o.pt")
    for k, v in theirs.items():
        o = ours[k]
        if isinstance(v, torch.Tensor):
            assert type(o).__name__ == type(v).__name__, k
            assert o.tolist() == v.tolist() and o.stride() == v.stride(), k
            assert str(o.dtype).split(".")[1] == str(v.dtype).split(".")[1], k
            assert o.requires_grad == v.requires_grad, k
        elif isinstance(v, torch.dtype):
            assert o is nbgrad.float16
        elif isinstance(v, torch.device):
            assert o == nbgrad.device("cpu")
        else:
            assert o == v and type(o).__name__ == type(v).__name__, k
    ours["base"][1, 1] = 50.0  # the view and its base share one storage, as in torch.load
    assert ours["view"][1, 1].item() == 50.0


@needs_torch
def test_torch_reads_what_nbgrad_writes(tmp_path):
    b = nbgrad.arange(6.0).reshape(2, 3)
    m = nbgrad_model()
    obj = {
        "sd": m.state_dict(),
        "base": b,
        "view": b.t()[1:],
        "expanded": nbgrad.ones(3).expand(2, 3),
        "param": nn.Parameter(nbgrad.ones(2)),
        "rg": nbgrad.ones(2, requires_grad=True),
        "misc": [b"ab", b"", {1, 2}, 1 + 2j, 2**70, (1, 2, 3, 4), bytearray(b"z"), None],
        "size": nbgrad.Size([4]),
        "dtypes": [nbgrad.float32, nbgrad.int64, nbgrad.bool],
        "device": nbgrad.device("cpu"),
        "empty": nbgrad.zeros(0, 2),
        "zero-d": nbgrad.tensor(7),
    }
    for d in DTYPES:
        obj[d] = nbgrad.tensor([[1, 0], [2, 3]]).to(getattr(nbgrad, d))
    nbgrad.save(obj, tmp_path / "n.pt", format="torch")
    for mmap in (False, True):
        t = torch.load(tmp_path / "n.pt", weights_only=True, mmap=mmap)
        assert t.keys() == obj.keys()
        for k, v in obj.items():
            tv = t[k]
            if isinstance(v, nbgrad.Tensor):
                assert type(tv).__name__ == type(v).__name__, k
                assert tv.tolist() == v.tolist() and tv.stride() == v.stride(), k
                assert str(tv.dtype).split(".")[1] == str(v.dtype).split(".")[1], k
                assert tv.requires_grad == v.requires_grad, k
        assert t["misc"] == obj["misc"] and t["size"] == torch.Size([4])
        assert t["dtypes"] == [torch.float32, torch.int64, torch.bool]
        assert t["device"] == torch.device("cpu")
        assert getattr(t["sd"], "_metadata", None) == getattr(m.state_dict(), "_metadata", None)
        t["base"][1, 1] = 42.0  # one storage for the view and its base, as torch.save writes
        assert t["view"][0, 1].item() == 42.0
        tm = torch_model()
        tm.load_state_dict(t["sd"])  # a whole state dict goes into the PyTorch model


def mlp(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(
        lib.nn.Flatten(), lib.nn.Linear(16, 8), lib.nn.Tanh(), lib.nn.Linear(8, 3)
    )


@needs_torch
def test_optimizer_state_crosses_over(tmp_path):
    m = mlp(nbgrad)
    opt = nbgrad.optim.Adam(m.parameters(), lr=0.01)
    x = np.random.default_rng(1).standard_normal((4, 1, 4, 4)).astype(np.float32)
    m(nbgrad.tensor(x)).pow(2).sum().backward()
    opt.step()
    ck = {"model": m.state_dict(), "opt": opt.state_dict()}
    nbgrad.save(ck, tmp_path / "c.pt", format="torch")
    ck = torch.load(tmp_path / "c.pt", weights_only=True)
    tm = mlp(torch)
    tm.load_state_dict(ck["model"])
    topt = torch.optim.Adam(tm.parameters(), lr=0.01)
    topt.load_state_dict(ck["opt"])
    for model, o, xx in ((m, opt, nbgrad.tensor(x)), (tm, topt, torch.tensor(x))):
        o.zero_grad()
        model(xx).pow(2).sum().backward()
        o.step()  # the second step uses the first's moments, saved and loaded
    for a, b in zip(m.parameters(), tm.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    back = nbgrad.load(tmp_path / "c.pt")  # and nbgrad reads its own torch-format file
    opt2 = nbgrad.optim.Adam(mlp(nbgrad).parameters(), lr=0.01)
    opt2.load_state_dict(back["opt"])
    assert opt2.state_dict()["param_groups"] == opt.state_dict()["param_groups"]


@needs_torch
def test_map_location(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "w.pt")
    p = tmp_path / "w.pt"
    assert nbgrad.load(p, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert nbgrad.load(p, map_location=nbgrad.device("cpu"))["w"].tolist() == [1.0, 1.0]
    seen = []
    r = nbgrad.load(p, map_location=lambda t, loc: seen.append(loc))
    assert seen == ["cpu"] and r["w"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="CUDA"):
        nbgrad.load(p, map_location="cuda")
    # a checkpoint saved on a GPU: PyTorch's error without map_location, fine with one
    pkl, records = pkl_of(to_torch_file({"w": nbgrad.ones(2)}))
    raw = make_zip(pkl.replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0"), records)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        load_bytes(raw)
    assert load_bytes(raw, map_location="cpu")["w"].tolist() == [1.0, 1.0]
    assert load_bytes(raw, map_location={"cuda:0": "cpu"})["w"].tolist() == [1.0, 1.0]


@needs_torch
def test_what_pytorch_weights_only_refuses_is_refused(tmp_path):
    cases = {
        "numpy": np.ones(2),
        "bfloat16": torch.zeros(2, dtype=torch.bfloat16),
        "module": torch.nn.Linear(2, 2),
        "sparse": torch.eye(2).to_sparse(),
    }
    for name, obj in cases.items():
        torch.save({"x": obj}, tmp_path / (name + ".pt"))
        with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
            nbgrad.load(tmp_path / (name + ".pt"))


@needs_torch
def test_a_torchscript_archive_says_so(tmp_path):
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 2)), tmp_path / "ts.pt")
    with pytest.raises(RuntimeError, match="TorchScript"):
        nbgrad.load(tmp_path / "ts.pt")


# ------------------------------------------------------------------------------------------
# hostile files: they raise, and nothing runs or is allocated as they claim


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        import os

        return (os.system, ("touch %s" % self.marker,))


def test_a_pickle_calling_os_system_is_refused(tmp_path):
    marker = tmp_path / "pwned"
    for proto in (2, 4, 5):
        raw = make_zip(pickle.dumps({"w": _Evil(str(marker))}, protocol=proto))
        with pytest.raises(pickle.UnpicklingError, match=r"GLOBAL (posix|os)\.system"):
            load_bytes(raw)
    assert not marker.exists()


@pytest.mark.parametrize(
    "pkl, match",
    [
        (b"\x80\x02c__builtin__\neval\nX\x01\x00\x00\x001\x85R.", "builtins.eval"),
        (b"\x80\x02c__builtin__\ngetattr\n.", "builtins.getattr"),
        (b"\x80\x02cnbgrad.serialization\nsave\n.", "nbgrad.serialization.save"),
        (b"\x80\x02ctorch._utils\n_rebuild_sparse_tensor\n.", "not supported by nbgrad"),
        (b"\x80\x02ccollections\nOrderedDict\n)R}b.", None),  # BUILD of an OrderedDict: fine
        (b"\x80\x02}X\x01\x00\x00\x00a}b.", "Can only build"),  # BUILD on a dict
        (b"\x80\x02(X\x01\x00\x00\x00aK\x01u.", "can only set items"),
        (b"\x80\x02K\x01K\x02a.", "can only append to lists"),
        (b"\x80\x02X\xff\xff\xff\x7fab.", "truncated"),  # a 2 GB string in a tiny file
        (b"\x80\x02h\x05.", "memo key 5"),
        (b"\x80\x02r\xff\xff\xff\xffN.", "stack is empty"),
        (b"\x80\x02NNr\xff\xff\xff\xff.", "malformed pickle"),
        (b"\x80\x02I1\n.", "Unsupported operand 73"),  # text protocol INT
        (b"\x80\x02(X\x01\x00\x00\x00aX\x01\x00\x00\x00bi\n.", "Unsupported operand"),  # INST
        (b"\x80\x02\x82\x01.", "Unsupported operand"),  # EXT1
        (b"\x80\x02NNQ.", "not a storage"),
        (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n(K\x01K\x00)))\x89NtR.", "storage is int"),
        (b"\x80\x02ctorch\nTensor\n)R.", "calling Tensor directly"),
        (b"\x80\x02c_codecs\nencode\nX\x01\x00\x00\x00aX\x05\x00\x00\x00rot13\x86R.", "rot13"),
        (b"\x80\x02c__builtin__\nbytearray\nJ\x00\x00\x00\x7f\x85R.", "bytearray"),
        (b"\x80\x02c__builtin__\nset\nN\x85R.", "set of NoneType"),
        (b"\x80\x02ctorch\nbfloat16\n.", "dtype nbgrad does not have"),
        (b"\x80\x02", "truncated"),
        (b"\x80\x02}]K\x01s.", "unhashable"),  # a list as a dict key
        (b"\x80\x02ccollections\nOrderedDict\nK\x05\x85R.", "OrderedDict of"),
        (b"\x80\x02X\x02\x00\x00\x00\xff\xfe.", "malformed pickle"),  # bad UTF-8
    ],
)
def test_hostile_pickles(pkl, match):
    raw = make_zip(pkl)
    if match is None:
        assert isinstance(load_bytes(raw), collections.OrderedDict)
        return
    with pytest.raises(pickle.UnpicklingError, match=match):
        load_bytes(raw)


def storage_pickle(numel, size, stride=(1,), offset=0):
    """data.pkl of one float tensor over storage '0' (for forged geometry)."""
    w = tf._Pickler()
    w.glob("torch._utils", "_rebuild_tensor_v2")
    w.op(b"((")
    w.save("storage")
    w.glob("torch", "FloatStorage")
    for v in ("0", "cpu", numel):
        w.save(v)
    w.op(b"tQ")
    for v in (offset, tuple(size), tuple(stride), False):
        w.save(v)
    w.ordered_dict()
    w.op(b"tR.")
    return bytes(w.out)


def test_forged_lengths_never_allocate():
    four = np.arange(4, dtype=np.float32).tobytes()
    ok = make_zip(storage_pickle(4, (4,)), [("data/0", four)])
    assert load_bytes(ok).tolist() == [0.0, 1.0, 2.0, 3.0]
    huge = make_zip(storage_pickle(2**60, (4,)), [("data/0", four)])
    with pytest.raises(RuntimeError, match="more than the file holds"):
        load_bytes(huge)
    claims = make_zip(storage_pickle(8, (4,)), [("data/0", four)])
    with pytest.raises(RuntimeError, match="holds 16 bytes, expected 32"):
        load_bytes(claims)
    past = make_zip(storage_pickle(4, (5,)), [("data/0", four)])
    with pytest.raises(RuntimeError, match="reaches past its storage"):
        load_bytes(past)
    strided = make_zip(storage_pickle(4, (2,), stride=(3,), offset=1), [("data/0", four)])
    with pytest.raises(RuntimeError, match="reaches past its storage"):
        load_bytes(strided)
    missing = make_zip(storage_pickle(4, (4,)))
    with pytest.raises(RuntimeError, match="'data/0' is missing"):
        load_bytes(missing)
    deflated = make_zip(storage_pickle(4, (4,)), [("data/0", four)], compress=zipfile.ZIP_DEFLATED)
    with pytest.raises(RuntimeError, match="compressed"):
        load_bytes(deflated)
    negative = make_zip(storage_pickle(4, (2,), stride=(-1,), offset=3), [("data/0", four)])
    with pytest.raises(pickle.UnpicklingError, match="malformed tensor stride"):
        load_bytes(negative)


def test_a_forged_zip_size_is_not_allocated():
    four = np.arange(4, dtype=np.float32).tobytes()
    raw = bytearray(make_zip(storage_pickle(4, (4,)), [("data/0", four)]))
    cd = raw.rfind(b"archive/data/0") - 46  # its central-directory entry claims 1 GiB
    assert raw[cd : cd + 4] == b"PK\x01\x02"
    struct.pack_into("<II", raw, cd + 20, 2**30, 2**30)
    with pytest.raises(RuntimeError, match="holds 1073741824 bytes, expected 16"):
        load_bytes(bytes(raw))


def test_truncated_and_corrupted_files_raise():
    raw = to_torch_file({"w": nbgrad.arange(20.0), "n": [1, 2]})
    for cut in list(range(0, len(raw), 37)) + [len(raw) - 1]:
        with pytest.raises((RuntimeError, pickle.UnpicklingError)):
            load_bytes(raw[:cut])
    data_at = raw.find(np.arange(20.0, dtype=np.float32).tobytes())
    bad = bytearray(raw)
    bad[data_at + 5] ^= 0xFF
    with pytest.raises(RuntimeError, match="(?i)crc|corrupted"):
        load_bytes(bytes(bad))


def test_not_a_checkpoint():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", b"hi")
    with pytest.raises(RuntimeError, match="not a PyTorch checkpoint"):
        load_bytes(buf.getvalue())


# ------------------------------------------------------------------------------------------
# safetensors


def test_safetensors_roundtrip(tmp_path):
    pytest.importorskip("safetensors")
    from nbgrad.utils import safetensors as st

    m = nbgrad_model()
    sd = dict(m.state_dict())
    extra = {d: nbgrad.tensor([1, 0]).to(getattr(nbgrad, d)) for d in DTYPES if d != "complex128"}
    st.save_file({**sd, **extra}, tmp_path / "m.safetensors", metadata={"epoch": "3"})
    back = st.load_file(tmp_path / "m.safetensors")
    for k, v in {**sd, **extra}.items():
        assert back[k].dtype == v.dtype and back[k].tolist() == v.tolist(), k
        assert back[k].numpy().flags.writeable
    back["0.weight"].add_(1.0)  # loaded tensors own their memory
    m2 = nbgrad_model()
    m2.load_state_dict({k: back[k] for k in sd} | {"0.weight": sd["0.weight"]})
    data = st.save({"x": nbgrad.ones(2, requires_grad=True)})
    assert st.load(data)["x"].tolist() == [1.0, 1.0]


def test_safetensors_refuses_what_safetensors_torch_refuses(tmp_path):
    pytest.importorskip("safetensors")
    from nbgrad.utils import safetensors as st

    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        st.save({"t": nbgrad.ones(2, 3).t()})
    b = nbgrad.ones(4)
    with pytest.raises(RuntimeError, match="Some tensors share memory"):
        st.save({"a": b, "v": b[:2]})
    with pytest.raises(ValueError, match="Expected a dict"):
        st.save([nbgrad.ones(1)])
    with pytest.raises(ValueError, match="Key `x` is invalid"):
        st.save({"x": np.ones(2)})


@needs_torch
def test_safetensors_with_pytorch(tmp_path):
    pytest.importorskip("safetensors")
    import safetensors.torch as stt

    from nbgrad.utils import safetensors as st

    tm = torch_model()
    stt.save_file(tm.state_dict(), tmp_path / "t.safetensors")
    ours = st.load_file(tmp_path / "t.safetensors")
    for k, v in tm.state_dict().items():
        np.testing.assert_array_equal(ours[k].numpy(), v.numpy())
    st.save_file(ours, tmp_path / "n.safetensors")
    theirs = stt.load_file(tmp_path / "n.safetensors")
    assert all(torch.equal(theirs[k], v) for k, v in tm.state_dict().items())
    stt.save_file({"x": torch.zeros(2, dtype=torch.bfloat16)}, tmp_path / "bf.safetensors")
    with pytest.raises(TypeError, match="dtype nbgrad does not have"):
        st.load_file(tmp_path / "bf.safetensors")


def test_mutated_pickles_raise_only_clear_errors():
    """Random byte changes in data.pkl (zip CRCs recomputed): a result or a clear error
    (UnpicklingError / RuntimeError), never another exception type."""
    b = nbgrad.arange(6.0).reshape(2, 3)
    src = {"sd": collections.OrderedDict(w=b, v=b.t()), "p": nn.Parameter(nbgrad.ones(2))}
    src["misc"] = [1, 2.5, "x", b"y", {1}, 1j, (1, 2), 2**80, nbgrad.Size([2])]
    pkl, records = pkl_of(to_torch_file(src))
    rng = np.random.default_rng(0)
    for _ in range(400):
        bad = bytearray(pkl)
        for _ in range(rng.integers(1, 4)):
            bad[rng.integers(2, len(bad))] = rng.integers(0, 256)
        try:
            load_bytes(make_zip(bytes(bad), records))
        except (pickle.UnpicklingError, RuntimeError):
            pass

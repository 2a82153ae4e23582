#!/usr/bin/env python
"""Train a character-level LSTM language model on a text that ships with Python (offline).

The default text is the Zen of Python (the ``this`` module, decoded); ``--text docs`` uses the
docstrings of a few standard-library modules instead.  Embedding -> LSTM -> Linear,
cross-entropy on the next character over random windows, Adam with gradient clipping.  Prints
the loss per epoch and a sample; ``--backend torch`` runs the same program on PyTorch (the same
initial weights, batches and sampling draws, all from numpy seeds), so the loss curves can be
compared.

    python scripts/train_char_lm.py                  # nbgrad, about a minute on 2 cores
    python scripts/train_char_lm.py --backend torch  # the same on PyTorch
"""

import os

# one BLAS/OpenMP thread for both libraries unless the environment says otherwise: the GEMMs
# here are small, and on a busy 2-core machine extra BLAS threads spin-wait (10x slower steps)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import codecs  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def zen():
    with contextlib.redirect_stdout(io.StringIO()):  # `import this` prints the Zen
        import this
    return codecs.decode(this.s, "rot13")


def stdlib_docs():
    import collections
    import functools
    import itertools
    import string
    import textwrap

    parts = []
    for mod in (string, textwrap, functools, itertools, collections):
        parts.append(mod.__doc__ or "")
        for name in sorted(dir(mod)):
            doc = getattr(getattr(mod, name), "__doc__", None)
            if isinstance(doc, str) and not name.startswith("_"):
                parts.append(doc)
    return "\n\n".join(parts)


class CharLM:
    """Embedding(V, E) -> LSTM(E, H, layers) -> Linear(H, V), built with library ``T``."""

    def __init__(self, T, vocab, emb, hidden, layers):
        nn = T.nn
        self.T = T
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)
        self.modules = {"embed": self.embed, "lstm": self.lstm, "head": self.head}

    def parameters(self):
        return [p for m in self.modules.values() for p in m.parameters()]

    def named_shapes(self):
        return [
            (k + "." + n, tuple(p.shape))
            for k, m in self.modules.items()
            for n, p in m.named_parameters()
        ]

    def load_numpy(self, arrays):
        """Set every parameter from ``{name: float32 array}`` (the same numbers for both
        libraries)."""
        for k, m in self.modules.items():
            m.load_state_dict(
                {n: self.T.tensor(arrays[k + "." + n]) for n, _ in m.named_parameters()}
            )

    def __call__(self, x, state=None):
        out, state = self.lstm(self.embed(x), state)
        return self.head(out), state


def init_arrays(shapes, hidden, seed):
    """PyTorch's default initialisation, drawn from numpy: N(0, 1) embeddings, U(+-1/sqrt(H))
    for the LSTM, U(+-1/sqrt(fan_in)) for the output layer."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, shape in shapes:
        if name.startswith("embed"):
            a = rng.standard_normal(shape)
        else:  # the LSTM's hidden size is also the output layer's fan-in
            bound = 1 / math.sqrt(hidden)
            a = rng.uniform(-bound, bound, shape)
        out[name] = a.astype(np.float32)
    return out


def sample(T, model, stoi, itos, prompt, n, temperature, rng):
    """Generate ``n`` characters after ``prompt`` (draws from ``rng``: the same for both
    libraries)."""
    with T.no_grad():
        x = T.tensor([[stoi[c] for c in prompt]])
        logits, state = model(x)
        out = []
        for _ in range(n):
            p = T.softmax(logits[0, -1] / temperature, 0).numpy().astype(np.float64)
            c = int(rng.choice(len(p), p=p / p.sum()))
            out.append(itos[c])
            logits, state = model(T.tensor([[c]]), state)
    return prompt + "".join(out)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="nbgrad", choices=["nbgrad", "torch"])
    p.add_argument("--text", default="zen", choices=["zen", "docs"])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batches", type=int, default=30, help="batches per epoch")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--embed", type=int, default=32)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=1)
    p.add_argument("--lr", type=float, default=5e-3)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--sample", type=int, default=200, help="characters to sample at the end")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    T = importlib.import_module(args.backend)
    if args.backend == "torch":
        T.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    text = zen() if args.text == "zen" else stdlib_docs()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = np.array([stoi[c] for c in text], dtype=np.int64)
    V = len(chars)
    print(
        "%s %s | text: %s, %d characters, vocabulary %d | LSTM %d x %d, %d batches of %d x %d "
        "per epoch"
        % (
            args.backend,
            T.__version__,
            args.text,
            len(text),
            V,
            args.layers,
            args.hidden,
            args.batches,
            args.batch_size,
            args.seq_len,
        )
    )

    T.manual_seed(args.seed)
    model = CharLM(T, V, args.embed, args.hidden, args.layers)
    model.load_numpy(init_arrays(model.named_shapes(), args.hidden, args.seed))
    opt = T.optim.Adam(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed + 1)
    L = args.seq_len
    print("%5s %10s %8s %8s" % ("epoch", "loss", "bpc", "time s"))
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        total = 0.0
        for _ in range(args.batches):
            offs = rng.integers(0, len(data) - L - 1, args.batch_size)
            window = np.stack([data[o : o + L + 1] for o in offs])
            x, y = T.tensor(window[:, :-1]), T.tensor(window[:, 1:])
            logits, _ = model(x)
            loss = T.nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            T.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            total += loss.item()
        mean = total / args.batches
        print(
            "%5d %10.4f %8.3f %8.2f" % (epoch, mean, mean / math.log(2), time.perf_counter() - t0)
        )
    print("trained in %.1f s" % (time.perf_counter() - start))
    if args.sample:
        prompt = text[: min(10, len(text))]
        out = sample(T, model, stoi, chars, prompt, args.sample, 0.8, np.random.default_rng(7))
        print("sample (temperature 0.8):\n" + out)


if __name__ == "__main__":
    main()

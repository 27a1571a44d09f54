"""PyTorch twin of chapter 2's TinyGPT, timed the same way as `ch02::benchmark_training`.

Same architecture (pre-LayerNorm GPT-2 blocks with biases, materialised causal attention,
tanh GELU, final LayerNorm, untied head without bias), same batch (8 x 128 random bytes),
AdamW with PyTorch's defaults and lr 3e-4, three warm-up steps before timing.
Prints one line per timed repetition: `<mode> <tokens/s>`.
"""

import argparse
import math
import time

import torch
from torch import nn
from torch.nn import functional as F

VOCAB, BLOCK, D_MODEL, HEADS, LAYERS, MLP = 256, 128, 128, 4, 4, 4
BATCH = 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = nn.LayerNorm(D_MODEL)
        self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = nn.LayerNorm(D_MODEL)
        self.fc = nn.Linear(D_MODEL, MLP * D_MODEL)
        self.fc2 = nn.Linear(MLP * D_MODEL, D_MODEL)
        mask = torch.tril(torch.ones(BLOCK, BLOCK, dtype=torch.bool))
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        hd = d // HEADS
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, HEADS, hd).transpose(1, 2) for z in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        scores = scores.masked_fill(~self.mask[:t, :t], float("-inf"))
        y = F.softmax(scores, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TinyGpt(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, D_MODEL)
        self.wpe = nn.Embedding(BLOCK, D_MODEL)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.lnf = nn.LayerNorm(D_MODEL)
        self.head = nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe(torch.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


def tokens_per_second(model, optimizer, tokens, targets, steps):
    def step():
        optimizer.zero_grad(set_to_none=True)
        model(tokens, targets).backward()
        optimizer.step()

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * tokens.numel() / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(torch.get_num_threads())  # PyTorch's default: one per core
    torch.manual_seed(0)
    tokens = torch.randint(VOCAB, (BATCH, BLOCK))
    targets = torch.roll(tokens, -1, dims=1)
    eager = TinyGpt()
    compiled_model = TinyGpt()
    compiled_model.load_state_dict(eager.state_dict())
    compiled = torch.compile(compiled_model)
    runs = [
        ("eager", eager, torch.optim.AdamW(eager.parameters(), lr=3e-4)),
        ("compiled", compiled, torch.optim.AdamW(compiled_model.parameters(), lr=3e-4)),
    ]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", flush=True)
    for _ in range(args.repeats):
        for name, model, optimizer in runs:
            rate = tokens_per_second(model, optimizer, tokens, targets, args.steps)
            print(f"{name} {rate:.0f}", flush=True)


if __name__ == "__main__":
    main()

# builtins on tensors: len, list, sum, max, abs, float, int, round, sorted
import torch

t = torch.tensor([3.0, -1.0, 2.0])
n = len(t)
parts = list(t)
total = sum(parts)
biggest = max(t)
absolute = abs(t)
neg = -t
f = float(t[0])
i = int(t[2])
r = round(t.mean().item(), 3)
ordered = sorted(t.tolist())
inverted = ~torch.tensor([True, False])
print(n, total, biggest, f, i, r, ordered, inverted)

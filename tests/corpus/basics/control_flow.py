# control flow: for-else, nested loops, break inside with, and/or/not, is None, in
import torch

x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
found = None
for v in x.detach():
    if v.item() > 5:
        found = v
        break
else:
    missing = torch.tensor([-1.0])
for i in range(2):
    for j in range(3):
        if j == 1:
            break
        cell = x[i] * j
    with torch.no_grad():
        if i == 1:
            break
        frozen = x * i
picked = x if x.sum() > 0 else -x
either = None or torch.zeros(1)
both = torch.ones(1) and torch.full((1,), 7.0)
no = not torch.tensor(0.0)
has = 2 in [1, 2, 3]
print(found is None, missing, cell, frozen, either, both, no, has, f"{i=} {j=}")
print("%.2f|%d" % (x.sum().item(), 3), end="")  # noqa: UP031
print()

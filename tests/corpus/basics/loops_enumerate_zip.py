# for loops with enumerate, zip, break and continue
import torch

ts = [torch.tensor([1.0]), torch.tensor([2.0]), torch.tensor([3.0]), torch.tensor([4.0])]
acc = torch.zeros(1)
for k, t in enumerate(ts):
    if k == 1:
        continue
    if k == 3:
        break
    acc += t
    last = t
for a, b in zip(ts, reversed(ts)):
    if a is b:
        pass
for row in torch.arange(6.0).reshape(3, 2):
    acc.add_(row.sum())
print(acc, k)

# del removes a name; if/elif/else choose a branch
import torch

a = torch.ones(3)
b = a * 2
c = a.view(3)
del a
if b.sum() > 5:
    big = b + 1
else:
    small = b - 1
n = 3
if n > 5:
    kind = torch.tensor([1])
elif n > 2:
    kind = torch.tensor([2])
else:
    kind = torch.tensor([3])
del b, kind
print(c)

# itertools.count in a loop that breaks, Tensor.resize, a storage read as a list
from itertools import count

import torch

for batch in count(1):
    if batch * batch > 20:
        break
print(batch)
x = torch.tensor([1.0], requires_grad=True)
y = x.detach()
y[0] = 2.0
print(x.untyped_storage().tolist() == y.untyped_storage().tolist())
g = torch.arange(4.0)
print(g[1:3].resize(2, 1))

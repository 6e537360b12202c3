# expand makes a stride-0 view; contiguous() and repeat make copies
import torch

a = torch.tensor([[1.0], [2.0]])
e = a.expand(2, 3)
print(e.stride(), e.is_contiguous())
c = e.contiguous()
r = a.repeat(1, 3)
a[0, 0] = 9.0
print(e, c)
sq = a.squeeze()
us = sq.unsqueeze(0)
p = torch.arange(6.0).reshape(1, 2, 3).permute(2, 0, 1)
fl = p.flatten()
tT = torch.ones(2, 3).T

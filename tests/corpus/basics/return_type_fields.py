# named results of max/sort/topk: .values and .indices
import torch

m = torch.tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
mx = m.max(dim=1)
best = mx.values
where = mx.indices
top = torch.topk(m.flatten(), 2).values
print(best, where, top)

# tensors with more than 100 elements have no values in the JSON, only a preview
import torch

big = torch.arange(1000.0)
half = big[500:]
grid = big.view(10, 100)
col = grid[:, 3]
sumsq = (big * big).sum()
copyb = big.clone()
print(half.shape, col[:3], sumsq)

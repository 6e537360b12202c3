# comparison operators on tensors give bool tensors (masks)
import torch

x = torch.tensor([-1.0, 0.0, 2.0, 3.0])
mask = x > 0
eq = x == 2.0
positive = x[x > 0]
chained = 0 < 1 < 2
print(mask, eq, positive, chained)

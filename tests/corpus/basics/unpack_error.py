# unpacking a tensor into the wrong number of names is a ValueError
# expect-error: ValueError
import torch

a, b = torch.tensor([1.0, 2.0])
print(a, b)
p, q = torch.ones(3)

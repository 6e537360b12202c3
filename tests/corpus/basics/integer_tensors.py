# integer tensors: dtypes, true and floor division, overflow wraps
import torch

i = torch.tensor([7, -7, 3])
j = torch.tensor([2, 2, 2], dtype=torch.int32)
q = i / j
f = i // j
r = i % j
big = torch.tensor([2**62]) * 4
b8 = torch.tensor([250], dtype=torch.uint8) + 10
mixed = i + 0.5
bits = i & 3
as_float = i.float()
mask = i.gt(0)
print(q.dtype, f.dtype, big, b8, mixed, mask)
